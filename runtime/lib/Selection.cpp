//===- Selection.cpp - sorting and top-k behind attn.lsh / attn.routing ---===//
#include "attn/Runtime/Selection.h"
#include <algorithm>
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
  std::vector<int64_t> next;
  for (int64_t n = 0; n < rows; ++n) {
    int64_t numKeys = starts->sizes[1] > 0 ? starts->sizes[1] - 1 : 0;
    for (int64_t m = 0; m < columns; ++m)
      numKeys = std::max(numKeys, at<int64_t>(keys, n, m) + int64_t(1));
    // next[x] = number of columns with keys below x, then the next free
    // sorted index of key x.
    next.assign(numKeys + 1, 0);
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

void _mlir_ciface_attn_top_k_f32(AttnMemRef2F32 *scores,
                                 AttnMemRef2I64 *indices) {
  const int64_t rows = scores->sizes[0], length = scores->sizes[1];
  const int64_t k = std::min(indices->sizes[1], length);
  std::vector<int64_t> positions(length);
  for (int64_t n = 0; n < rows; ++n) {
    std::iota(positions.begin(), positions.end(), 0);
    // Larger score first, then the lower position: a strict total order, so
    // the selection does not depend on the algorithm.
    auto before = [&](int64_t a, int64_t b) {
      float sa = at<float>(scores, n, a), sb = at<float>(scores, n, b);
      return sa > sb || (sa == sb && a < b);
    };
    if (k > 0)
      std::nth_element(positions.begin(), positions.begin() + k - 1,
                       positions.end(), before);
    std::sort(positions.begin(), positions.begin() + k);
    for (int64_t s = 0; s < k; ++s)
      at<int64_t>(indices, n, s) = positions[s];
  }
}
