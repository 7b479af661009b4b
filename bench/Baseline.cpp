//===- Baseline.cpp - unfused attention with OpenBLAS ---------------------===//
#include "Baseline.h"
#include <cblas.h>
#include <algorithm>
#include <cmath>

extern "C" void openblas_set_num_threads(int);

void setBaselineThreads(int threads) { openblas_set_num_threads(threads); }

void unfusedAttention(const float *q, const float *k, const float *v,
                      float *out, float *scores, int64_t heads, int64_t n,
                      int64_t d, bool causal) {
  const float scale = 1.0f / std::sqrt(float(d));
  for (int64_t h = 0; h < heads; ++h) {
    const float *qh = q + h * n * d, *kh = k + h * n * d, *vh = v + h * n * d;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, scale, qh,
                d, kh, d, 0.0f, scores, n);
    for (int64_t i = 0; i < n; ++i) {
      float *row = scores + i * n;
      int64_t len = causal ? i + 1 : n; // masked entries never enter
      // No infinities here: the file is built with -ffast-math.
      float mx = row[0];
      for (int64_t j = 1; j < len; ++j)
        mx = std::max(mx, row[j]);
      float sum = 0;
      for (int64_t j = 0; j < len; ++j) {
        row[j] = std::exp(row[j] - mx);
        sum += row[j];
      }
      float inv = 1.0f / sum;
      for (int64_t j = 0; j < len; ++j)
        row[j] *= inv;
      for (int64_t j = len; j < n; ++j)
        row[j] = 0;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, n, 1.0f,
                scores, n, vh, d, 0.0f, out + h * n * d, d);
  }
}

void unfusedMaskedAttention(const float *q, const float *k, const float *v,
                            float *out, float *scores, int64_t heads,
                            int64_t n, int64_t d, const KeptIntervals &kept) {
  const float scale = 1.0f / std::sqrt(float(d));
  std::vector<std::pair<int64_t, int64_t>> intervals;
  for (int64_t h = 0; h < heads; ++h) {
    const float *qh = q + h * n * d, *kh = k + h * n * d, *vh = v + h * n * d;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, scale, qh,
                d, kh, d, 0.0f, scores, n);
    for (int64_t i = 0; i < n; ++i) {
      float *row = scores + i * n;
      intervals.clear();
      kept(h, i, intervals);
      float mx = -3.0e38f, sum = 0;
      for (auto [first, last] : intervals)
        for (int64_t j = first; j <= last; ++j)
          mx = std::max(mx, row[j]);
      int64_t next = 0;
      for (auto [first, last] : intervals) {
        for (int64_t j = next; j < first; ++j)
          row[j] = 0;
        for (int64_t j = first; j <= last; ++j) {
          row[j] = std::exp(row[j] - mx);
          sum += row[j];
        }
        next = last + 1;
      }
      for (int64_t j = next; j < n; ++j)
        row[j] = 0;
      float inv = sum > 0 ? 1.0f / sum : 0.0f;
      for (auto [first, last] : intervals)
        for (int64_t j = first; j <= last; ++j)
          row[j] *= inv;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, n, 1.0f,
                scores, n, vh, d, 0.0f, out + h * n * d, d);
  }
}
