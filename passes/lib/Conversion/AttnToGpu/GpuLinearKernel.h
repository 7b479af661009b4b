//===- GpuLinearKernel.h - a layer's product as a GPU kernel ----*- C++ -*-===//
//
// The GPU lowering of a function that returns one `linalg.matmul` of its
// arguments, Y = X W (W stored [K, N]) or X W^T (W stored [N, K], as a
// layer's weights are read), started from zeros and finished by an
// element-wise epilogue on its arguments (bias [N], other [M, N]) where
// the function has one: a tiled GEMM kernel
// (GpuLinearKernel.cpp), so that a layer stack on a GPU runs its
// projections and feed-forward there with the weights kept on the device
// (docs/Gpu.md, "Products").
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOGPU_GPULINEARKERNEL_H
#define ATTN_CONVERSION_ATTNTOGPU_GPULINEARKERNEL_H

#include "attn/Analysis/TargetDescription.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::attn {

/// The linalg.matmul `host` returns, when its body is that product (on a
/// fill of a tensor.empty, with its constants), or that product finished
/// by one linalg.generic on its result (the epilogue: a bias, an
/// activation, SwiGLU's gate, a residual sum), else null. Whether the
/// kernel covers it is checkGpuLinearSupported's question.
linalg::MatmulOp matchLinearFunction(func::FuncOp host);

/// The epilogue of a matched product, or null.
linalg::GenericOp linearEpilogue(linalg::MatmulOp op);

/// Why the product of `host` has no GPU kernel (an error at its location),
/// or success.
LogicalResult checkGpuLinearSupported(func::FuncOp host, linalg::MatmulOp op,
                                      const TargetDescription &target);

/// Builds the kernel of `host` (checked by checkGpuLinearSupported) in
/// `module`, named as `host`, binding `arg0` (X), `arg1` (W), `result0`.
gpu::GPUFuncOp buildGpuLinearKernel(func::FuncOp host, linalg::MatmulOp op,
                                    const TargetDescription &target,
                                    gpu::GPUModuleOp module);

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOGPU_GPULINEARKERNEL_H
