//===- GpuRowReductionKernel.h - row reductions as a GPU kernel -*- C++ -*-===//
//
// The GPU lowering of a function whose body reduces rows along their last
// dimension and computes element-wise around the reductions: a LayerNorm,
// an RMSNorm, a softmax, a residual sum before a norm. Its body is
// linalg.generic ops of three kinds over the result's shape [rows..., N]:
//
//   element:   all loops parallel over [rows..., N] (from a tensor.empty);
//   reduction: the same loops, the last one a reduction, the result [rows...]
//              from a linalg.fill of a constant, the body ending in one
//              addf / mulf / maximumf / minimumf / maxnumf / minnumf of its
//              accumulator;
//   row:       all loops parallel over [rows...] (rsqrt(var + eps)).
//
// Each generic reads the function's arguments through any indexing map
// within their bounds, the element results before it at its own element,
// and the row and reduction results before it at its row. The function
// returns an element result. f32 arithmetic; arguments f32, f16 or bf16.
//
// The kernel gives each row to one workgroup of 128 invocations. Element
// results are never stored: each is recomputed where it is read. Each
// reduction is one pass of the invocations over the row's columns, then
// subgroup shuffles and one barrier to add up their partial results; the
// row values
// then stay in registers for the passes after them, and a last pass stores
// the result. A layer stack on a GPU runs its norms with such kernels.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOGPU_GPUROWREDUCTIONKERNEL_H
#define ATTN_CONVERSION_ATTNTOGPU_GPUROWREDUCTIONKERNEL_H

#include "attn/Analysis/TargetDescription.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::attn {

/// The generics of `host`, in order, when its body is linalg.generic ops
/// (one at least with a reduction loop), linalg.fill, tensor.empty and
/// constants, and it returns a generic's result; else empty. Whether the
/// kernel covers them is checkGpuRowReductionSupported's question.
SmallVector<linalg::GenericOp> matchRowReductionFunction(func::FuncOp host);

/// Why the generics of `host` have no GPU kernel (an error at the first
/// that has none), or success.
LogicalResult
checkGpuRowReductionSupported(func::FuncOp host,
                              ArrayRef<linalg::GenericOp> generics,
                              const TargetDescription &target);

/// Builds the kernel of `host` (checked by checkGpuRowReductionSupported)
/// in `module`, named as `host`, binding `argN` and `result0`.
gpu::GPUFuncOp buildGpuRowReductionKernel(func::FuncOp host,
                                          ArrayRef<linalg::GenericOp> generics,
                                          const TargetDescription &target,
                                          gpu::GPUModuleOp module);

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOGPU_GPUROWREDUCTIONKERNEL_H
