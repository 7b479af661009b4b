//===- GpuArtifact.h - attn-compile --target=vulkan|cuda --------*- C++ -*-===//
#ifndef ATTN_TOOLS_ATTN_COMPILE_GPUARTIFACT_H
#define ATTN_TOOLS_ATTN_COMPILE_GPUARTIFACT_H

#include "mlir/IR/BuiltinOps.h"

namespace attntools {

/// Compiles `module` for GPU `target` and writes the kernels to
/// `outputPath` (.spv or .ptx; .cubin beside it when ptxas is found) and
/// their launch descriptors to the same path with extension .json.
/// With `tf32` (or `tf32x3`), f32 attention takes the tensor-core kernel
/// with TF32 (3xTF32) products. Returns the exit status.
int writeGpuArtifact(mlir::ModuleOp module, llvm::StringRef target,
                     llvm::StringRef outputPath, bool tf32, bool tf32x3);

} // namespace attntools

#endif // ATTN_TOOLS_ATTN_COMPILE_GPUARTIFACT_H
