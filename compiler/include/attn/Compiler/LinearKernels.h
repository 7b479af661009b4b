//===- LinearKernels.h - matrix products compiled by attn -------*- C++ -*-===//
//
// The projections and feed-forward products of a layer as attn compiles
// them for this CPU: a `linalg.matmul` that attn-matmul-to-cpu-gemm lowers
// to its register-blocked GEMM, JIT-compiled once per (in, out) and run on
// any number of rows. Packed weights may be kept in bf16 or f16 (half the
// bytes; widened to f32 as the micro-kernel reads them, f32 sums). A kernel
// may finish its result in the same pass (bias, activation, SwiGLU's gate,
// residual: LinearEpilogue.h).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_COMPILER_LINEARKERNELS_H
#define ATTN_COMPILER_LINEARKERNELS_H

#include "attn/Compiler/HostCompiler.h"
#include "attn/Runtime/HalfFloat.h"
#include "attn/Runtime/LinearEpilogue.h"
#include "attn/Runtime/PackedPanels.h"
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

/// The panels attn's GEMM reads a packed weight from, for one (in, out) on
/// this host (PackedPanels.h), in f32, bf16 or f16; bf16 in k pairs where
/// AMX tiles or vdpbf16ps run the products.
class LinearPanels {
public:
  /// For kernels compiled for this host with `options` (hostTarget).
  LinearPanels(int64_t in, int64_t out, const HostCompileOptions &options,
               FloatFormat format);
  /// For kernels compiled for `target` (attn-compile's artifacts): its
  /// GEMM's panel width; bf16 weights in k pairs where its bf16 products
  /// run on AMX tiles or by vdpbf16ps.
  LinearPanels(int64_t in, int64_t out,
               const mlir::attn::TargetDescription &target, FloatFormat format);
  /// From W stored [out, in]: f32 panels.
  std::vector<float> pack(const float *outByIn) const;
  /// The same in the 16-bit format (rounded to nearest even).
  std::vector<uint16_t> packHalf(const float *outByIn) const;
  /// The packed buffer's shape.
  std::vector<int64_t> shape() const { return panelLayout.shape(); }
  /// Columns per panel (mlir::attn::cpuGemmPanelWidth of the vector width,
  /// 16 on AMX).
  int64_t width() const { return panelLayout.width; }
  FloatFormat format() const { return weightFormat; }
  /// bf16 in k pairs: products of x rounded to bf16 (AMX or vdpbf16ps).
  bool pairs() const { return panelLayout.pairs; }
  const PanelLayout &layout() const { return panelLayout; }

private:
  static constexpr int64_t kAmxPanelWidth = 16;
  PanelLayout panelLayout;
  FloatFormat weightFormat;
};

/// The `func.func @<name>` of a product of `panels`' (in, out) with weights
/// in `layout` and `epilogue` (x, the weight, then the bias and the other
/// operand where the epilogue reads them, y last), as MLIR source that
/// attn-matmul-to-cpu-gemm lowers; an error for combinations no kernel
/// takes. On buffers (y an argument: CompiledLinear JIT-compiles these) or
/// on tensors (y the result; packed weights, no accumulation: `attn-compile`
/// puts a layer's into its artifact, where calls are checked against the
/// signature).
/// The `func.func @<name>` of a GPU layer product (GpuLinearKernel.h): y
/// [rows, out] = x [rows, in] W^T with W [out, in] as read, in
/// `weightFormat` (16-bit weights widened as the kernel reads them),
/// finished by `epilogue` (not accumulating; operands x, W, then the bias
/// and the other operand where it reads them), on tensors of static
/// shapes.
std::string gpuLinearKernelSource(llvm::StringRef name, int64_t rows,
                                  int64_t in, int64_t out,
                                  const LinearEpilogue &epilogue,
                                  FloatFormat weightFormat = FloatFormat::F32);

llvm::Expected<std::string> linearKernelSource(llvm::StringRef name,
                                               WeightLayout layout,
                                               const LinearPanels &panels,
                                               const LinearEpilogue &epilogue,
                                               bool onTensors);

class CompiledLinear {
public:
  /// `weightFormat` other than F32 needs WeightLayout::Packed; so does an
  /// epilogue other than the plain accumulation.
  static llvm::Expected<std::unique_ptr<CompiledLinear>>
  create(int64_t in, int64_t out, WeightLayout layout,
         const HostCompileOptions &options,
         FloatFormat weightFormat = FloatFormat::F32,
         LinearEpilogue epilogue = {});
  ~CompiledLinear();

  /// The panels a Packed kernel reads (LinearPanels::pack / packHalf).
  std::vector<float> pack(const float *outByIn) const {
    return panels.pack(outByIn);
  }
  std::vector<uint16_t> packHalf(const float *outByIn) const {
    return panels.packHalf(outByIn);
  }
  int64_t panelWidth() const { return panels.width(); }

  /// y[rows, out] += x[rows, in] * W (W^T for OutByIn; pack()'s or
  /// packHalf()'s result for Packed); for kernels without an epilogue.
  llvm::Error accumulate(const float *x, int64_t rows, const void *weight,
                         float *y) const;
  /// The product and the kernel's epilogue: `bias` [out] where it adds one,
  /// `other` [rows, out] where it reads one (neither may alias y).
  llvm::Error run(const float *x, int64_t rows, const void *weight,
                  const float *bias, const float *other, float *y) const;

  int64_t in() const { return inFeatures; }
  int64_t out() const { return outFeatures; }
  WeightLayout layout() const { return weightLayout; }
  FloatFormat weightFormat() const { return panels.format(); }
  const LinearEpilogue &epilogue() const { return finish; }
  /// Whether bf16 weights are packed in k pairs for AMX tiles or vdpbf16ps
  /// (the host has them): products of bf16-rounded x and W, f32 sums.
  bool roundsInputToBf16() const { return panels.pairs(); }

private:
  struct Impl;
  CompiledLinear(std::unique_ptr<Impl> impl, int64_t in, int64_t out,
                 WeightLayout layout, LinearPanels panels,
                 LinearEpilogue epilogue);
  std::unique_ptr<Impl> impl;
  int64_t inFeatures, outFeatures;
  WeightLayout weightLayout;
  LinearPanels panels;
  LinearEpilogue finish;
};

} // namespace attnrt

#endif // ATTN_COMPILER_LINEARKERNELS_H
