//===- Compare.h - how far a kernel's output is from the baseline's -*- C++ -*-===//
#ifndef ATTN_BENCH_COMPARE_H
#define ATTN_BENCH_COMPARE_H

#include <algorithm>
#include <cmath>
#include <vector>

/// max |a - b| over the elements; infinity when a difference is NaN (one
/// side NaN where the other is not must not read as agreement).
inline double maxAbsDifference(const std::vector<float> &a,
                               const std::vector<float> &b) {
  double worst = 0;
  for (size_t e = 0; e < a.size() && e < b.size(); ++e) {
    double diff = std::abs(double(a[e]) - double(b[e]));
    worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
  }
  return worst;
}

#endif // ATTN_BENCH_COMPARE_H
