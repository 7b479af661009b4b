//===- BandwidthProbe.cpp - measured memory read bandwidth ----------------===//
//
// 16 independent vector sums per thread keep enough loads in flight; the
// buffer (1 GiB) is touched once before timing so page faults are not
// counted, and the best of five runs is the machine's bandwidth.
//
//===----------------------------------------------------------------------===//
#include "BandwidthProbe.h"
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <immintrin.h>
#include <thread>
#include <vector>

static volatile float sink;

__attribute__((target("avx2"))) static void sumPart(const float *p,
                                                   size_t n) {
  __m256 acc[16];
  for (auto &a : acc)
    a = _mm256_setzero_ps();
  for (size_t i = 0; i + 128 <= n; i += 128)
    for (int j = 0; j < 16; ++j)
      acc[j] = _mm256_add_ps(acc[j], _mm256_load_ps(p + i + 8 * j));
  float s = 0;
  for (auto &a : acc)
    s += _mm256_cvtss_f32(a);
  sink = s;
}

double measureReadBandwidth(int threads) {
  const size_t count = size_t(1) << 28; // 1 GiB of floats
  auto *data = static_cast<float *>(std::aligned_alloc(64, count * 4));
  if (!data)
    return 0;
  std::fill(data, data + count, 1.0f);
  size_t part = count / threads / 128 * 128;
  double best = 0;
  for (int run = 0; run < 5; ++run) {
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] { sumPart(data + t * part, part); });
    for (auto &w : workers)
      w.join();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    best = std::max(best, double(part) * threads * 4 / seconds * 1e-9);
  }
  std::free(data);
  return best;
}
