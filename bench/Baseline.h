//===- Baseline.h - unfused attention with OpenBLAS -------------*- C++ -*-===//
#ifndef ATTN_BENCH_BASELINE_H
#define ATTN_BENCH_BASELINE_H

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

/// What most hand-written CPU attention does: per head, S = scale Q K^T with
/// one sgemm, the causal mask as -inf, a row softmax, O = P V with a second
/// sgemm. `scores` is N x N scratch. OpenBLAS brings its own threads.
void unfusedAttention(const float *q, const float *k, const float *v,
                      float *out, float *scores, int64_t heads, int64_t n,
                      int64_t d, bool causal);

/// The same with a sparse pattern given per row as sorted, disjoint kept
/// key intervals [first, last]: scores outside them are dropped before the
/// softmax (the usual "dense scores + mask" implementation).
using KeptIntervals = std::function<void(
    int64_t head, int64_t row, std::vector<std::pair<int64_t, int64_t>> &)>;
void unfusedMaskedAttention(const float *q, const float *k, const float *v,
                            float *out, float *scores, int64_t heads,
                            int64_t n, int64_t d, const KeptIntervals &kept);

/// Sets OpenBLAS's thread count.
void setBaselineThreads(int threads);

#endif // ATTN_BENCH_BASELINE_H
