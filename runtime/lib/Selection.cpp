//===- Selection.cpp - sorting and top-k behind attn.lsh / attn.routing ---===//
#include "attn/Runtime/Selection.h"
#include <algorithm>
#include <cmath>
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
/// in float comparison, and NaN below every number. Positions fit the low
/// 32 bits.
uint64_t selectionKey(float score, int64_t position) {
  uint32_t bits;
  if (score == 0.0f)
    score = 0.0f;
  std::memcpy(&bits, &score, sizeof bits);
  uint32_t ascending = bits & 0x80000000u ? ~bits : bits | 0x80000000u;
  if (std::isnan(score))
    ascending = 0;
  return uint64_t(~ascending) << 32 | uint64_t(position);
}
} // namespace

void _mlir_ciface_attn_top_k_f32(AttnMemRef2F32 *scores,
                                 AttnMemRef2I64 *indices) {
  const int64_t rows = scores->sizes[0], length = scores->sizes[1];
  const int64_t k = std::min(indices->sizes[1], length);
  if (k <= 0)
    return;
#pragma omp parallel if (rows > 1)
  {
    // Per thread, reused by its rows: the row read once into a plain array
    // (the descriptor's fields were reloaded per element otherwise), and the
    // candidates' positions and keys.
    std::vector<float> row(length);
    std::vector<int64_t> candidates(length), chosen(k);
    std::vector<uint64_t> buffer;
#pragma omp for schedule(dynamic)
    for (int64_t n = 0; n < rows; ++n) {
      for (int64_t l = 0; l < length; ++l)
        row[l] = at<float>(scores, n, l);
      // A lower bound of the k-th largest score: split the row into k blocks;
      // each holds its maximum, so at least k scores reach the smallest of
      // the k maxima. Only those are candidates (NaN ones too, so that a row
      // of too few numbers still fills k): for random scores a few times k
      // of them, selected by nth_element on integer keys. 1536 rows of
      // L = 4096, k = 64 on one thread: 71 ms by nth_element on the whole row
      // (comparing scores read through the descriptor), 12 ms so.
      float bound = INFINITY;
      for (int64_t block = 0; block < k; ++block) {
        float maximum = -INFINITY; // NaN never compares greater
        for (int64_t l = block * length / k, e = (block + 1) * length / k;
             l < e; ++l)
          maximum = row[l] > maximum ? row[l] : maximum;
        bound = std::min(bound, maximum);
      }
      // Positions of candidates, written without a branch (a branch taken
      // for a random few percent of the scores mispredicts each time: 2x).
      int64_t count = 0;
      for (int64_t l = 0; l < length; ++l) {
        candidates[count] = l;
        count += !(row[l] < bound);
      }
      buffer.resize(count);
      for (int64_t c = 0; c < count; ++c)
        buffer[c] = selectionKey(row[candidates[c]], candidates[c]);
      std::nth_element(buffer.begin(), buffer.begin() + k - 1, buffer.end());
      for (int64_t s = 0; s < k; ++s)
        chosen[s] = int64_t(buffer[s] & 0xffffffffu);
      std::sort(chosen.begin(), chosen.end());
      for (int64_t s = 0; s < k; ++s)
        at<int64_t>(indices, n, s) = chosen[s];
    }
  }
}
