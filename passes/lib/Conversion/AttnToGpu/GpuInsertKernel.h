//===- GpuInsertKernel.h - rows inserted in place on a GPU ------*- C++ -*-===//
//
// The GPU lowering of a function that returns one `tensor.insert_slice` of
// an argument into another argument, at offsets that are constants or read
// from i32 arguments at run time:
//
//   %at = tensor.extract %offsets[%c0] : tensor<1xi32>
//   %row = arith.index_cast %at : i32 to index
//   %r = tensor.insert_slice %rows into %cache[0, 0, %row, 0] [...] [1, ...]
//   return %r
//
// The destination is updated in place: the kernel binds it as an argument
// it writes (access "readwrite") and stores the inserted elements only, so
// that a call costs the slice, not the destination. The runtime returns
// that argument as the function's result (docs/Gpu.md, "Kernel
// descriptors"). Elements whose place falls outside the destination (an
// offset past its end, or below 0) are dropped. A layer stack on a GPU
// appends a decoding step's keys and values to the KV cache it keeps on
// the device with such kernels, at the cache's length, known at run time.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOGPU_GPUINSERTKERNEL_H
#define ATTN_CONVERSION_ATTNTOGPU_GPUINSERTKERNEL_H

#include "attn/Analysis/TargetDescription.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::attn {

/// The insert_slice `host` returns, when its body is that op (with its
/// offsets' reads and constants) and nothing else, else null. Whether the
/// kernel covers it is checkGpuInsertSupported's question.
tensor::InsertSliceOp matchInsertFunction(func::FuncOp host);

/// Why `insert` has no GPU kernel (an error at it), or success.
LogicalResult checkGpuInsertSupported(func::FuncOp host,
                                      tensor::InsertSliceOp insert,
                                      const TargetDescription &target);

/// Builds the kernel of `host` (checked by checkGpuInsertSupported) in
/// `module`, named as `host`, binding every `argN`, the destination's
/// "readwrite", and no result.
gpu::GPUFuncOp buildGpuInsertKernel(func::FuncOp host,
                                    tensor::InsertSliceOp insert,
                                    const TargetDescription &target,
                                    gpu::GPUModuleOp module);

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOGPU_GPUINSERTKERNEL_H
