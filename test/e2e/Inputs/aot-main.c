/* Calls the kernel attn-compile built from aot-spec.yaml through the C
 * header it generated, and checks it against a plain double-precision
 * attention written here (independent of attn's runtime). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { B = 1, HQ = 4, HKV = 2, LQ = 37, LK = 100, D = 40 };

static float q[B][HQ][LQ][D], k[B][HKV][LK][D], v[B][HKV][LK][D];

static attn_memref_float_4d describe(float *data, int h, int l) {
  attn_memref_float_4d m = {data, data, 0, {B, h, l, D},
                            {(int64_t)h * l * D, (int64_t)l * D, D, 1}};
  return m;
}

int main(void) {
  unsigned state = 12345;
  float *all[3] = {&q[0][0][0][0], &k[0][0][0][0], &v[0][0][0][0]};
  int counts[3] = {B * HQ * LQ * D, B * HKV * LK * D, B * HKV * LK * D};
  for (int t = 0; t < 3; ++t)
    for (int e = 0; e < counts[t]; ++e) {
      state = state * 1103515245u + 12345u;
      all[t][e] = (float)((state >> 8) % 20001) / 10000.0f - 1.0f;
    }
  attn_memref_float_4d mq = describe(&q[0][0][0][0], HQ, LQ),
                       mk = describe(&k[0][0][0][0], HKV, LK),
                       mv = describe(&v[0][0][0][0], HKV, LK), out;
  _mlir_ciface_aot_causal(&out, &mq, &mk, &mv);

  double maxError = 0, scale = 0;
  int delta = LK - LQ; /* bottom-right: query i sits at key position i + delta */
  for (int h = 0; h < HQ; ++h)
    for (int i = 0; i < LQ; ++i) {
      double logits[LK], mx = -INFINITY, sum = 0, o[D] = {0};
      for (int j = 0; j < LK; ++j) {
        double dot = 0;
        for (int c = 0; c < D; ++c)
          dot += (double)q[0][h][i][c] * k[0][h / (HQ / HKV)][j][c];
        logits[j] = j <= i + delta ? dot / sqrt((double)D) : -INFINITY;
        if (logits[j] > mx)
          mx = logits[j];
      }
      for (int j = 0; j < LK; ++j) {
        if (logits[j] == -INFINITY)
          continue;
        double e = exp(logits[j] - mx);
        sum += e;
        for (int c = 0; c < D; ++c)
          o[c] += e * v[0][h / (HQ / HKV)][j][c];
      }
      for (int c = 0; c < D; ++c) {
        double ref = o[c] / sum;
        double got = out.aligned[out.offset + h * out.strides[1] +
                                 i * out.strides[2] + c * out.strides[3]];
        if (fabs(ref) > scale)
          scale = fabs(ref);
        if (!(fabs(got - ref) <= maxError))
          maxError = isnan(got) ? INFINITY : fabs(got - ref);
      }
    }
  free(out.allocated);
  /* Same f32 tolerance as the other e2e tests: 1e-5 of the output scale. */
  int pass = maxError <= 1e-5 * scale;
  printf("aot: shape [%lld %lld %lld %lld], max error %.2e, scale %.2e: %s\n",
         (long long)out.sizes[0], (long long)out.sizes[1],
         (long long)out.sizes[2], (long long)out.sizes[3], maxError, scale,
         pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
