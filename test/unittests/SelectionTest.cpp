//===- SelectionTest.cpp - top-k and counting sort of attn.routing / lsh --===//
//
// Each function against a plain reference: the whole row sorted with the
// documented order (std::stable_sort), on rows with many ties, signed
// zeros, rows shorter than k and strided (transposed) operands.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/Selection.h"
#include "gtest/gtest.h"
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace {

/// A row-major [rows, columns] buffer viewed as a memref descriptor, or as
/// its transpose's (strides swapped) when `transposed`.
template <typename Descriptor, typename T>
Descriptor view(std::vector<T> &data, int64_t rows, int64_t columns,
                bool transposed = false) {
  Descriptor d{data.data(), data.data(), 0, {rows, columns}, {columns, 1}};
  if (transposed) {
    d.sizes[0] = columns;
    d.sizes[1] = rows;
    std::swap(d.strides[0], d.strides[1]);
  }
  return d;
}

/// The k best columns of one row by the documented order (larger score,
/// then lower column), in increasing column order.
std::vector<int64_t> referenceTopK(const std::vector<float> &row, int64_t k) {
  std::vector<int64_t> columns(row.size());
  std::iota(columns.begin(), columns.end(), 0);
  std::stable_sort(columns.begin(), columns.end(),
                   [&](int64_t a, int64_t b) { return row[a] > row[b]; });
  columns.resize(std::min<int64_t>(k, row.size()));
  std::sort(columns.begin(), columns.end());
  return columns;
}

TEST(Selection, TopKMatchesASortedRowWithTiesAndSignedZeros) {
  std::mt19937 rng(7);
  for (int64_t length : {1, 5, 64, 1000, 4096}) {
    for (int64_t k :
         {int64_t(1), int64_t(3), int64_t(64), int64_t(200), length / 2}) {
      if (k < 1 || k > length)
        continue;
      const int64_t rows = 9;
      std::vector<float> scores(rows * length);
      // Few distinct values: most rows hold long runs of ties. Row 0
      // increases (every key replaces the heap's top), row 1 decreases.
      std::uniform_int_distribution<int> level(-4, 4);
      for (int64_t n = 0; n < rows; ++n)
        for (int64_t l = 0; l < length; ++l) {
          float x = n == 0 ? float(l) : n == 1 ? -float(l) : level(rng) * 0.5f;
          if (x == 0.0f && l % 2)
            x = -0.0f; // equal to +0: ties go to the lower column
          scores[n * length + l] = x;
        }
      std::vector<int64_t> indices(rows * k, -1);
      auto s = view<AttnMemRef2F32>(scores, rows, length);
      auto i = view<AttnMemRef2I64>(indices, rows, k);
      _mlir_ciface_attn_top_k_f32(&s, &i);
      for (int64_t n = 0; n < rows; ++n) {
        std::vector<float> row(scores.begin() + n * length,
                               scores.begin() + (n + 1) * length);
        std::vector<int64_t> got(indices.begin() + n * k,
                                 indices.begin() + (n + 1) * k);
        EXPECT_EQ(got, referenceTopK(row, k))
            << "length " << length << " k " << k << " row " << n;
      }
    }
  }
}

TEST(Selection, TopKReadsStridedScoresAndKeepsColumnsPastTheRow) {
  // scores^T through swapped strides; k > length fills k = length columns
  // and leaves the rest of each output row alone.
  const int64_t length = 6, rows = 3, k = 8;
  std::vector<float> columnMajor = {0.5f, 2, -1, //
                                    3,    2, 7,  //
                                    3,    0, 7,  //
                                    -2,   2, 1,  //
                                    9,    5, 7,  //
                                    1,    2, 0};
  std::vector<int64_t> indices(rows * k, -1);
  auto s = view<AttnMemRef2F32>(columnMajor, length, rows, /*transposed=*/true);
  auto i = view<AttnMemRef2I64>(indices, rows, k);
  _mlir_ciface_attn_top_k_f32(&s, &i);
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t c = 0; c < k; ++c)
      EXPECT_EQ(indices[n * k + c], c < length ? c : -1);
  // k = 2: the two largest of each row, ties to the lower column.
  std::vector<int64_t> two(rows * 2);
  auto t = view<AttnMemRef2I64>(two, rows, 2);
  _mlir_ciface_attn_top_k_f32(&s, &t);
  EXPECT_EQ(two, (std::vector<int64_t>{1, 4, 0, 4, 1, 2}));
}

TEST(Selection, TopKRanksNaNBelowEveryNumber) {
  // Too few numbers for k: the NaN of the lower column fills the last
  // place; -inf still beats NaN.
  std::vector<float> row = {NAN, 1.0f, NAN, -INFINITY, 2.0f};
  std::vector<int64_t> indices(4, -1);
  auto s = view<AttnMemRef2F32>(row, 1, 5);
  auto i = view<AttnMemRef2I64>(indices, 1, 4);
  _mlir_ciface_attn_top_k_f32(&s, &i);
  EXPECT_EQ(indices, (std::vector<int64_t>{0, 1, 3, 4}));
}

TEST(Selection, CountingSortIsStableAndGivesStartsAndRanks) {
  std::mt19937 rng(11);
  const int64_t rows = 5, columns = 300, numKeys = 17;
  std::uniform_int_distribution<int64_t> key(0, numKeys - 1);
  std::vector<int64_t> keys(rows * columns);
  for (auto &x : keys)
    x = key(rng);
  std::vector<int64_t> order(rows * columns), rank(rows * columns),
      starts(rows * (numKeys + 1));
  auto k = view<AttnMemRef2I64>(keys, rows, columns);
  auto o = view<AttnMemRef2I64>(order, rows, columns);
  auto r = view<AttnMemRef2I64>(rank, rows, columns);
  auto s = view<AttnMemRef2I64>(starts, rows, numKeys + 1);
  _mlir_ciface_attn_counting_sort(&k, &o, &r, &s);
  for (int64_t n = 0; n < rows; ++n) {
    std::vector<int64_t> expected(columns);
    std::iota(expected.begin(), expected.end(), 0);
    const int64_t *row = keys.data() + n * columns;
    std::stable_sort(expected.begin(), expected.end(),
                     [&](int64_t a, int64_t b) { return row[a] < row[b]; });
    for (int64_t j = 0; j < columns; ++j) {
      ASSERT_EQ(order[n * columns + j], expected[j]) << "row " << n;
      EXPECT_EQ(rank[n * columns + expected[j]], j);
    }
    for (int64_t x = 0; x <= numKeys; ++x)
      EXPECT_EQ(
          starts[n * (numKeys + 1) + x],
          std::count_if(row, row + columns, [&](int64_t v) { return v < x; }));
  }
}

} // namespace
