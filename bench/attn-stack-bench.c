/* attn-stack-bench: a layer stack ahead of time, through the C API alone.
 *
 *   attn-stack-bench LIBSTACK.so WEIGHTS.safetensors [LENGTH=512]
 *       [REPEAT=7] [BATCH=1] [D_MODEL=768]
 *
 * Loads what `attn-compile LAYER.yaml --emit=so` built (attention kernels,
 * the products on attn's GEMM, the manifest), reads the weights with
 * attn_stack_load, and times attn_stack_forward on a [BATCH, LENGTH,
 * d_model] input of fixed pseudo-random values: one warm-up call, then
 * REPEAT timed ones; prints every time and the median in ms. D_MODEL must
 * be the layer's (attn_stack_forward refuses another). Compare with
 * `attn-run LAYER.yaml --weights W --length N --repeat R` (the JIT's stack
 * on the same executor). Encoders only (a decoder would grow its KV cache
 * with every call). */
#include "attn-c/Runtime.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int compareDoubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s LIBSTACK.so WEIGHTS.safetensors [LENGTH] "
            "[REPEAT] [BATCH] [D_MODEL]\n",
            argv[0]);
    return 2;
  }
  long long length = argc > 3 ? atoll(argv[3]) : 512;
  int repeat = argc > 4 ? atoi(argv[4]) : 7;
  long long batch = argc > 5 ? atoll(argv[5]) : 1;
  long long width = argc > 6 ? atoll(argv[6]) : 768;
  if (length < 1 || repeat < 1 || batch < 1 || width < 1 || repeat > 1000) {
    fprintf(stderr, "attn-stack-bench: LENGTH, REPEAT, BATCH and D_MODEL "
                    "must be positive (REPEAT at most 1000)\n");
    return 2;
  }
  attn_artifact *artifact = attn_artifact_load(argv[1]);
  attn_stack *stack = artifact ? attn_stack_load(artifact, argv[2]) : NULL;
  if (!stack) {
    fprintf(stderr, "attn-stack-bench: %s\n", attn_last_error());
    return 1;
  }
  int64_t shape[3] = {batch, length, width};
  attn_tensor *x = attn_tensor_create(ATTN_F32, 3, shape);
  attn_tensor *out = attn_tensor_create(ATTN_F32, 3, shape);
  if (!x || !out) {
    fprintf(stderr, "attn-stack-bench: %s\n", attn_last_error());
    return 1;
  }
  float *values = attn_tensor_data(x);
  unsigned long long state = 12345;
  for (long long i = 0; i < batch * length * width; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    values[i] = (float)((state >> 40) / 16777216.0) - 0.5f;
  }
  double *times = malloc(sizeof(double) * repeat);
  for (int r = -1; r < repeat; ++r) {
    double start = now();
    if (attn_stack_forward(stack, x, NULL, out) != 0) {
      fprintf(stderr, "attn-stack-bench: %s\n", attn_last_error());
      return 1;
    }
    if (r >= 0)
      times[r] = 1e3 * (now() - start);
  }
  printf("attn-stack-bench: [%lld, %lld, %lld], times (ms):", batch, length,
         width);
  for (int r = 0; r < repeat; ++r)
    printf(" %.2f", times[r]);
  qsort(times, repeat, sizeof(double), compareDoubles);
  printf("\nmedian %.2f ms\n", times[repeat / 2]);
  free(times);
  attn_tensor_release(x);
  attn_tensor_release(out);
  attn_stack_release(stack);
  attn_artifact_release(artifact);
  return 0;
}
