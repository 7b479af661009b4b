//===- GpuElementwiseKernel.h - an element-wise generic as a GPU kernel ---===//
//
// The GPU lowering of a function that returns one element-wise
// `linalg.generic` of its arguments: all loops parallel, the result
// written at the loops' indices, each input read through its indexing map
// (any affine map within the input's bounds: a partner element
// `(d + D/2) mod D`, a table row `(s, d mod 32)`), the body of arith and
// math ops and linalg.index. f32 elements. A layer stack on a GPU rotates
// the queries and keys of its chained self-attention with such a kernel
// (RoPE from cosine and sine tables of the call's positions).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOGPU_GPUELEMENTWISEKERNEL_H
#define ATTN_CONVERSION_ATTNTOGPU_GPUELEMENTWISEKERNEL_H

#include "attn/Analysis/TargetDescription.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::attn {

/// The linalg.generic `host` returns, when its body is that generic (on a
/// tensor.empty, with constants) and nothing else, else null. Whether the
/// kernel covers it is checkGpuElementwiseSupported's question.
linalg::GenericOp matchElementwiseFunction(func::FuncOp host);

/// Why `op` has no GPU kernel (an error at it), or success.
LogicalResult checkGpuElementwiseSupported(func::FuncOp host,
                                           linalg::GenericOp op,
                                           const TargetDescription &target);

/// Builds the kernel of `host` (checked by checkGpuElementwiseSupported)
/// in `module`, named as `host`, binding `argN` and `result0`.
gpu::GPUFuncOp buildGpuElementwiseKernel(func::FuncOp host,
                                         linalg::GenericOp op,
                                         const TargetDescription &target,
                                         gpu::GPUModuleOp module);

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOGPU_GPUELEMENTWISEKERNEL_H
