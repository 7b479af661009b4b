/* The C API's GPU buffers (attn-c/Gpu.h) on the kernel gqa_split of
 * capi-kernels.mlir: Q [1,4,33,32], K and V [1,2,700,32], causal aligned
 * bottom-right, GQA 2:1. Q, K and V are written to the device once; the
 * first call's output O1 stays there as the second call's query, and only
 * O1 and O2 are read back, to be compared with a plain f64 reference.
 * Then every error the API promises a message for.
 *
 *   gpu-capi vulkan KERNELS.spv [KERNELS.ptx]
 *   gpu-capi cuda KERNELS.ptx [KERNELS.spv]
 *
 * The optional second artifact is for the other kind of device and must be
 * refused. Needs only libattn_c and the device's driver (no LLVM), so the
 * same check runs on a machine lent with a GPU (bench/gpu_lent_check.sh). */
#include "attn-c/Gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { H = 4, HK = 2, L = 33, S = 700, D = 32 };
#define QN (H * L * D)
#define KN (HK * S * D)

/* out = softmax(q k^T / sqrt(D), causal bottom-right) v in double. */
static void reference(const double *q, const float *k, const float *v,
                      double *out) {
  double scores[S];
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < L; ++i) {
      const double *qi = q + (h * L + i) * D;
      int kh = h / (H / HK), last = i + (S - L); /* bottom-right diagonal */
      double max = -INFINITY, sum = 0;
      for (int j = 0; j <= last; ++j) {
        const float *kj = k + (kh * S + j) * D;
        double s = 0;
        for (int d = 0; d < D; ++d)
          s += qi[d] * kj[d];
        scores[j] = s / sqrt((double)D);
        if (scores[j] > max)
          max = scores[j];
      }
      double *oi = out + (h * L + i) * D;
      memset(oi, 0, D * sizeof(double));
      for (int j = 0; j <= last; ++j) {
        double p = exp(scores[j] - max);
        sum += p;
        for (int d = 0; d < D; ++d)
          oi[d] += p * v[(kh * S + j) * D + d];
      }
      for (int d = 0; d < D; ++d)
        oi[d] /= sum;
    }
}

static int failures = 0;

static void expect(int ok, const char *what) {
  if (!ok) {
    printf("FAILED: %s: %s\n", what, attn_last_error());
    ++failures;
  }
}

/* Prints the error of a call that had to fail. */
static void refused(int failed, const char *what) {
  if (!failed) {
    printf("FAILED: %s was accepted\n", what);
    ++failures;
    return;
  }
  printf("refused %s: %s\n", what, attn_last_error());
}

static double maxError(const float *got, const double *want, int n) {
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    double e = fabs(got[i] - want[i]);
    if (!(e <= worst)) /* NaN counts as worst */
      worst = isnan(e) ? INFINITY : e;
  }
  return worst;
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: gpu-capi vulkan|cuda KERNELS [OTHER-KIND]\n");
    return 2;
  }
  const char *kind = argv[1];
  int vulkan = strcmp(kind, "vulkan") == 0;
  attn_gpu_device *device = attn_gpu_device_open(kind);
  if (!device) {
    printf("no device: %s\n", attn_last_error());
    return 1;
  }
  printf("device: %s\n", attn_gpu_device_describe(device));
  attn_gpu_program *program = attn_gpu_program_load(device, argv[2], NULL);
  if (!program) {
    printf("load: %s\n", attn_last_error());
    return 1;
  }
  printf("operands: %lld (%lld, %lld, %lld -> %lld bytes)\n",
         (long long)attn_gpu_operand_count(program, "gqa_split"),
         (long long)attn_gpu_operand_bytes(program, "gqa_split", 0),
         (long long)attn_gpu_operand_bytes(program, "gqa_split", 1),
         (long long)attn_gpu_operand_bytes(program, "gqa_split", 2),
         (long long)attn_gpu_operand_bytes(program, "gqa_split", 3));

  static float q[QN], k[KN], v[KN], o1[QN], o2[QN];
  static double q64[QN], ref1[QN], ref2[QN];
  srand(7);
  for (int i = 0; i < QN; ++i)
    q64[i] = q[i] = (float)((double)rand() / RAND_MAX * 2 - 1);
  for (int i = 0; i < KN; ++i) {
    k[i] = (float)((double)rand() / RAND_MAX * 2 - 1);
    v[i] = (float)((double)rand() / RAND_MAX * 2 - 1);
  }
  attn_gpu_buffer *bq = attn_gpu_buffer_create(device, sizeof q);
  attn_gpu_buffer *bk = attn_gpu_buffer_create(device, sizeof k);
  attn_gpu_buffer *bv = attn_gpu_buffer_create(device, sizeof v);
  attn_gpu_buffer *bo1 = attn_gpu_buffer_create(device, sizeof o1);
  attn_gpu_buffer *bo2 = attn_gpu_buffer_create(device, sizeof o2);
  expect(bq && bk && bv && bo1 && bo2, "attn_gpu_buffer_create");
  expect(attn_gpu_buffer_write(bq, q, sizeof q) == 0 &&
             attn_gpu_buffer_write(bk, k, sizeof k) == 0 &&
             attn_gpu_buffer_write(bv, v, sizeof v) == 0,
         "attn_gpu_buffer_write");

  /* O1 = attention(Q, K, V); O2 = attention(O1, K, V), O1 on the device. */
  attn_gpu_buffer *first[3] = {bq, bk, bv}, *second[3] = {bo1, bk, bv};
  expect(attn_gpu_call(program, "gqa_split", first, 3, &bo1, 1) == 0,
         "first call");
  expect(attn_gpu_call(program, "gqa_split", second, 3, &bo2, 1) == 0,
         "second call");
  printf("last call: %s\n",
         attn_gpu_last_call_milliseconds(program) >= 0 ? "timed" : "untimed");
  expect(attn_gpu_buffer_read(bo1, o1, sizeof o1) == 0 &&
             attn_gpu_buffer_read(bo2, o2, sizeof o2) == 0,
         "attn_gpu_buffer_read");
  reference(q64, k, v, ref1);
  reference(ref1, k, v, ref2);
  /* f32 kernels against f64: 1e-5 is the bound every f32 GPU test uses
   * (sums of 700 products of values in [-1, 1] in f32, about 1e-6 here).
   * The second call starts from O1's f32 rounding, which attention does
   * not amplify (its outputs are convex combinations of V's rows). */
  double e1 = maxError(o1, ref1, QN), e2 = maxError(o2, ref2, QN);
  printf("chained on the device: max error %s\n",
         e1 < 1e-5 && e2 < 1e-5 ? "below 1e-5" : "TOO LARGE");
  if (!(e1 < 1e-5 && e2 < 1e-5))
    printf("errors %g %g\n", e1, e2), ++failures;

  /* A new query, written into the same buffer, reaches the next call. */
  for (int i = 0; i < QN; ++i)
    q64[i] = q[i] = -q[i];
  expect(attn_gpu_buffer_write(bq, q, sizeof q) == 0, "rewrite");
  expect(attn_gpu_call(program, "gqa_split", first, 3, &bo1, 1) == 0,
         "third call");
  expect(attn_gpu_buffer_read(bo1, o1, sizeof o1) == 0, "read");
  reference(q64, k, v, ref1);
  printf("rewritten query: max error %s\n",
         maxError(o1, ref1, QN) < 1e-5 ? "below 1e-5" : "TOO LARGE");

  /* Errors. */
  attn_gpu_buffer *small = attn_gpu_buffer_create(device, sizeof q - 4);
  attn_gpu_buffer *tooSmall[3] = {small, bk, bv};
  refused(attn_gpu_call(program, "gqa_split", tooSmall, 3, &bo1, 1) != 0,
          "a small buffer");
  refused(attn_gpu_call(program, "gqa_split", first, 2, &bo1, 1) != 0,
          "two inputs");
  refused(attn_gpu_call(program, "nope", first, 3, &bo1, 1) != 0,
          "an unknown function");
  attn_gpu_buffer *withNull[3] = {bq, NULL, bv};
  refused(attn_gpu_call(program, "gqa_split", withNull, 3, &bo1, 1) != 0,
          "a NULL buffer");
  attn_gpu_device *other = attn_gpu_device_open(kind);
  attn_gpu_buffer *foreign = attn_gpu_buffer_create(other, sizeof q);
  attn_gpu_buffer *mixed[3] = {foreign, bk, bv};
  refused(attn_gpu_call(program, "gqa_split", mixed, 3, &bo1, 1) != 0,
          "another device's buffer");
  refused(attn_gpu_buffer_write(small, q, sizeof q) != 0, "an overlong write");
  refused(attn_gpu_buffer_read(small, o1, sizeof q) != 0, "an overlong read");
  refused(attn_gpu_buffer_create(device, -1) == NULL, "bytes < 0");
  if (vulkan)
    refused(attn_gpu_buffer_wrap(device, 4096, 64) == NULL,
            "a wrapped pointer on Vulkan");
  refused(attn_gpu_device_open("tpu") == NULL, "kind tpu");
  refused(attn_gpu_program_load(device, "/nonexistent.spv", NULL) == NULL,
          "a missing file");
  if (argc == 4)
    refused(attn_gpu_program_load(device, argv[3], NULL) == NULL,
            "code for the other kind of device");
  refused(attn_gpu_operand_bytes(program, "gqa_split", 4) < 0, "operand 4");
  refused(attn_gpu_call(NULL, "gqa_split", first, 3, &bo1, 1) != 0,
          "a NULL program");

  /* Handles go in any order: the device first, buffers and the program
   * after it (they keep it). */
  attn_gpu_device_release(device);
  attn_gpu_device_release(other);
  attn_gpu_buffer_release(foreign);
  attn_gpu_buffer_release(small);
  attn_gpu_program_release(program);
  attn_gpu_buffer_release(bq);
  attn_gpu_buffer_release(bk);
  attn_gpu_buffer_release(bv);
  attn_gpu_buffer_release(bo1);
  attn_gpu_buffer_release(bo2);
  printf("%s\n", failures ? "FAILURES" : "all passed");
  return failures != 0;
}
