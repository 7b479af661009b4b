/* Loads a layer artifact's stack with a weights file through the C API
 * and, when asked, runs one forward call; prints what the API answered, so
 * that tests can pin the refusals of hostile artifacts, weights and sizes.
 *
 *   stack-load LIB.so WEIGHTS.safetensors [D_MODEL BATCH LENGTH]
 *
 * Prints "load: <error>" or "load: ok", then "forward: <error>" or
 * "forward: ok, N of M outputs finite". Exits 0 when every step it was
 * asked for succeeded, 1 when one was refused (the API's status), never by
 * a signal. */
#include "attn-c/Runtime.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 3 && argc != 6) {
    fprintf(stderr, "usage: %s LIB.so WEIGHTS [D_MODEL BATCH LENGTH]\n",
            argv[0]);
    return 2;
  }
  attn_artifact *artifact = attn_artifact_load(argv[1]);
  attn_stack *stack = artifact ? attn_stack_load(artifact, argv[2]) : NULL;
  attn_artifact_release(artifact); /* the stack keeps it */
  if (!stack) {
    printf("load: %s\n", attn_last_error());
    return 1;
  }
  printf("load: ok\n");
  if (argc == 3) {
    attn_stack_release(stack);
    return 0;
  }
  int64_t shape[3] = {atoll(argv[4]), atoll(argv[5]), atoll(argv[3])};
  attn_tensor *x = attn_tensor_create(ATTN_F32, 3, shape);
  attn_tensor *out = attn_tensor_create(ATTN_F32, 3, shape);
  if (!x || !out) {
    printf("tensors: %s\n", attn_last_error());
    return 1;
  }
  int64_t count = shape[0] * shape[1] * shape[2];
  float *values = (float *)attn_tensor_data(x);
  for (int64_t i = 0; i < count && i < (1 << 20); ++i)
    values[i] = (float)sin(0.37 * (double)i);
  int status = attn_stack_forward(stack, x, NULL, out);
  if (status != 0) {
    printf("forward: %s\n", attn_last_error());
  } else {
    const float *y = (const float *)attn_tensor_data(out);
    int64_t finite = 0;
    for (int64_t i = 0; i < count; ++i)
      finite += isfinite(y[i]) ? 1 : 0;
    printf("forward: ok, %lld of %lld outputs finite\n", (long long)finite,
           (long long)count);
  }
  attn_tensor_release(x);
  attn_tensor_release(out);
  attn_stack_release(stack);
  return status != 0;
}
