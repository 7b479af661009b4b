//===- GpuBackwardKernel.h - attn.attention_grad as GPU kernels -*- C++ -*-===//
//
// The GPU lowering of the backward (GpuBackwardKernel.cpp, whose file
// comment describes the two kernels): a function that returns the
// gradients of one attn.attention_grad of its arguments becomes the kernels
// `<name>` (dK and dV) and `<name>_query_grad` (dQ), which the runtime runs
// in that order (docs/Gpu.md, "Backward").
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOGPU_GPUBACKWARDKERNEL_H
#define ATTN_CONVERSION_ATTNTOGPU_GPUBACKWARDKERNEL_H

#include "attn/Analysis/TargetDescription.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::attn {

/// The attn.attention_grad `host` computes from its arguments and returns
/// (all its results, in order), or null.
AttentionGradOp matchAttentionGradFunction(func::FuncOp host);

/// Why `op` in `host` has no GPU kernels yet (an error at its location), or
/// success.
LogicalResult checkGpuBackwardSupported(func::FuncOp host, AttentionGradOp op,
                                        const TargetDescription &target);

/// Builds the two kernels of `host` (checked by checkGpuBackwardSupported)
/// in `module`: `<name>` writing results 1 and 2 (dK, dV), then
/// `<name>_query_grad` writing result 0 (dQ).
SmallVector<gpu::GPUFuncOp>
buildGpuBackwardKernels(func::FuncOp host, AttentionGradOp op,
                        const TargetDescription &target,
                        gpu::GPUModuleOp module);

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOGPU_GPUBACKWARDKERNEL_H
