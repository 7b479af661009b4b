//===- Selection.cpp - sorting and top-k behind attn.lsh / attn.routing ---===//
#include "attn/Runtime/Selection.h"
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

namespace {
template <typename T, typename Descriptor>
T &at(Descriptor *m, int64_t row, int64_t col) {
  return m->aligned[m->offset + row * m->strides[0] + col * m->strides[1]];
}
} // namespace

void _mlir_ciface_attn_counting_sort(AttnMemRef2I64 *keys,
                                     AttnMemRef2I64 *order,
                                     AttnMemRef2I64 *rank,
                                     AttnMemRef2I64 *starts) {
  const int64_t rows = keys->sizes[0], columns = keys->sizes[1];
  // Rows are independent problems: one per (batch, head, round) or
  // (batch, head, cluster), enough to keep every thread busy.
#pragma omp parallel for schedule(dynamic) if (rows > 1)
  for (int64_t n = 0; n < rows; ++n) {
    int64_t numKeys = starts->sizes[1] > 0 ? starts->sizes[1] - 1 : 0;
    for (int64_t m = 0; m < columns; ++m)
      numKeys = std::max(numKeys, at<int64_t>(keys, n, m) + int64_t(1));
    // next[x] = number of columns with keys below x, then the next free
    // sorted index of key x.
    std::vector<int64_t> next(numKeys + 1, 0);
    for (int64_t m = 0; m < columns; ++m)
      ++next[at<int64_t>(keys, n, m) + 1];
    std::partial_sum(next.begin(), next.end(), next.begin());
    for (int64_t x = 0; x < starts->sizes[1]; ++x)
      at<int64_t>(starts, n, x) = next[x];
    for (int64_t m = 0; m < columns; ++m) {
      int64_t s = next[at<int64_t>(keys, n, m)]++;
      if (order->sizes[1])
        at<int64_t>(order, n, s) = m;
      if (rank->sizes[1])
        at<int64_t>(rank, n, m) = s;
    }
  }
}

namespace {
/// A key whose increasing order is the selection's: larger score first,
/// then the lower position (a strict total order, so the selection does not
/// depend on the algorithm). The score's bits are mapped to an unsigned
/// order (negative floats reversed) and complemented; -0 counts as +0, as
/// in float comparison. Positions fit the low 32 bits.
uint64_t selectionKey(float score, int64_t position) {
  uint32_t bits;
  if (score == 0.0f)
    score = 0.0f;
  std::memcpy(&bits, &score, sizeof bits);
  uint32_t ascending = bits & 0x80000000u ? ~bits : bits | 0x80000000u;
  return uint64_t(~ascending) << 32 | uint64_t(position);
}
} // namespace

void _mlir_ciface_attn_top_k_f32(AttnMemRef2F32 *scores,
                                 AttnMemRef2I64 *indices) {
  const int64_t rows = scores->sizes[0], length = scores->sizes[1];
  const int64_t k = std::min(indices->sizes[1], length);
  if (k <= 0)
    return;
#pragma omp parallel for schedule(dynamic) if (rows > 1)
  for (int64_t n = 0; n < rows; ++n) {
    // A max-heap of the k best keys so far, its worst on top: a scan
    // replaces the top only when a better key comes, which after the first
    // part of a long row is rare (k ln(L / k) times on average for random
    // scores), so the scan is one well-predicted comparison per score.
    // Selection by std::nth_element on these keys was 2.5x slower at
    // L = 4096, k = 64; comparing scores read through the descriptor, 6x.
    std::vector<uint64_t> best(k);
    for (int64_t l = 0; l < k; ++l)
      best[l] = selectionKey(at<float>(scores, n, l), l);
    std::make_heap(best.begin(), best.end());
    for (int64_t l = k; l < length; ++l) {
      uint64_t key = selectionKey(at<float>(scores, n, l), l);
      if (key >= best.front())
        continue;
      std::pop_heap(best.begin(), best.end());
      best.back() = key;
      std::push_heap(best.begin(), best.end());
    }
    std::vector<int64_t> chosen(k);
    for (int64_t s = 0; s < k; ++s)
      chosen[s] = int64_t(best[s] & 0xffffffffu);
    std::sort(chosen.begin(), chosen.end());
    for (int64_t s = 0; s < k; ++s)
      at<int64_t>(indices, n, s) = chosen[s];
  }
}
