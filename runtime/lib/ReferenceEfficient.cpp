//===- ReferenceEfficient.cpp - plain references of the efficient ops -----===//
#include "attn/Runtime/ReferenceEfficient.h"
#include <algorithm>
#include <cmath>
#include <complex>

using namespace attnrt::reference;

namespace {

/// A row-major matrix of doubles.
struct Matrix {
  Matrix(int64_t rows, int64_t cols)
      : rows(rows), cols(cols), data(rows * cols, 0.0) {}
  double &operator()(int64_t r, int64_t c) { return data[r * cols + c]; }
  double operator()(int64_t r, int64_t c) const { return data[r * cols + c]; }
  int64_t rows, cols;
  std::vector<double> data;
};

Matrix multiply(const Matrix &a, const Matrix &b) {
  Matrix c(a.rows, b.cols);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t t = 0; t < a.cols; ++t)
      for (int64_t j = 0; j < b.cols; ++j)
        c(i, j) += a(i, t) * b(t, j);
  return c;
}

/// Rows [rows, cols] of a [.., rows, cols] f32 buffer, at matrix `index`.
Matrix load(const float *data, int64_t index, int64_t rows, int64_t cols) {
  Matrix m(rows, cols);
  for (int64_t e = 0; e < rows * cols; ++e)
    m.data[e] = data[index * rows * cols + e];
  return m;
}

/// softmax(scale a b^T) row-wise.
Matrix softmaxScores(const Matrix &a, const Matrix &b, double scale) {
  Matrix s(a.rows, b.rows);
  for (int64_t i = 0; i < a.rows; ++i) {
    double max = -INFINITY;
    for (int64_t j = 0; j < b.rows; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < a.cols; ++d)
        dot += a(i, d) * b(j, d);
      s(i, j) = scale * dot;
      max = std::max(max, s(i, j));
    }
    double sum = 0;
    for (int64_t j = 0; j < b.rows; ++j)
      sum += (s(i, j) = std::exp(s(i, j) - max));
    for (int64_t j = 0; j < b.rows; ++j)
      s(i, j) /= sum;
  }
  return s;
}

/// Calls fn(b, h, kvIndex) for every (batch, query head) and stores the
/// [Lq, Dv] matrix it returns.
template <typename Fn>
std::vector<double> perHead(const QkvProblem &p, Fn fn) {
  std::vector<double> out(p.batch * p.queryHeads * p.queryLen * p.valueDim);
  int64_t group = p.queryHeads / p.keyHeads;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.queryHeads; ++h) {
      Matrix o = fn(b * p.queryHeads + h, b * p.keyHeads + h / group, h / group);
      std::copy(o.data.begin(), o.data.end(),
                out.begin() + (b * p.queryHeads + h) * p.queryLen * p.valueDim);
    }
  return out;
}

/// Segment means of the rows of x: segment s = [floor(s L / m),
/// floor((s + 1) L / m)).
Matrix segmentMeans(const Matrix &x, int64_t m) {
  Matrix means(m, x.cols);
  for (int64_t s = 0; s < m; ++s) {
    int64_t begin = s * x.rows / m, end = (s + 1) * x.rows / m;
    for (int64_t r = begin; r < end; ++r)
      for (int64_t d = 0; d < x.cols; ++d)
        means(s, d) += x(r, d) / double(end - begin);
  }
  return means;
}

} // namespace

std::vector<double> attnrt::reference::linformer(const LinformerProblem &p) {
  return perHead(p, [&](int64_t qIndex, int64_t kvIndex, int64_t kvHead) {
    Matrix q = load(p.query, qIndex, p.queryLen, p.headDim);
    Matrix k = load(p.key, kvIndex, p.keyLen, p.headDim);
    Matrix v = load(p.value, kvIndex, p.keyLen, p.valueDim);
    int64_t projIndex = p.perHead ? kvHead : 0;
    Matrix e = load(p.e, projIndex, p.rank, p.keyLen);
    Matrix f = load(p.f, projIndex, p.rank, p.keyLen);
    return multiply(softmaxScores(q, multiply(e, k), p.scale), multiply(f, v));
  });
}

std::vector<double> attnrt::reference::nystrom(const NystromProblem &p) {
  return perHead(p, [&](int64_t qIndex, int64_t kvIndex, int64_t) {
    Matrix q = load(p.query, qIndex, p.queryLen, p.headDim);
    Matrix k = load(p.key, kvIndex, p.keyLen, p.headDim);
    Matrix v = load(p.value, kvIndex, p.keyLen, p.valueDim);
    int64_t m = p.landmarks;
    Matrix qLand = segmentMeans(q, m), kLand = segmentMeans(k, m);
    Matrix f = softmaxScores(q, kLand, p.scale);
    Matrix a = softmaxScores(qLand, kLand, p.scale);
    Matrix bm = softmaxScores(qLand, k, p.scale);

    // Z0 = A^T / (max_i sum_j |A_ij| * max_j sum_i |A_ij|).
    double maxRow = 0, maxCol = 0;
    for (int64_t i = 0; i < m; ++i) {
      double row = 0, col = 0;
      for (int64_t j = 0; j < m; ++j) {
        row += std::abs(a(i, j));
        col += std::abs(a(j, i));
      }
      maxRow = std::max(maxRow, row);
      maxCol = std::max(maxCol, col);
    }
    Matrix z(m, m);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j)
        z(i, j) = a(j, i) / (maxRow * maxCol);
    // Z = 1/4 Z (13 I - A Z (15 I - A Z (7 I - A Z))).
    auto minusFrom = [&](double c, Matrix x) {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < m; ++j)
          x(i, j) = (i == j ? c : 0.0) - x(i, j);
      return x;
    };
    for (int64_t it = 0; it < p.iterations; ++it) {
      Matrix az = multiply(a, z);
      Matrix t = multiply(az, minusFrom(7, az));
      t = multiply(az, minusFrom(15, t));
      z = multiply(z, minusFrom(13, t));
      for (double &x : z.data)
        x *= 0.25;
    }
    return multiply(f, multiply(z, multiply(bm, v)));
  });
}

std::vector<double> attnrt::reference::kernelized(const KernelizedProblem &p) {
  using Map = KernelizedProblem::FeatureMap;
  // phi of every row of x [rows, D].
  auto phi = [&](const Matrix &x) {
    double s = std::pow(double(p.headDim), -0.25);
    int64_t m = p.features;
    int64_t width = p.featureMap == Map::Rfa ? 2 * m
                    : p.featureMap == Map::Favor ? m
                                                 : p.headDim;
    Matrix out(x.rows, width);
    for (int64_t r = 0; r < x.rows; ++r) {
      if (p.featureMap == Map::Relu || p.featureMap == Map::EluPlusOne) {
        for (int64_t d = 0; d < p.headDim; ++d) {
          double v = x(r, d);
          out(r, d) = p.featureMap == Map::Relu ? std::max(v, 0.0)
                      : v > 0                   ? v + 1
                                                : std::exp(v);
        }
        continue;
      }
      double sq = 0;
      for (int64_t d = 0; d < p.headDim; ++d)
        sq += (s * x(r, d)) * (s * x(r, d));
      for (int64_t f = 0; f < m; ++f) {
        double wx = 0;
        for (int64_t d = 0; d < p.headDim; ++d)
          wx += p.omega[f * p.headDim + d] * s * x(r, d);
        if (p.featureMap == Map::Favor) {
          out(r, f) = std::exp(wx - sq / 2) / std::sqrt(double(m));
        } else {
          out(r, f) = std::sin(wx) / std::sqrt(double(m));
          out(r, m + f) = std::cos(wx) / std::sqrt(double(m));
        }
      }
    }
    return out;
  };
  return perHead(p, [&](int64_t qIndex, int64_t kvIndex, int64_t) {
    Matrix q = phi(load(p.query, qIndex, p.queryLen, p.headDim));
    Matrix k = phi(load(p.key, kvIndex, p.keyLen, p.headDim));
    Matrix v = load(p.value, kvIndex, p.keyLen, p.valueDim);
    Matrix o(p.queryLen, p.valueDim);
    // The quadratic form: sum_j (phi(q_i) . phi(k_j)) v_j / sum_j ...
    for (int64_t i = 0; i < p.queryLen; ++i) {
      double den = 0;
      std::vector<double> num(p.valueDim, 0.0);
      int64_t lastKey = p.causal ? std::min(i, p.keyLen - 1) : p.keyLen - 1;
      for (int64_t j = 0; j <= lastKey; ++j) {
        double w = 0;
        for (int64_t f = 0; f < q.cols; ++f)
          w += q(i, f) * k(j, f);
        den += w;
        for (int64_t e = 0; e < p.valueDim; ++e)
          num[e] += w * v(j, e);
      }
      for (int64_t e = 0; e < p.valueDim; ++e)
        o(i, e) = den == 0 ? 0.0 : num[e] / den;
    }
    return o;
  });
}

std::vector<double>
attnrt::reference::fourierMix(const FourierMixProblem &p) {
  using Complex = std::complex<double>;
  const double pi = std::acos(-1.0);
  // The n-th power of the N-th root of unity exp(-2 pi i / N).
  auto root = [&](int64_t n, int64_t size) {
    return std::polar(1.0, -2.0 * pi * double(n % size) / double(size));
  };
  std::vector<double> out(p.batch * p.length * p.hidden);
  std::vector<Complex> rows(p.length * p.hidden);
  for (int64_t b = 0; b < p.batch; ++b) {
    const float *x = p.input + b * p.length * p.hidden;
    // DFT along the hidden axis of every row.
    for (int64_t l = 0; l < p.length; ++l)
      for (int64_t k = 0; k < p.hidden; ++k) {
        Complex sum = 0;
        for (int64_t d = 0; d < p.hidden; ++d)
          sum += double(x[l * p.hidden + d]) * root(k * d, p.hidden);
        rows[l * p.hidden + k] = sum;
      }
    // DFT along the sequence axis, real part.
    for (int64_t k1 = 0; k1 < p.length; ++k1)
      for (int64_t k2 = 0; k2 < p.hidden; ++k2) {
        Complex sum = 0;
        for (int64_t l = 0; l < p.length; ++l)
          sum += rows[l * p.hidden + k2] * root(k1 * l, p.length);
        out[(b * p.length + k1) * p.hidden + k2] = sum.real();
      }
  }
  return out;
}
