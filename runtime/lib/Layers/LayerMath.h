//===- LayerMath.h - f32 building blocks of a layer -------------*- C++ -*-===//
//
// What surrounds attention and the products in a layer: norms,
// activations, positions and head-layout copies, all O(L * d); compiled
// with the host's vector width (see the CMakeLists) so GELU's erf runs on
// vectors.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_TRANSFORMER_LAYERMATH_H
#define ATTN_RUNTIME_TRANSFORMER_LAYERMATH_H

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace attnrt::layermath {

/// std::allocator whose default construction leaves elements uninitialized:
/// scratch buffers that a product or a copy then writes whole need no
/// zeroing pass (a memset of every buffer was 2 % of a BERT layer).
template <typename T> struct UninitializedAllocator : std::allocator<T> {
  template <typename U> struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U> &) noexcept {}
  template <typename U> void construct(U *p) noexcept {
    ::new (static_cast<void *>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U *p, Args &&...args) {
    ::new (static_cast<void *>(p)) U(std::forward<Args>(args)...);
  }
};
/// A float buffer that is written whole before it is read.
using Scratch = std::vector<float, UninitializedAllocator<float>>;
/// The same for bf16 bits.
using Scratch16 = std::vector<uint16_t, UninitializedAllocator<uint16_t>>;

/// In place over rows of `width`: LayerNorm (bias may be empty) or RMSNorm.
void layerNorm(float *x, int64_t rows, int64_t width, const float *weight,
               const float *bias, double eps);
void rmsNorm(float *x, int64_t rows, int64_t width, const float *weight,
             double eps);

/// In place: relu, gelu (erf), gelu_tanh.
void activate(const std::string &activation, float *x, int64_t count);
/// gate[i] = silu(gate[i]) * up[i] (SwiGLU).
void siluTimes(float *gate, const float *up, int64_t count);

/// Every row of y[rows, width] = `row` (zeros when null), on the OpenMP
/// threads: the start of a product that accumulates.
void broadcastRows(float *y, int64_t rows, const float *row, int64_t width);

/// x += y.
void add(float *x, const float *y, int64_t count);

/// [B, L, H * D] -> [B, H, L, D] and back. `rowStride` (0: H * D) lets
/// split read H heads out of wider rows (a fused Q/K/V projection).
void splitHeads(const float *x, int64_t batch, int64_t length, int64_t heads,
                int64_t dim, float *out, int64_t rowStride = 0);
void mergeHeads(const float *x, int64_t batch, int64_t length, int64_t heads,
                int64_t dim, float *out);

/// Rotary embedding in place on x [B, H, L, D], row l at position
/// first + l (docs/Dialect.md, attn.rope).
void rope(float *x, int64_t batch, int64_t heads, int64_t length, int64_t dim,
          int64_t first, double base, bool interleaved);

/// bf16 operands of an attention kernel that takes them: `count` floats
/// rounded to nearest even (bits in `out`), and widened back.
void roundToBf16(const float *x, int64_t count, uint16_t *out);
void widenBf16(const uint16_t *x, int64_t count, float *out);

/// The sinusoidal encoding of position `pos`, entry `i` of `width`
/// (Vaswani et al.: sin on even, cos on odd entries).
double sinusoid(int64_t pos, int64_t i, int64_t width);

} // namespace attnrt::layermath

#endif // ATTN_RUNTIME_TRANSFORMER_LAYERMATH_H
