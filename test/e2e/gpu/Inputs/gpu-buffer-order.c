/* Writes and reads of device buffers keep their order (attn-c/Gpu.h), also
 * where a staged Vulkan device defers its writes to the next submission:
 * a new buffer reads as zeros, a later write over part of an earlier one
 * wins there, writes waiting together keep their own data, a buffer released
 * with its write still pending leaves the others intact, and a copy past the
 * kept staging buffer (64 MiB) goes through one of its own in the same batch as
 * small ones.
 *
 *   gpu-buffer-order vulkan|cuda
 *
 * Prints one line per check; exits non-zero at the first wrong element. */
#include "attn-c/Gpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, int64_t at, float got, float want) {
  printf("FAIL %s: element %lld is %g, not %g\n", what, (long long)at, got,
         want);
  return 1;
}

/* Reads `n` floats of `buffer` and compares them with want(i). */
static int expect(attn_gpu_buffer *buffer, int64_t n, const char *what,
                  float (*want)(int64_t)) {
  float *got = malloc(n * sizeof(float));
  if (attn_gpu_buffer_read(buffer, got, n * sizeof(float))) {
    printf("FAIL %s: %s\n", what, attn_last_error());
    return 1;
  }
  for (int64_t i = 0; i < n; ++i)
    if (got[i] != want(i)) {
      int r = fail(what, i, got[i], want(i));
      free(got);
      return r;
    }
  free(got);
  printf("%s: ok\n", what);
  return 0;
}

static float zero(int64_t i) { return 0.0f; }
static float first(int64_t i) { return (float)(i % 1000) + 0.5f; }
static float overwritten(int64_t i) { return i < 100 ? -1.0f : first(i); }
static float large(int64_t i) { return (float)(i % 4093) * 0.25f; }

enum { N = 4096, BIG = 20 << 20 /* floats: 80 MiB */ };

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  attn_gpu_device *device = attn_gpu_device_open(argv[1]);
  if (!device) {
    printf("FAIL open: %s\n", attn_last_error());
    return 1;
  }
  printf("device: %s\n", attn_gpu_device_describe(device));
  float *host = malloc((size_t)BIG * sizeof(float));
  attn_gpu_buffer *a = attn_gpu_buffer_create(device, N * sizeof(float));
  if (expect(a, N, "new buffer reads zeros", zero))
    return 1;

  for (int64_t i = 0; i < N; ++i)
    host[i] = first(i);
  attn_gpu_buffer_write(a, host, N * sizeof(float));
  for (int64_t i = 0; i < 100; ++i)
    host[i] = -1.0f;
  attn_gpu_buffer_write(a, host, 100 * sizeof(float));
  if (expect(a, N, "later write wins", overwritten))
    return 1;

  attn_gpu_buffer *b = attn_gpu_buffer_create(device, N * sizeof(float));
  attn_gpu_buffer_write(b, host, N * sizeof(float));
  attn_gpu_buffer_release(b);
  if (expect(a, N, "released with a pending write", overwritten))
    return 1;

  /* Two writes waiting together: each keeps its own staged data. */
  attn_gpu_buffer *d = attn_gpu_buffer_create(device, N * sizeof(float));
  for (int64_t i = 0; i < N; ++i)
    host[i] = large(i);
  attn_gpu_buffer_write(d, host, N * sizeof(float));
  for (int64_t i = 0; i < N; ++i)
    host[i] = first(i);
  attn_gpu_buffer_write(a, host, N * sizeof(float));
  if (expect(d, N, "two pending writes, the first", large) ||
      expect(a, N, "two pending writes, the second", first))
    return 1;
  attn_gpu_buffer_release(d);

  attn_gpu_buffer *c = attn_gpu_buffer_create(device, BIG * sizeof(float));
  for (int64_t i = 0; i < BIG; ++i)
    host[i] = large(i);
  for (int64_t i = 0; i < N; ++i)
    host[i] = first(i);
  attn_gpu_buffer_write(a, host, N * sizeof(float));
  for (int64_t i = 0; i < N; ++i)
    host[i] = large(i);
  if (attn_gpu_buffer_write(c, host, BIG * sizeof(float))) {
    printf("FAIL write: %s\n", attn_last_error());
    return 1;
  }
  if (expect(c, BIG, "past the kept staging buffer", large) ||
      expect(a, N, "batched with it", first))
    return 1;
  attn_gpu_buffer_release(a);
  attn_gpu_buffer_release(c);
  attn_gpu_device_release(device);
  free(host);
  return 0;
}
