//===- PeakProbe.cpp - measured FP32 FMA peak -----------------------------===//
//
// Twelve independent accumulator chains hide the FMA latency (4 cycles x 2-3
// pipes); the result feeds a volatile sink so nothing is optimized away.
//
//===----------------------------------------------------------------------===//
#include "PeakProbe.h"
#include <algorithm>
#include <chrono>
#include <immintrin.h>
#include <thread>
#include <vector>

static volatile float sink;

__attribute__((target("avx2,fma"))) static double fmaLoopAvx2(long iters) {
  __m256 acc[12];
  for (auto &a : acc)
    a = _mm256_set1_ps(0.0f);
  __m256 x = _mm256_set1_ps(1.0000001f), y = _mm256_set1_ps(0.9999999f);
  for (long i = 0; i < iters; ++i)
    for (auto &a : acc)
      a = _mm256_fmadd_ps(a, x, y);
  float s = 0;
  for (auto &a : acc)
    s += _mm256_cvtss_f32(a);
  sink = s;
  return double(iters) * 12 * 8 * 2;
}

__attribute__((target("avx512f"))) static double fmaLoopAvx512(long iters) {
  __m512 acc[12];
  for (auto &a : acc)
    a = _mm512_set1_ps(0.0f);
  __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
  for (long i = 0; i < iters; ++i)
    for (auto &a : acc)
      a = _mm512_fmadd_ps(a, x, y);
  float s = 0;
  for (auto &a : acc)
    s += _mm512_cvtss_f32(a);
  sink = s;
  return double(iters) * 12 * 16 * 2;
}

/// One timed run of the FMA loops on `threads` threads.
static double probeOnce(int threads) {
  bool avx512 = __builtin_cpu_supports("avx512f");
  const long iters = 20'000'000;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back(
        [&] { avx512 ? fmaLoopAvx512(iters) : fmaLoopAvx2(iters); });
  for (auto &w : workers)
    w.join();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  double flops = double(iters) * 12 * (avx512 ? 16 : 8) * 2 * threads;
  return flops / seconds * 1e-9;
}

double measurePeakGflops(int threads) {
  // The best of three: on a shared VM a neighbour can slow any single run,
  // and the peak is what the machine can do, not what it did once.
  double best = 0;
  for (int run = 0; run < 3; ++run)
    best = std::max(best, probeOnce(threads));
  return best;
}
