//===- LayerMath.cpp - f32 building blocks of a layer ---------------------===//
#include "LayerMath.h"
#include "attn/Runtime/HalfFloat.h"
#include <omp.h>
#include <algorithm>
#include <cmath>
#include <cstring>

using namespace attnrt;

/// Splits [0, count) into a few chunks run on OpenMP threads (the
/// runtime compiled attention uses too): the element-wise steps are
/// memory-bound, two chunks per core is plenty.
template <typename F> static void forChunks(int64_t count, F body) {
  constexpr int64_t kMinChunk = 1 << 14;
  int64_t chunks = std::max<int64_t>(
      1, std::min<int64_t>(count / kMinChunk, 2 * omp_get_max_threads()));
  int64_t step = (count + chunks - 1) / chunks;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = c * step, end = std::min(count, begin + step);
    if (begin < end)
      body(begin, end);
  }
}

void layermath::layerNorm(float *x, int64_t rows, int64_t width,
                          const float *weight, const float *bias, double eps) {
#pragma omp parallel for schedule(static) if (rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    float *row = x + r * width;
    // Double sums; `omp simd` lets them run on vectors (reassociated).
    double sum = 0, squares = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < width; ++c)
      sum += row[c];
    double mean = sum / width;
#pragma omp simd reduction(+ : squares)
    for (int64_t c = 0; c < width; ++c)
      squares += (row[c] - mean) * (row[c] - mean);
    float inv = float(1.0 / std::sqrt(squares / width + eps));
    float m = float(mean);
    for (int64_t c = 0; c < width; ++c)
      row[c] = (row[c] - m) * inv * weight[c] + (bias ? bias[c] : 0.0f);
  }
}

void layermath::rmsNorm(float *x, int64_t rows, int64_t width,
                        const float *weight, double eps) {
#pragma omp parallel for schedule(static) if (rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    float *row = x + r * width;
    double squares = 0;
#pragma omp simd reduction(+ : squares)
    for (int64_t c = 0; c < width; ++c)
      squares += double(row[c]) * row[c];
    float inv = float(1.0 / std::sqrt(squares / width + eps));
    for (int64_t c = 0; c < width; ++c)
      row[c] = row[c] * inv * weight[c];
  }
}

/// erf(x) within 1.5e-7 (Abramowitz and Stegun 7.1.26), in a form the
/// loop vectorizer turns into vector code (glibc's erff is a scalar call
/// and took 8 % of a BERT layer). GELU's error from it is below 1e-7 * |x|.
static inline float vectorErf(float x) {
  float a = std::fabs(x);
  float t = 1.0f / (1.0f + 0.3275911f * a);
  float poly =
      t * (0.254829592f +
           t * (-0.284496736f +
                t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  float y = 1.0f - poly * expf(-a * a);
  return std::copysign(y, x);
}

void layermath::activate(const std::string &activation, float *x,
                         int64_t count) {
  if (activation == "relu") {
    forChunks(count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        x[i] = x[i] < 0 ? 0.0f : x[i]; // NaN stays NaN, as in PyTorch
    });
  } else if (activation == "gelu") {
    forChunks(count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        x[i] = 0.5f * x[i] * (1.0f + vectorErf(x[i] * float(M_SQRT1_2)));
    });
  } else if (activation == "gelu_tanh") {
    const float c = std::sqrt(2.0f / float(M_PI));
    forChunks(count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        x[i] = 0.5f * x[i] *
               (1.0f + tanhf(c * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
    });
  }
}

void layermath::siluTimes(float *gate, const float *up, int64_t count) {
  forChunks(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
  });
}

void layermath::broadcastRows(float *y, int64_t rows, const float *row,
                              int64_t width) {
  // Row by row: each row is a copy (or a fill) that runs on vectors; a
  // flat loop took a division per element (i % width), 5 % of a bf16 BERT
  // layer.
  constexpr int64_t kMinParallel = 1 << 15;
#pragma omp parallel for schedule(static) if (rows * width >= kMinParallel)
  for (int64_t r = 0; r < rows; ++r) {
    if (row)
      std::copy_n(row, width, y + r * width);
    else
      std::fill_n(y + r * width, width, 0.0f);
  }
}

void layermath::add(float *x, const float *y, int64_t count) {
  forChunks(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      x[i] += y[i];
  });
}

void layermath::roundToBf16(const float *x, int64_t count, uint16_t *out) {
  forChunks(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = floatToBFloat16Bits(x[i]);
  });
}

void layermath::widenBf16(const uint16_t *x, int64_t count, float *out) {
  forChunks(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = bfloat16BitsToFloat(x[i]);
  });
}

void layermath::splitHeads(const float *x, int64_t batch, int64_t length,
                           int64_t heads, int64_t dim, float *out,
                           int64_t rowStride) {
  if (!rowStride)
    rowStride = heads * dim;
  // On the OpenMP threads: alone, the copies of a fused Q/K/V projection
  // took 2 % of a BERT layer while the other thread waited.
  constexpr int64_t kMinParallel = 1 << 15;
#pragma omp parallel for collapse(2) schedule(static) if (batch * heads * length * dim >= kMinParallel)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t l = 0; l < length; ++l)
        std::memcpy(out + ((b * heads + h) * length + l) * dim,
                    x + (b * length + l) * rowStride + h * dim,
                    dim * sizeof(float));
}

void layermath::mergeHeads(const float *x, int64_t batch, int64_t length,
                           int64_t heads, int64_t dim, float *out) {
  constexpr int64_t kMinParallel = 1 << 15;
#pragma omp parallel for collapse(2) schedule(static) if (batch * heads * length * dim >= kMinParallel)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t l = 0; l < length; ++l)
        std::memcpy(out + ((b * length + l) * heads + h) * dim,
                    x + ((b * heads + h) * length + l) * dim,
                    dim * sizeof(float));
}

void layermath::rope(float *x, int64_t batch, int64_t heads, int64_t length,
                     int64_t dim, int64_t first, double base,
                     bool interleaved) {
  int64_t half = dim / 2;
  // Angles in double: positions reach 10^5 and more, where f32 phases lose
  // digits.
  std::vector<float> cosines(length * half), sines(length * half);
  for (int64_t l = 0; l < length; ++l)
    for (int64_t n = 0; n < half; ++n) {
      double theta = double(first + l) * std::pow(base, -2.0 * n / dim);
      cosines[l * half + n] = float(std::cos(theta));
      sines[l * half + n] = float(std::sin(theta));
    }
  for (int64_t row = 0; row < batch * heads * length; ++row) {
    float *v = x + row * dim;
    int64_t l = row % length;
    for (int64_t n = 0; n < half; ++n) {
      int64_t a = interleaved ? 2 * n : n, b = interleaved ? 2 * n + 1 : n + half;
      float c = cosines[l * half + n], s = sines[l * half + n];
      float xa = v[a], xb = v[b];
      v[a] = xa * c - xb * s;
      v[b] = xa * s + xb * c;
    }
  }
}

double layermath::sinusoid(int64_t pos, int64_t i, int64_t width) {
  double angle = double(pos) / std::pow(10000.0, double(i - i % 2) / width);
  return i % 2 == 0 ? std::sin(angle) : std::cos(angle);
}
