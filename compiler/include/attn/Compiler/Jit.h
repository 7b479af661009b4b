//===- Jit.h - run compiled attn kernels in process -------------*- C++ -*-===//
//
// Loads a module already lowered to the LLVM dialect (e.g. by
// attn-cpu-pipeline) with MLIR's ExecutionEngine and calls functions through
// their C interface (`llvm.emit_c_interface`).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_COMPILER_JIT_H
#define ATTN_COMPILER_JIT_H

#include "attn/Runtime/MemRefDescriptor.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <memory>
#include <vector>

namespace attnrt {

/// Compiled attention code that can be called through the C interface.
class Kernel {
public:
  virtual ~Kernel() = default;
  /// Calls `_mlir_ciface_<function>` with pointers to the descriptors: the
  /// inputs, then one caller-owned output per result of the source function
  /// (destination-passing style, docs/Runtime.md, "Calling convention").
  virtual llvm::Error call(llvm::StringRef function,
                           llvm::ArrayRef<MemRefDescriptor *> arguments) = 0;
};

/// A module JIT-compiled in this process.
class JitKernel : public Kernel {
public:
  /// JIT-compiles `module` (LLVM dialect) for the host at -O3.
  static llvm::Expected<std::unique_ptr<JitKernel>>
  create(mlir::ModuleOp module);

  llvm::Error call(llvm::StringRef function,
                   llvm::ArrayRef<MemRefDescriptor *> arguments) override;

private:
  explicit JitKernel(std::unique_ptr<mlir::ExecutionEngine> engine)
      : engine(std::move(engine)) {}
  std::unique_ptr<mlir::ExecutionEngine> engine;
};

/// A shared library built by `attn-compile --emit=so`, loaded with dlopen.
class SharedLibraryKernel : public Kernel {
public:
  static llvm::Expected<std::unique_ptr<SharedLibraryKernel>>
  load(llvm::StringRef path);

  llvm::Error call(llvm::StringRef function,
                   llvm::ArrayRef<MemRefDescriptor *> arguments) override;

private:
  explicit SharedLibraryKernel(std::string path) : path(std::move(path)) {}
  std::string path;
};

} // namespace attnrt

#endif // ATTN_COMPILER_JIT_H
