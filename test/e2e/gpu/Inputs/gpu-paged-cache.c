/* A KV cache that stays on the device (vulkan-paged.test): the pools, the
 * page table and the length live in device buffers; each decoding step
 * appends one key and value row per KV head where the table puts it
 * (attn_gpu_buffer_write_at), writes the new query and the length, and
 * calls the paged kernel of Inputs/paged-kernels.mlir (@decode: 8 query
 * heads over 2 KV heads, D = 64, pages of 16 rows, a table of 20 pages of
 * a 24-page pool). Nothing else is copied: the rows of earlier steps are
 * never written again. Each step's output is checked against an f64
 * reference over every row so far, kept on the host.
 *
 *   gpu-paged-cache KIND CODE STEPS
 *
 * Prints the largest scaled error (max |out - ref| / max |ref| of each
 * step) and PASS when it is within 1e-5 (f32 sums over at most STEPS
 * keys; paged-kv.test's bar). */
#include "attn-c/Gpu.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { HEADS = 8, KV_HEADS = 2, DIM = 64, PAGE_ROWS = 16, POOL_PAGES = 24 };
enum { TABLE_PAGES = 20, CAPACITY = TABLE_PAGES * PAGE_ROWS };

static uint64_t state = 0x9E3779B97F4A7C15ull;
static float next_value(void) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(state >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

static int fail(const char *what) {
  fprintf(stderr, "gpu-paged-cache: %s: %s\n", what, attn_last_error());
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: gpu-paged-cache KIND CODE STEPS\n");
    return 2;
  }
  int steps = atoi(argv[3]);
  if (steps < 1 || steps > CAPACITY)
    return 2;
  attn_gpu_device *device = attn_gpu_device_open(argv[1]);
  if (!device)
    return fail("opening the device");
  attn_gpu_program *program = attn_gpu_program_load(device, argv[2], NULL);
  if (!program)
    return fail("loading the kernels");

  /* Pages of the table, out of order; pool pages 10, 14, 18, 23 unused. */
  const int32_t table[TABLE_PAGES] = {3,  0,  5, 1,  4,  22, 7, 9,  2,  11,
                                      13, 12, 6, 15, 17, 16, 8, 19, 21, 20};
  const int64_t pool_bytes =
      (int64_t)POOL_PAGES * KV_HEADS * PAGE_ROWS * DIM * sizeof(float);
  const int64_t query_bytes = (int64_t)HEADS * DIM * sizeof(float);
  attn_gpu_buffer *q = attn_gpu_buffer_create(device, query_bytes);
  attn_gpu_buffer *k_pool = attn_gpu_buffer_create(device, pool_bytes);
  attn_gpu_buffer *v_pool = attn_gpu_buffer_create(device, pool_bytes);
  attn_gpu_buffer *pages = attn_gpu_buffer_create(device, sizeof table);
  attn_gpu_buffer *length = attn_gpu_buffer_create(device, sizeof(int32_t));
  attn_gpu_buffer *out = attn_gpu_buffer_create(device, query_bytes);
  if (!q || !k_pool || !v_pool || !pages || !length || !out)
    return fail("allocating");
  if (attn_gpu_buffer_write(pages, table, sizeof table))
    return fail("writing the table");

  /* The host's copy, for the reference only: [position][KV head][DIM]. */
  float *keys = malloc(sizeof(float) * CAPACITY * KV_HEADS * DIM);
  float *values = malloc(sizeof(float) * CAPACITY * KV_HEADS * DIM);
  float query[HEADS * DIM], result[HEADS * DIM];
  double worst = 0.0;
  for (int t = 0; t < steps; ++t) {
    for (int h = 0; h < KV_HEADS; ++h) {
      float *k = keys + ((int64_t)t * KV_HEADS + h) * DIM;
      float *v = values + ((int64_t)t * KV_HEADS + h) * DIM;
      for (int c = 0; c < DIM; ++c) {
        k[c] = next_value();
        v[c] = next_value();
      }
      /* Row t % 16 of head h on page table[t / 16]. */
      int64_t row = ((int64_t)table[t / PAGE_ROWS] * KV_HEADS + h) * PAGE_ROWS +
                    t % PAGE_ROWS;
      int64_t at = row * DIM * (int64_t)sizeof(float);
      if (attn_gpu_buffer_write_at(k_pool, at, k, DIM * sizeof(float)) ||
          attn_gpu_buffer_write_at(v_pool, at, v, DIM * sizeof(float)))
        return fail("appending a row");
    }
    for (int e = 0; e < HEADS * DIM; ++e)
      query[e] = next_value();
    int32_t n = t + 1;
    if (attn_gpu_buffer_write(q, query, query_bytes) ||
        attn_gpu_buffer_write(length, &n, sizeof n))
      return fail("writing the query and the length");
    attn_gpu_buffer *inputs[] = {q, k_pool, v_pool, pages, length};
    if (attn_gpu_call(program, "decode", inputs, 5, &out, 1) ||
        attn_gpu_buffer_read(out, result, query_bytes))
      return fail("calling decode");

    /* The f64 reference: query head h over KV head h / 4, keys 0..t. */
    double error = 0.0, largest = 0.0;
    for (int h = 0; h < HEADS; ++h) {
      int g = h / (HEADS / KV_HEADS);
      double scores[CAPACITY], top = -INFINITY, total = 0.0;
      for (int j = 0; j <= t; ++j) {
        double s = 0.0;
        for (int c = 0; c < DIM; ++c)
          s += (double)query[h * DIM + c] *
               keys[((int64_t)j * KV_HEADS + g) * DIM + c];
        scores[j] = s / sqrt((double)DIM);
        top = scores[j] > top ? scores[j] : top;
      }
      for (int j = 0; j <= t; ++j)
        total += scores[j] = exp(scores[j] - top);
      for (int c = 0; c < DIM; ++c) {
        double ref = 0.0;
        for (int j = 0; j <= t; ++j)
          ref += scores[j] * values[((int64_t)j * KV_HEADS + g) * DIM + c];
        ref /= total;
        double got = result[h * DIM + c];
        double diff = isfinite(got) ? fabs(got - ref) : INFINITY;
        error = diff > error ? diff : error;
        largest = fabs(ref) > largest ? fabs(ref) : largest;
      }
    }
    error /= largest;
    worst = error > worst ? error : worst;
  }
  printf("device-resident cache: %d steps, max scaled error %.2e: %s\n", steps,
         worst, worst <= 1e-5 ? "PASS" : "FAIL");
  /* A write that would end past the buffer is refused, and changes
   * nothing. */
  int32_t n = 0;
  if (attn_gpu_buffer_write_at(length, 2, &n, sizeof n) != -1)
    return fail("a write past the end was accepted");
  printf("refused: %s\n", attn_last_error());
  if (attn_gpu_buffer_write_at(length, -1, &n, 1) != -1)
    return fail("a negative offset was accepted");
  printf("refused: %s\n", attn_last_error());
  free(keys);
  free(values);
  attn_gpu_buffer_release(q);
  attn_gpu_buffer_release(k_pool);
  attn_gpu_buffer_release(v_pool);
  attn_gpu_buffer_release(pages);
  attn_gpu_buffer_release(length);
  attn_gpu_buffer_release(out);
  attn_gpu_program_release(program);
  attn_gpu_device_release(device);
  return worst <= 1e-5 ? 0 : 1;
}
