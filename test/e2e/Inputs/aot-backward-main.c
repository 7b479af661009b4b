/* Training from C: calls <name>_forward and <name>_backward that
 * attn-compile exported from aot-backward-spec.yaml (backward: true), and
 * checks O and dQ, dK, dV against a plain double-precision attention and
 * its gradients written here from the definitions (docs/Dialect.md,
 * "Backward"), independent of attn's runtime. Two ways in:
 *   default          the generated header (-include aot_backward.h);
 *   -DATTN_C_API     the runtime's C API (attn_call with three outputs) on
 *                    the library named by argv[1]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef ATTN_C_API
#include "attn-c/Runtime.h"
#endif

/* The spec: GQA 2:1, causal aligned bottom-right (Lk > Lq), odd sizes. */
enum { B = 2, HQ = 4, HKV = 2, LQ = 37, LK = 53, D = 40 };

static float q[B][HQ][LQ][D], k[B][HKV][LK][D], v[B][HKV][LK][D];
static float dO[B][HQ][LQ][D];
static float o[B][HQ][LQ][D], lse[B][HQ][LQ];
static float dq[B][HQ][LQ][D], dk[B][HKV][LK][D], dv[B][HKV][LK][D];
static double refO[B][HQ][LQ][D];
static double refDq[B][HQ][LQ][D], refDk[B][HKV][LK][D], refDv[B][HKV][LK][D];

static unsigned long long state = 42;
static float uniform(void) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((state >> 40) / (double)(1 << 24)) * 2.0f - 1.0f;
}

/* O and the gradients in double precision, row by row: P over the kept
 * keys (j <= i + LK - LQ), dV += P^T dO, dS = P (dP - rowsum(P dP)) scale,
 * dQ = dS K, dK = dS^T Q, summed over the query heads of a key head. */
static void reference(void) {
  const double scale = 1.0 / sqrt((double)D);
  static double p[LK], dp[LK];
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < HQ; ++h) {
      int hk = h / (HQ / HKV);
      for (int i = 0; i < LQ; ++i) {
        int last = i + LK - LQ; /* bottom-right: keys 0 .. last */
        double max = -INFINITY, sum = 0, rowDot = 0;
        for (int j = 0; j <= last; ++j) {
          double s = 0;
          for (int c = 0; c < D; ++c)
            s += (double)q[b][h][i][c] * k[b][hk][j][c];
          p[j] = s * scale;
          max = p[j] > max ? p[j] : max;
        }
        for (int j = 0; j <= last; ++j)
          sum += p[j] = exp(p[j] - max);
        for (int j = 0; j <= last; ++j) {
          p[j] /= sum;
          double d = 0;
          for (int c = 0; c < D; ++c) {
            refO[b][h][i][c] += p[j] * v[b][hk][j][c];
            d += (double)dO[b][h][i][c] * v[b][hk][j][c];
          }
          dp[j] = d;
          rowDot += p[j] * d;
        }
        for (int j = 0; j <= last; ++j) {
          double ds = p[j] * (dp[j] - rowDot) * scale;
          for (int c = 0; c < D; ++c) {
            refDv[b][hk][j][c] += p[j] * dO[b][h][i][c];
            refDq[b][h][i][c] += ds * k[b][hk][j][c];
            refDk[b][hk][j][c] += ds * q[b][h][i][c];
          }
        }
      }
    }
}

/* max |got - want| / max |want| (inf when a value is not finite). */
static double scaledError(const float *got, const double *want, int n) {
  double worst = 0, scale = 0;
  for (int e = 0; e < n; ++e) {
    double diff = fabs((double)got[e] - want[e]);
    if (!(diff <= worst))
      worst = isnan(diff) ? INFINITY : diff;
    if (fabs(want[e]) > scale)
      scale = fabs(want[e]);
  }
  return worst / scale;
}

#ifdef ATTN_C_API
static attn_tensor *wrap(int rank, const int64_t *sizes, void *data) {
  return attn_tensor_wrap(ATTN_F32, rank, sizes, data);
}

static void call(const char *path) {
  attn_artifact *artifact = attn_artifact_load(path);
  if (!artifact) {
    printf("load failed: %s\n", attn_last_error());
    exit(1);
  }
  int64_t qs[4] = {B, HQ, LQ, D}, ks[4] = {B, HKV, LK, D}, ls[3] = {B, HQ, LQ};
  attn_tensor *forwardIn[3] = {wrap(4, qs, q), wrap(4, ks, k), wrap(4, ks, v)};
  attn_tensor *forwardOut[2] = {wrap(4, qs, o), wrap(3, ls, lse)};
  attn_tensor *backwardIn[6] = {forwardIn[0], forwardIn[1], forwardIn[2],
                                forwardOut[0], wrap(4, qs, dO),
                                forwardOut[1]};
  attn_tensor *backwardOut[3] = {wrap(4, qs, dq), wrap(4, ks, dk),
                                 wrap(4, ks, dv)};
  if (attn_call(artifact, "train_causal_forward", forwardIn, 3, forwardOut,
                2) != 0 ||
      attn_call(artifact, "train_causal_backward", backwardIn, 6, backwardOut,
                3) != 0) {
    printf("call failed: %s\n", attn_last_error());
    exit(1);
  }
  /* Two outputs are not three: the signature is checked. */
  if (attn_call(artifact, "train_causal_backward", backwardIn, 6, backwardOut,
                2) != 0)
    printf("two outputs: %s\n", attn_last_error());
  for (int t = 0; t < 3; ++t)
    attn_tensor_release(forwardIn[t]);
  for (int t = 0; t < 2; ++t)
    attn_tensor_release(forwardOut[t]);
  attn_tensor_release(backwardIn[4]);
  for (int t = 0; t < 3; ++t)
    attn_tensor_release(backwardOut[t]);
  attn_artifact_release(artifact);
}
#else
#define DESCRIBE(T, array, rank, ...)                                          \
  T array##_d = {(float *)array, (float *)array, 0, {__VA_ARGS__}, {0}};       \
  {                                                                            \
    int64_t stride = 1;                                                        \
    for (int d = rank - 1; d >= 0; --d) {                                      \
      array##_d.strides[d] = stride;                                           \
      stride *= array##_d.sizes[d];                                            \
    }                                                                          \
  }

static void call(const char *unused) {
  (void)unused;
  DESCRIBE(attn_memref_float_4d, q, 4, B, HQ, LQ, D)
  DESCRIBE(attn_memref_float_4d, k, 4, B, HKV, LK, D)
  DESCRIBE(attn_memref_float_4d, v, 4, B, HKV, LK, D)
  DESCRIBE(attn_memref_float_4d, o, 4, B, HQ, LQ, D)
  DESCRIBE(attn_memref_float_3d, lse, 3, B, HQ, LQ)
  DESCRIBE(attn_memref_float_4d, dO, 4, B, HQ, LQ, D)
  DESCRIBE(attn_memref_float_4d, dq, 4, B, HQ, LQ, D)
  DESCRIBE(attn_memref_float_4d, dk, 4, B, HKV, LK, D)
  DESCRIBE(attn_memref_float_4d, dv, 4, B, HKV, LK, D)
  _mlir_ciface_train_causal_forward(&q_d, &k_d, &v_d, &o_d, &lse_d);
  _mlir_ciface_train_causal_backward(&q_d, &k_d, &v_d, &o_d, &dO_d, &lse_d,
                                     &dq_d, &dk_d, &dv_d);
}
#endif

int main(int argc, char **argv) {
  for (float *x = &q[0][0][0][0]; x < &q[0][0][0][0] + B * HQ * LQ * D; ++x)
    *x = 2 * uniform();
  for (float *x = &k[0][0][0][0]; x < &k[0][0][0][0] + B * HKV * LK * D; ++x)
    *x = uniform();
  for (float *x = &v[0][0][0][0]; x < &v[0][0][0][0] + B * HKV * LK * D; ++x)
    *x = uniform();
  for (float *x = &dO[0][0][0][0]; x < &dO[0][0][0][0] + B * HQ * LQ * D; ++x)
    *x = uniform();
  reference();
  call(argc > 1 ? argv[1] : NULL);
  /* f32 against f64: errors near 1e-6 of each gradient's largest entry
   * (sums of <= 2 x 37 rows); 1e-4 leaves 100x margin, and a wrong term (a
   * missed scale or head, the wrong alignment) is off by 1e-2 or more. */
  double errors[4] = {
      scaledError(&o[0][0][0][0], &refO[0][0][0][0], B * HQ * LQ * D),
      scaledError(&dq[0][0][0][0], &refDq[0][0][0][0], B * HQ * LQ * D),
      scaledError(&dk[0][0][0][0], &refDk[0][0][0][0], B * HKV * LK * D),
      scaledError(&dv[0][0][0][0], &refDv[0][0][0][0], B * HKV * LK * D)};
  const char *names[4] = {"o", "dq", "dk", "dv"};
  int pass = 1;
  for (int n = 0; n < 4; ++n) {
    printf("backward %s: scaled error %.2e: %s\n", names[n], errors[n],
           errors[n] <= 1e-4 ? "PASS" : "FAIL");
    pass &= errors[n] <= 1e-4;
  }
  return pass ? 0 : 1;
}
