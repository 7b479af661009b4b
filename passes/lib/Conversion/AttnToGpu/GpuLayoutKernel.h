//===- GpuLayoutKernel.h - a change of layout as a GPU kernel ---*- C++ -*-===//
//
// The GPU lowering of a function that returns its one argument rearranged
// by a chain of layout ops: tensor.expand_shape, tensor.collapse_shape,
// linalg.transpose, tensor.extract_slice (unit strides) and tensor.pad (by
// a constant). Each element of the result is read from where the chain
// takes it (or is the pad's value), so no intermediate tensor exists
// (GpuLayoutKernel.cpp). A layer stack on a GPU splits a QKV product's
// rows into heads at the end of the attention's capacity, and merges the
// attention's heads back into rows for the output projection, with such
// kernels: Q, K and V never leave the device (docs/Gpu.md, "Layouts").
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOGPU_GPULAYOUTKERNEL_H
#define ATTN_CONVERSION_ATTNTOGPU_GPULAYOUTKERNEL_H

#include "attn/Analysis/TargetDescription.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::attn {

/// The layout ops of `host`, from its argument to its result, when its
/// body is one such chain (with the pads' constants), else empty. Whether
/// the kernel covers it is checkGpuLayoutSupported's question.
SmallVector<Operation *> matchLayoutFunction(func::FuncOp host);

/// Why the chain of `host` has no GPU kernel (an error at the op that
/// stops it), or success.
LogicalResult checkGpuLayoutSupported(func::FuncOp host,
                                      ArrayRef<Operation *> chain,
                                      const TargetDescription &target);

/// Builds the kernel of `host` (checked by checkGpuLayoutSupported) in
/// `module`, named as `host`, binding `arg0` and `result0`.
gpu::GPUFuncOp buildGpuLayoutKernel(func::FuncOp host,
                                    ArrayRef<Operation *> chain,
                                    const TargetDescription &target,
                                    gpu::GPUModuleOp module);

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOGPU_GPULAYOUTKERNEL_H
