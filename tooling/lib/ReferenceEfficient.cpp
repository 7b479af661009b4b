//===- ReferenceEfficient.cpp - plain references of the efficient ops -----===//
#include "attn/Tooling/ReferenceEfficient.h"
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
template <typename Fn> std::vector<double> perHead(const QkvProblem &p, Fn fn) {
  std::vector<double> out(p.batch * p.queryHeads * p.queryLen * p.valueDim);
  int64_t group = p.queryHeads / p.keyHeads;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.queryHeads; ++h) {
      Matrix o =
          fn(b * p.queryHeads + h, b * p.keyHeads + h / group, h / group);
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
    int64_t width = p.featureMap == Map::Rfa     ? 2 * m
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

namespace {

/// softmax(scale q . k_j) over the listed key rows j, applied to their
/// value rows: the output row (zeros when `keys` is empty) and the
/// log-sum-exp of the scores (-inf when empty).
std::pair<std::vector<double>, double>
attendRows(const Matrix &q, int64_t i, const Matrix &k, const Matrix &v,
           const std::vector<int64_t> &keys, double scale) {
  std::vector<double> out(v.cols, 0.0), scores;
  double max = -INFINITY;
  for (int64_t j : keys) {
    double dot = 0;
    for (int64_t d = 0; d < q.cols; ++d)
      dot += q(i, d) * k(j, d);
    scores.push_back(scale * dot);
    max = std::max(max, scores.back());
  }
  if (keys.empty())
    return {out, -INFINITY};
  double sum = 0;
  for (size_t t = 0; t < keys.size(); ++t) {
    double e = std::exp(scores[t] - max);
    sum += e;
    for (int64_t d = 0; d < v.cols; ++d)
      out[d] += e * v(keys[t], d);
  }
  for (double &x : out)
    x /= sum;
  return {out, max + std::log(sum)};
}

/// Rows of x scaled to unit length (zero rows stay zero).
Matrix unitRows(Matrix x) {
  for (int64_t r = 0; r < x.rows; ++r) {
    double norm2 = 0;
    for (int64_t d = 0; d < x.cols; ++d)
      norm2 += x(r, d) * x(r, d);
    for (int64_t d = 0; d < x.cols && norm2 > 0; ++d)
      x(r, d) /= std::sqrt(norm2);
  }
  return x;
}

} // namespace

std::vector<double> attnrt::reference::lsh(const LshProblem &p) {
  int64_t length = p.queryLen, half = p.buckets / 2;
  return perHead(p, [&](int64_t qIndex, int64_t kvIndex, int64_t) {
    Matrix x = load(p.query, qIndex, length, p.headDim);
    Matrix keys = unitRows(x);
    Matrix v = load(p.value, kvIndex, length, p.valueDim);
    // Per round: each query's output and log-sum-exp.
    std::vector<Matrix> outs;
    Matrix lse(p.rounds, length);
    for (int64_t r = 0; r < p.rounds; ++r) {
      Matrix rotation = load(p.rotations, r, p.headDim, half);
      Matrix projected = multiply(x, rotation);
      std::vector<int64_t> bucket(length);
      for (int64_t i = 0; i < length; ++i) {
        double best = -INFINITY;
        for (int64_t n = 0; n < 2 * half; ++n) {
          double value = n < half ? projected(i, n) : -projected(i, n - half);
          if (value > best) {
            best = value;
            bucket[i] = n;
          }
        }
      }
      std::vector<int64_t> order(length);
      for (int64_t i = 0; i < length; ++i)
        order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return bucket[a] < bucket[b];
      });
      Matrix out(length, p.valueDim);
      for (int64_t s = 0; s < length; ++s) {
        int64_t i = order[s], chunk = s / p.chunk;
        std::vector<int64_t> kept;
        for (int64_t t = std::max<int64_t>(0, (chunk - 1) * p.chunk);
             t < std::min(length, (chunk + 1) * p.chunk); ++t) {
          int64_t j = order[t];
          if (j != i && bucket[j] == bucket[i] && (!p.causal || j <= i))
            kept.push_back(j);
        }
        auto [row, rowLse] = attendRows(x, i, keys, v, kept, p.scale);
        std::copy(row.begin(), row.end(), out.data.begin() + i * p.valueDim);
        lse(r, i) = rowLse;
      }
      outs.push_back(std::move(out));
    }
    Matrix result(length, p.valueDim);
    for (int64_t i = 0; i < length; ++i) {
      double max = -INFINITY;
      for (int64_t r = 0; r < p.rounds; ++r)
        max = std::max(max, lse(r, i));
      if (max == -INFINITY) { // no key in any round: attends to itself
        for (int64_t d = 0; d < p.valueDim; ++d)
          result(i, d) = v(i, d);
        continue;
      }
      double total = 0;
      for (int64_t r = 0; r < p.rounds; ++r)
        total += std::exp(lse(r, i) - max);
      for (int64_t r = 0; r < p.rounds; ++r)
        for (int64_t d = 0; d < p.valueDim; ++d)
          result(i, d) += std::exp(lse(r, i) - max) / total * outs[r](i, d);
    }
    return result;
  });
}

std::vector<double> attnrt::reference::routing(const RoutingProblem &p) {
  Matrix centroids = unitRows(load(p.centroids, 0, p.clusters, p.headDim));
  // The topK rows of x closest to centroid c (largest dot product, then the
  // lower position), by a full sort.
  auto members = [&](const Matrix &x, int64_t c) {
    std::vector<double> score(x.rows);
    std::vector<int64_t> rows(x.rows);
    for (int64_t i = 0; i < x.rows; ++i) {
      rows[i] = i;
      for (int64_t d = 0; d < x.cols; ++d)
        score[i] += x(i, d) * centroids(c, d);
    }
    std::sort(rows.begin(), rows.end(), [&](int64_t a, int64_t b) {
      return score[a] > score[b] || (score[a] == score[b] && a < b);
    });
    rows.resize(p.topK);
    return rows;
  };
  return perHead(p, [&](int64_t qIndex, int64_t kvIndex, int64_t) {
    Matrix q = load(p.query, qIndex, p.queryLen, p.headDim);
    Matrix k = load(p.key, kvIndex, p.keyLen, p.headDim);
    Matrix v = load(p.value, kvIndex, p.keyLen, p.valueDim);
    Matrix sum(p.queryLen, p.valueDim);
    std::vector<int64_t> count(p.queryLen, 0);
    for (int64_t c = 0; c < p.clusters; ++c) {
      std::vector<int64_t> keys = members(k, c);
      for (int64_t i : members(q, c)) {
        std::vector<int64_t> kept;
        for (int64_t j : keys)
          if (!p.causal || j <= i)
            kept.push_back(j);
        std::vector<double> row = attendRows(q, i, k, v, kept, p.scale).first;
        for (int64_t d = 0; d < p.valueDim; ++d)
          sum(i, d) += row[d];
        ++count[i];
      }
    }
    for (int64_t i = 0; i < p.queryLen; ++i)
      for (int64_t d = 0; d < p.valueDim && count[i] > 0; ++d)
        sum(i, d) /= double(count[i]);
    return sum;
  });
}

std::vector<double> attnrt::reference::fourierMix(const FourierMixProblem &p) {
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

std::vector<double> attnrt::reference::rope(const RopeProblem &p) {
  std::vector<double> out(p.batch * p.heads * p.length * p.dim);
  const int64_t half = p.dim / 2;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t l = 0; l < p.length; ++l) {
        double t = p.positions.empty() ? double(l)
                   : int64_t(p.positions.size()) == p.length
                       ? double(p.positions[l])
                       : double(p.positions[b * p.length + l]);
        const float *x = p.input + ((b * p.heads + h) * p.length + l) * p.dim;
        double *y = out.data() + ((b * p.heads + h) * p.length + l) * p.dim;
        for (int64_t n = 0; n < half; ++n) {
          double theta = t * std::pow(p.base, -2.0 * double(n) / p.dim);
          int64_t a = p.interleaved ? 2 * n : n;
          int64_t c = p.interleaved ? 2 * n + 1 : n + half;
          y[a] = x[a] * std::cos(theta) - x[c] * std::sin(theta);
          y[c] = x[a] * std::sin(theta) + x[c] * std::cos(theta);
        }
      }
  return out;
}
