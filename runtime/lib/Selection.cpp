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

void _mlir_ciface_attn_bucket_sort(AttnMemRef2I64 *buckets,
                                   AttnMemRef2I64 *order,
                                   AttnMemRef2I64 *rank) {
  const int64_t rows = buckets->sizes[0], length = buckets->sizes[1];
  std::vector<int64_t> start;
  for (int64_t n = 0; n < rows; ++n) {
    int64_t numBuckets = 0;
    for (int64_t p = 0; p < length; ++p)
      numBuckets =
          std::max(numBuckets, at<int64_t>(buckets, n, p) + int64_t(1));
    // start[b] = number of positions in buckets below b.
    start.assign(numBuckets + 1, 0);
    for (int64_t p = 0; p < length; ++p)
      ++start[at<int64_t>(buckets, n, p) + 1];
    std::partial_sum(start.begin(), start.end(), start.begin());
    for (int64_t p = 0; p < length; ++p) {
      int64_t s = start[at<int64_t>(buckets, n, p)]++;
      at<int64_t>(order, n, s) = p;
      at<int64_t>(rank, n, p) = s;
    }
  }
}

void _mlir_ciface_attn_top_k_f32(AttnMemRef2F32 *scores,
                                 AttnMemRef2I64 *indices,
                                 AttnMemRef2I64 *slot) {
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
    const bool withSlots = slot->sizes[1] == length;
    for (int64_t p = 0; p < length && withSlots; ++p)
      at<int64_t>(slot, n, p) = -1;
    for (int64_t s = 0; s < k; ++s) {
      at<int64_t>(indices, n, s) = positions[s];
      if (withSlots)
        at<int64_t>(slot, n, positions[s]) = s;
    }
  }
}
