//===- GpuArtifact.h - attn-compile --target=vulkan|cuda --------*- C++ -*-===//
#ifndef ATTN_TOOLS_ATTN_COMPILE_GPUARTIFACT_H
#define ATTN_TOOLS_ATTN_COMPILE_GPUARTIFACT_H

#include "attn/Compiler/GpuCompiler.h"
#include "mlir/IR/BuiltinOps.h"

namespace attntools {

/// Compiles `module` with `options` (its GPU target, TF32 or 3xTF32
/// products for f32, query rows per workgroup) and writes the kernels to
/// `outputPath` (.spv or .ptx; .cubin beside it when ptxas is found) and
/// their launch descriptors to the same path with extension .json.
/// Returns the exit status.
int writeGpuArtifact(mlir::ModuleOp module,
                     const attnrt::GpuCompileOptions &options,
                     llvm::StringRef outputPath);

} // namespace attntools

#endif // ATTN_TOOLS_ATTN_COMPILE_GPUARTIFACT_H
