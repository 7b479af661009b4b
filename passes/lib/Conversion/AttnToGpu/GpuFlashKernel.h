//===- GpuFlashKernel.h - the GPU lowering of one tiled attention -*- C++
//-*-===//
//
// The emitter behind attn-to-gpu-kernels (AttnToGpuKernels.cpp): turns a
// function that computes one tiled attention (TiledForm.h) into a `gpu.func`
// kernel for Vulkan (SPIR-V) or CUDA (NVVM), docs/Gpu.md:
//
//   workgroup (t, h, b) = (query tile, query head, batch row), one
//   invocation per query row; per visited key tile: K and V rows staged in
//   workgroup memory, then each invocation runs the online softmax of its
//   row over the tile with q, m, l and acc in registers.
//
// The key tiles a workgroup visits come from the compile-time schedule
// (KernelPlan), uploaded as a buffer, or from run-time tile classes.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOGPU_GPUFLASHKERNEL_H
#define ATTN_CONVERSION_ATTNTOGPU_GPUFLASHKERNEL_H

#include "attn/Analysis/KernelPlan.h"
#include "attn/Transforms/TiledForm.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::attn {

/// Why `attention` in `host` has no GPU kernel yet (an error at its
/// location), or success.
LogicalResult checkGpuSupported(func::FuncOp host, TiledAttention attention,
                                const KernelPlan &plan,
                                const TargetDescription &target);

/// How f32 attention may use tensor cores: not at all (the scalar kernel),
/// with TF32 products (10-bit mantissas), or with 3xTF32 products (each
/// operand split into a TF32 high part and a TF32 low part, three mma per
/// product: about f32's error at three times TF32's work).
enum class F32Mma { None, Tf32, Tf32x3 };

/// How attn-to-gpu-kernels builds kernels (its options).
struct GpuKernelOptions {
  /// A buffer receiving, per workgroup, the key tiles it visited.
  bool countTiles = false;
  /// Vulkan: the tensor-core kernel, each mma.sync (or, with
  /// `emulateWgmma`, each warpgroup mma of sm_90a's kernel) carried out
  /// through workgroup memory, so that lavapipe runs its bookkeeping.
  bool emulateMma = false, emulateWgmma = false;
  F32Mma f32Mma = F32Mma::None;
  /// The most workgroups one query tile's key tiles are split over.
  int64_t maxKeySplits = 64;
};

/// Builds the kernel of `host` (checked by checkGpuSupported) as a gpu.func
/// named after it in `module`: the tensor-core kernel for f16 / bf16 (and
/// f32 unless `f32Mma` is None) on CUDA (and on Vulkan when emulated), on
/// warpgroup mma where the target has them (sm_90a) and the head dims are
/// whole 64-element swizzle atoms, else the scalar one
/// (GpuKernelEmitter.h); fewer workgroups than the target wants split their
/// key tiles over up to `maxKeySplits` workgroups (then a second kernel,
/// `<name>_merge`, combines the partial results). Its arguments are the
/// host function's arguments, then the schedule buffer (when the plan has
/// schedules), then two i32 per workgroup counting visited and partial key
/// tiles (`countTiles`), then the output. The launch (grid, bindings,
/// schedule contents) is recorded in attributes of the gpu.func
/// (docs/Gpu.md, "Kernel descriptors").
gpu::GPUFuncOp buildGpuFlashKernel(func::FuncOp host, TiledAttention attention,
                                   const KernelPlan &plan,
                                   const TargetDescription &target,
                                   gpu::GPUModuleOp module,
                                   const GpuKernelOptions &options);

/// Replaces each tensor.extract from a constant tensor in `func` (the tables
/// of score mods and mask patterns, which have no GPU lowering): small
/// tables by a chain of selects, larger ones by loads from a buffer the
/// kernel gains as its last argument (binding `tableN`, contents in
/// `attn.constants`).
LogicalResult lowerConstantTableLookups(gpu::GPUFuncOp func);

/// For NVVM, whose lowering turns math.tanh, math.fma, math.absf, ... into
/// libdevice calls (which need a CUDA toolkit at compile time): the
/// polynomial approximations of MLIR's math dialect, then multiply-add and
/// max(x, -x).
void lowerMathForNvvm(gpu::GPUFuncOp func);

/// Vulkan: each scf.for with results that may run no iteration, guarded by
/// an scf.if that yields its initial values when it does not. LLVM 22's
/// scf-to-spirv returns undefined values from such a loop (lavapipe: 0;
/// fixed upstream by llvm-project PR 206280, after 22).
void guardZeroTripLoops(gpu::GPUFuncOp func);

/// Both of the above, as every kernel needs them for `target`
/// (GpuKernelFinish.cpp).
LogicalResult finishGpuKernel(gpu::GPUFuncOp kernel,
                              const TargetDescription &target);

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOGPU_GPUFLASHKERNEL_H
