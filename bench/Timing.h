//===- Timing.h - median wall-clock time of repeated runs -------*- C++ -*-===//
#ifndef ATTN_BENCH_TIMING_H
#define ATTN_BENCH_TIMING_H

#include <algorithm>
#include <chrono>
#include <vector>

/// Median seconds of `runs` calls of fn (machines here are noisy).
template <typename Fn> double medianSeconds(unsigned runs, Fn &&fn) {
  std::vector<double> times;
  for (unsigned r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

#endif // ATTN_BENCH_TIMING_H
