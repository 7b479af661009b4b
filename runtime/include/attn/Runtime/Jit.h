//===- Jit.h - run compiled attn kernels in process -------------*- C++ -*-===//
//
// Loads a module already lowered to the LLVM dialect (e.g. by
// attn-cpu-pipeline) with MLIR's ExecutionEngine and calls functions through
// their C interface (`llvm.emit_c_interface`).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_JIT_H
#define ATTN_RUNTIME_JIT_H

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <memory>
#include <vector>

namespace attnrt {

/// The C-interface descriptor of a contiguous ranked memref:
/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
class MemRefDescriptor {
public:
  MemRefDescriptor() = default;
  MemRefDescriptor(void *data, llvm::ArrayRef<int64_t> shape);
  /// An empty descriptor of `rank` for a function to fill (results).
  static MemRefDescriptor forResult(int64_t rank);

  void *get() { return storage.data(); }
  void *alignedData() const {
    return reinterpret_cast<void *>(storage[1]);
  }
  void *allocatedData() const {
    return reinterpret_cast<void *>(storage[0]);
  }
  int64_t size(int64_t d) const { return storage[3 + d]; }

private:
  std::vector<int64_t> storage;
};

/// Compiled attention code that can be called through the C interface.
class Kernel {
public:
  virtual ~Kernel() = default;
  /// Calls `_mlir_ciface_<function>` with pointers to the descriptors (the
  /// result descriptor first when the function returns a memref).
  virtual llvm::Error call(llvm::StringRef function,
                           llvm::ArrayRef<MemRefDescriptor *> arguments) = 0;
};

/// A module JIT-compiled in this process.
class JitKernel : public Kernel {
public:
  /// JIT-compiles `module` (LLVM dialect) for the host at -O3.
  static llvm::Expected<std::unique_ptr<JitKernel>> create(mlir::ModuleOp module);

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

#endif // ATTN_RUNTIME_JIT_H
