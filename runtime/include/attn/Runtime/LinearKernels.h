//===- LinearKernels.h - matrix products compiled by attn -------*- C++ -*-===//
//
// The projections and feed-forward products of a layer as attn compiles
// them for this CPU: a `linalg.matmul` that attn-matmul-to-cpu-gemm lowers
// to its register-blocked GEMM, JIT-compiled once per (in, out) and run on
// any number of rows. Packed weights may be kept in bf16 or f16 (half the
// bytes; widened to f32 as the micro-kernel reads them, f32 sums).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_LINEARKERNELS_H
#define ATTN_RUNTIME_LINEARKERNELS_H

#include "attn/Runtime/HalfFloat.h"
#include "attn/Runtime/HostCompiler.h"
#include <cstdint>
#include <memory>
#include <vector>

namespace attnrt {

/// How the weight of a product is stored.
enum class WeightLayout {
  OutByIn, ///< [out, in]: PyTorch's nn.Linear, safetensors files
  InByOut, ///< [in, out]: the GEMM packs it with vector loads
  Packed,  ///< pack()'s panels: nothing to pack per call (constant weights)
};

class CompiledLinear {
public:
  /// `weightFormat` other than F32 needs WeightLayout::Packed.
  static llvm::Expected<std::unique_ptr<CompiledLinear>>
  create(int64_t in, int64_t out, WeightLayout layout,
         const HostCompileOptions &options,
         FloatFormat weightFormat = FloatFormat::F32);
  ~CompiledLinear();

  /// The panels a Packed kernel reads, from W stored [out, in]:
  /// [ceil(out / width)][in][width], zeros past `out`, width = panelWidth().
  std::vector<float> pack(const float *outByIn) const;
  /// The same panels in the kernel's 16-bit weight format (rounded to
  /// nearest even); for kernels created with one. bf16 on AMX: panels of 16
  /// columns in k pairs ([2 ceil(out / 32)][16 ceil(in / 32)][32]).
  std::vector<uint16_t> packHalf(const float *outByIn) const;
  /// Columns per panel (mlir::attn::cpuGemmPanelWidth of the vector width).
  int64_t panelWidth() const { return width; }

  /// y[rows, out] += x[rows, in] * W (W^T for OutByIn; pack()'s or
  /// packHalf()'s result for Packed).
  llvm::Error accumulate(const float *x, int64_t rows, const void *weight,
                         float *y) const;

  int64_t in() const { return inFeatures; }
  int64_t out() const { return outFeatures; }
  WeightLayout layout() const { return weightLayout; }
  FloatFormat weightFormat() const { return format; }
  /// Whether bf16 weights are packed in k pairs for AMX tiles (the host
  /// allows them): products of bf16-rounded x and W, f32 sums.
  bool runsOnAmx() const { return amxPairs; }

private:
  struct Impl;
  CompiledLinear(std::unique_ptr<Impl> impl, int64_t in, int64_t out,
                 WeightLayout layout, int64_t width, FloatFormat format,
                 bool amxPairs);
  /// AMX layout: 16 columns per panel, panels in pairs, k's in 32s.
  static constexpr int64_t kAmxPanelWidth = 16;
  static int64_t amxPanels(int64_t out) { return 2 * ((out + 31) / 32); }
  static int64_t amxPairRows(int64_t in) { return 16 * ((in + 31) / 32); }
  template <typename T, typename Convert>
  std::vector<T> packAs(const float *outByIn, Convert convert) const;
  std::unique_ptr<Impl> impl;
  int64_t inFeatures, outFeatures, width;
  WeightLayout weightLayout;
  FloatFormat format;
  bool amxPairs;
};

} // namespace attnrt

#endif // ATTN_RUNTIME_LINEARKERNELS_H
