/* The C API's GPU buffers (attn-c/Gpu.h) on an insertion kernel, which
 * updates its destination in place (append_rows of insert-kernels.mlir:
 * rows [2,2,3,8] into a cache [2,2,16,8] at a row read from an i32
 * buffer). The cache is written once and two calls append to it on the
 * device, the second past its end (the last row dropped); the cache read
 * back must equal the same appends done here in plain C, every other row
 * unchanged. A result buffer other than the cache's is refused.
 *
 *   gpu-capi-insert vulkan|cuda KERNELS */
#include "attn-c/Gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, H = 2, N = 3, C = 16, D = 8 };
#define ROWS (B * H * N * D)
#define CACHE (B * H * C * D)

/* cache[b, h, at + n, :] = rows[b, h, n, :] where at + n falls inside. */
static void append(float *cache, const float *rows, int at) {
  for (int bh = 0; bh < B * H; ++bh)
    for (int n = 0; n < N; ++n)
      if (at + n >= 0 && at + n < C)
        memcpy(cache + (bh * C + at + n) * D, rows + (bh * N + n) * D,
               D * sizeof(float));
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: gpu-capi-insert vulkan|cuda KERNELS\n");
    return 2;
  }
  attn_gpu_device *device = attn_gpu_device_open(argv[1]);
  if (!device) {
    printf("no device: %s\n", attn_last_error());
    return 1;
  }
  attn_gpu_program *program = attn_gpu_program_load(device, argv[2], NULL);
  if (!program) {
    printf("load: %s\n", attn_last_error());
    return 1;
  }
  printf("operands: %lld (the result: %lld bytes)\n",
         (long long)attn_gpu_operand_count(program, "append_rows"),
         (long long)attn_gpu_operand_bytes(program, "append_rows", 3));
  static float rows[ROWS], cache[CACHE], want[CACHE], got[CACHE];
  srand(3);
  for (int i = 0; i < ROWS; ++i)
    rows[i] = (float)rand() / RAND_MAX;
  for (int i = 0; i < CACHE; ++i)
    want[i] = cache[i] = -(float)rand() / RAND_MAX;
  attn_gpu_buffer *brows = attn_gpu_buffer_create(device, sizeof rows);
  attn_gpu_buffer *bat = attn_gpu_buffer_create(device, sizeof(int));
  attn_gpu_buffer *bcache = attn_gpu_buffer_create(device, sizeof cache);
  attn_gpu_buffer *other = attn_gpu_buffer_create(device, sizeof cache);
  int ok = brows && bat && bcache && other &&
           attn_gpu_buffer_write(brows, rows, sizeof rows) == 0 &&
           attn_gpu_buffer_write(bcache, cache, sizeof cache) == 0;
  attn_gpu_buffer *in[3] = {brows, bat, bcache};
  for (int at = 4; ok && at <= 14; at += 10) {
    ok = attn_gpu_buffer_write(bat, &at, sizeof at) == 0 &&
         attn_gpu_call(program, "append_rows", in, 3, &bcache, 1) == 0;
    append(want, rows, at);
  }
  ok = ok && attn_gpu_buffer_read(bcache, got, sizeof got) == 0;
  if (!ok) {
    printf("FAILED: %s\n", attn_last_error());
    return 1;
  }
  int differing = 0;
  for (int i = 0; i < CACHE; ++i)
    differing += got[i] != want[i];
  printf("appended in place: %d of %d elements differ\n", differing, CACHE);
  if (attn_gpu_call(program, "append_rows", in, 3, &other, 1) == 0) {
    printf("FAILED: another result buffer was accepted\n");
    return 1;
  }
  printf("refused another result buffer: %s\n", attn_last_error());
  attn_gpu_buffer_release(brows);
  attn_gpu_buffer_release(bat);
  attn_gpu_buffer_release(bcache);
  attn_gpu_buffer_release(other);
  attn_gpu_program_release(program);
  attn_gpu_device_release(device);
  return differing != 0;
}
