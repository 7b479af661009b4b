/* Decoding through a decoder layer artifact (attn_stack_*): the whole
 * sequence in one forward call, then after attn_stack_reset a prompt and
 * one token per call through the KV cache. Decoding only changes how the
 * work is split, so every step's output must be the whole pass's row.
 *
 *   stack-decode LIB.so WEIGHTS.safetensors D_MODEL BATCH LENGTH PROMPT
 *       [BOUND]
 *
 * Prints "decode: N steps ... max |decode - full| / max |full| = E: SAME"
 * (E <= BOUND, default 1e-5) or DIFFERENT (exit 1), and the mean time per
 * step. */
#include "attn-c/Runtime.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static attn_tensor *rows(const float *x, int64_t batch, int64_t length,
                         int64_t width, int64_t first, int64_t n) {
  int64_t shape[3] = {batch, n, width};
  attn_tensor *t = attn_tensor_create(ATTN_F32, 3, shape);
  float *to = (float *)attn_tensor_data(t);
  for (int64_t b = 0; b < batch; ++b)
    memcpy(to + b * n * width, x + (b * length + first) * width,
           sizeof(float) * n * width);
  return t;
}

int main(int argc, char **argv) {
  if (argc != 7 && argc != 8) {
    fprintf(stderr,
            "usage: %s LIB.so WEIGHTS D_MODEL BATCH LENGTH PROMPT [BOUND]\n",
            argv[0]);
    return 2;
  }
  int64_t width = atoll(argv[3]), batch = atoll(argv[4]),
          length = atoll(argv[5]), prompt = atoll(argv[6]);
  attn_artifact *artifact = attn_artifact_load(argv[1]);
  attn_stack *stack = artifact ? attn_stack_load(artifact, argv[2]) : NULL;
  if (!stack) {
    printf("stack: %s\n", attn_last_error());
    return 1;
  }
  int64_t count = batch * length * width;
  float *x = malloc(sizeof(float) * count);
  for (int64_t i = 0; i < count; ++i)
    x[i] = (float)(sin(0.37 * (double)i) + 0.1 * cos(3.1 * (double)i));

  attn_tensor *all = rows(x, batch, length, width, 0, length);
  int64_t shape[3] = {batch, length, width};
  attn_tensor *full = attn_tensor_create(ATTN_F32, 3, shape);
  if (attn_stack_forward(stack, all, NULL, full) != 0) {
    printf("forward: %s\n", attn_last_error());
    return 1;
  }
  const float *y = (const float *)attn_tensor_data(full);

  attn_stack_reset(stack);
  double worst = 0, largest = 0, seconds = 0;
  for (int64_t t = 0; t < length; t = t ? t + 1 : prompt) {
    int64_t n = t ? 1 : prompt;
    attn_tensor *in = rows(x, batch, length, width, t, n);
    int64_t outShape[3] = {batch, n, width};
    attn_tensor *out = attn_tensor_create(ATTN_F32, 3, outShape);
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    if (attn_stack_forward(stack, in, NULL, out) != 0) {
      printf("step %lld: %s\n", (long long)t, attn_last_error());
      return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    if (t)
      seconds += (double)(end.tv_sec - start.tv_sec) +
                 1e-9 * (double)(end.tv_nsec - start.tv_nsec);
    const float *o = (const float *)attn_tensor_data(out);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < n * width; ++i) {
        double want = y[(b * length + t) * width + i];
        double diff = fabs((double)o[b * n * width + i] - want);
        worst = isnan(diff) ? INFINITY : diff > worst ? diff : worst;
        largest = fabs(want) > largest ? fabs(want) : largest;
      }
    attn_tensor_release(in);
    attn_tensor_release(out);
  }
  /* The same f32 kernels over shorter key ranges, sums in another order:
   * a few f32 ulps of the largest output (1e-7 relative seen); a key read
   * from the wrong row or head is off by O(1). bf16 attention rounds P in
   * the whole pass's pair products, not in a step's: the caller then
   * passes bf16's 2^-8. */
  double bound = argc == 8 ? atof(argv[7]) : 1e-5;
  double error = worst / largest;
  int same = error <= bound;
  printf("decode: %lld steps after a %lld-token prompt, max |decode - full| "
         "/ max |full| = %.2e: %s\n",
         (long long)(length - prompt), (long long)prompt, error,
         same ? "SAME" : "DIFFERENT");
  printf("time: %.3f ms per step\n", 1e3 * seconds / (double)(length - prompt));
  /* The sequence in progress has `batch` rows in its KV cache: another
   * batch is refused until attn_stack_reset (it read past the cache's rows
   * before), and runs after it. */
  int64_t wideShape[3] = {batch + 1, 1, width};
  attn_tensor *other = attn_tensor_create(ATTN_F32, 3, wideShape);
  attn_tensor *otherOut = attn_tensor_create(ATTN_F32, 3, wideShape);
  if (attn_stack_forward(stack, other, NULL, otherOut) != 0)
    printf("batch change: %s\n", attn_last_error());
  attn_stack_reset(stack);
  if (attn_stack_forward(stack, other, NULL, otherOut) == 0)
    printf("after reset: batch %lld runs\n", (long long)(batch + 1));
  /* Fewer rows than the cache holds (it read rows of another sequence's
   * cache) and far more (it read past the cache) are refused too. */
  for (int64_t changed = 1; changed <= 5000; changed += 4999) {
    int64_t changedShape[3] = {changed, 1, width};
    attn_tensor *in = attn_tensor_create(ATTN_F32, 3, changedShape);
    attn_tensor *out = attn_tensor_create(ATTN_F32, 3, changedShape);
    if (attn_stack_forward(stack, in, NULL, out) != 0)
      printf("batch %lld: %s\n", (long long)changed, attn_last_error());
    attn_tensor_release(in);
    attn_tensor_release(out);
  }
  attn_tensor_release(other);
  attn_tensor_release(otherOut);
  attn_tensor_release(all);
  attn_tensor_release(full);
  attn_stack_release(stack);
  attn_artifact_release(artifact);
  free(x);
  return same ? 0 : 1;
}
