//===- RandomFeatures.cpp - orthogonal random features for FAVOR+ ---------===//
#include "attn/Runtime/RandomFeatures.h"
#include <algorithm>
#include <cmath>
#include <memory>
#include <new>
#include <random>

bool attnrt::fillOrthogonalRandomFeatures(int64_t features, int64_t dim,
                                          uint64_t seed, float *out) {
  if (features <= 0 || dim <= 0)
    return true;
  // Only the rows a block keeps are drawn: a block of the last few
  // features (or of one feature of a huge dim) costs what it returns.
  int64_t blockRows = std::min(features, dim);
  std::unique_ptr<double[]> block(new (std::nothrow) double[blockRows * dim]);
  if (!block)
    return false;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  for (int64_t start = 0; start < features; start += dim) {
    int64_t rows = std::min(dim, features - start);
    // Modified Gram-Schmidt on the rows of a Gaussian matrix; a (measure
    // zero) dependent row is redrawn.
    for (int64_t r = 0; r < rows; ++r) {
      double *row = &block[r * dim];
      double norm = 0;
      do {
        for (int64_t c = 0; c < dim; ++c)
          row[c] = normal(rng);
        for (int64_t p = 0; p < r; ++p) {
          const double *prev = &block[p * dim];
          double dot = 0;
          for (int64_t c = 0; c < dim; ++c)
            dot += row[c] * prev[c];
          for (int64_t c = 0; c < dim; ++c)
            row[c] -= dot * prev[c];
        }
        norm = 0;
        for (int64_t c = 0; c < dim; ++c)
          norm += row[c] * row[c];
        norm = std::sqrt(norm);
      } while (norm < 1e-6);
      for (int64_t c = 0; c < dim; ++c)
        row[c] /= norm;
    }
    // Row lengths of independent Gaussian vectors (chi with dim degrees).
    for (int64_t r = 0; r < rows; ++r) {
      double length = 0;
      for (int64_t c = 0; c < dim; ++c) {
        double g = normal(rng);
        length += g * g;
      }
      length = std::sqrt(length);
      for (int64_t c = 0; c < dim; ++c)
        out[(start + r) * dim + c] = float(length * block[r * dim + c]);
    }
  }
  return true;
}

std::vector<float> attnrt::orthogonalRandomFeatures(int64_t features,
                                                    int64_t dim,
                                                    uint64_t seed) {
  std::vector<float> omega(features > 0 && dim > 0 ? features * dim : 0);
  fillOrthogonalRandomFeatures(features, dim, seed, omega.data());
  return omega;
}
