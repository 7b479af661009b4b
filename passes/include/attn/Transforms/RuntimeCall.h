//===- RuntimeCall.h - calls of the runtime's support functions -*- C++ -*-===//
//
// Some steps have no good expression as linalg (an FFT, a sort, a top-k
// selection): the lowerings call a function of libattn_support.so instead,
// through MLIR's C interface, on tensors that are bufferized at the call.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_RUNTIMECALL_H
#define ATTN_TRANSFORMS_RUNTIMECALL_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace mlir::attn {

/// Calls `void name(inputs..., outputs...)` (declared private in the
/// enclosing module with `llvm.emit_c_interface`; every argument a memref
/// with dynamic sizes of its tensor's rank and element type) on the buffers
/// of `inputs` and on fresh 64-byte-aligned buffers of `outputTypes`
/// (`dynamicSizes[i]` sizing the dynamic dimensions of output i), and
/// returns those as tensors.
SmallVector<Value>
createRuntimeCall(OpBuilder &b, Location loc, StringRef name,
                  ValueRange inputs, ArrayRef<RankedTensorType> outputTypes,
                  ArrayRef<SmallVector<Value>> dynamicSizes = {});

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_RUNTIMECALL_H
