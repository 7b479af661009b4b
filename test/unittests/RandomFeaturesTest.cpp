//===- RandomFeaturesTest.cpp - orthogonal random features ----------------===//
#include "attn/Runtime/RandomFeatures.h"
#include <cmath>
#include <gtest/gtest.h>

using attnrt::orthogonalRandomFeatures;

namespace {

double dot(const std::vector<float> &w, int64_t dim, int64_t a, int64_t b) {
  double s = 0;
  for (int64_t c = 0; c < dim; ++c)
    s += double(w[a * dim + c]) * w[b * dim + c];
  return s;
}

// Rows of one block are orthogonal: |w_a . w_b| <= 1e-5 |w_a| |w_b| (f32
// rounding of unit vectors scaled to ~sqrt(D) is ~1e-7 relative); rows of
// different blocks are independent, not orthogonal.
TEST(RandomFeatures, RowsOfABlockAreOrthogonal) {
  const int64_t dim = 16, features = 40; // blocks of 16, 16, 8 rows
  std::vector<float> w = orthogonalRandomFeatures(features, dim, 7);
  ASSERT_EQ(w.size(), size_t(features * dim));
  for (int64_t a = 0; a < features; ++a)
    for (int64_t b = a + 1; b < features; ++b)
      if (a / dim == b / dim)
        EXPECT_LE(std::fabs(dot(w, dim, a, b)),
                  1e-5 * std::sqrt(dot(w, dim, a, a) * dot(w, dim, b, b)))
            << "rows " << a << ", " << b;
  bool someCrossBlockOverlap = false;
  for (int64_t b = dim; b < features; ++b)
    someCrossBlockOverlap |=
        std::fabs(dot(w, dim, 0, b)) >
        1e-2 * std::sqrt(dot(w, dim, 0, 0) * dot(w, dim, b, b));
  EXPECT_TRUE(someCrossBlockOverlap);
}

TEST(RandomFeatures, ReproducibleFromTheSeed) {
  EXPECT_EQ(orthogonalRandomFeatures(32, 8, 3),
            orthogonalRandomFeatures(32, 8, 3));
  EXPECT_NE(orthogonalRandomFeatures(32, 8, 3),
            orthogonalRandomFeatures(32, 8, 4));
}

// Each row is marginally N(0, I_D), so E|w|^2 = D with standard deviation
// sqrt(2 D) per row: over 4096 rows of D = 64 the mean has standard
// deviation sqrt(128 / 4096) = 0.18; allow 5 of them.
TEST(RandomFeatures, RowNormsMatchGaussianRows) {
  const int64_t dim = 64, features = 4096;
  std::vector<float> w = orthogonalRandomFeatures(features, dim, 11);
  double mean = 0;
  for (int64_t r = 0; r < features; ++r)
    mean += dot(w, dim, r, r) / features;
  EXPECT_NEAR(mean, double(dim), 5 * std::sqrt(2.0 * dim / features));
}

} // namespace
