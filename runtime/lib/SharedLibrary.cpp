//===- SharedLibrary.cpp - call kernels from attn-compile --emit=so -------===//
#include "attn/Runtime/Jit.h"
#include "llvm/Support/DynamicLibrary.h"

using namespace attnrt;

llvm::Expected<std::unique_ptr<SharedLibraryKernel>>
SharedLibraryKernel::load(llvm::StringRef path) {
  std::string error;
  // Kept loaded for the life of the process, as dlopen'ed plugins usually are.
  llvm::sys::DynamicLibrary library =
      llvm::sys::DynamicLibrary::getPermanentLibrary(path.str().c_str(),
                                                     &error);
  if (!library.isValid())
    return llvm::createStringError(path + ": " + error);
  return std::unique_ptr<SharedLibraryKernel>(
      new SharedLibraryKernel(path.str()));
}

llvm::Error
SharedLibraryKernel::call(llvm::StringRef function,
                          llvm::ArrayRef<MemRefDescriptor *> arguments) {
  std::string symbol = ("_mlir_ciface_" + function).str();
  void *address =
      llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(symbol.c_str());
  if (!address)
    return llvm::createStringError(path + ": no symbol " + symbol);
  // The C interface passes one descriptor pointer per memref; C cannot call
  // with a run-time arity, so dispatch on the count.
  std::vector<void *> p;
  for (MemRefDescriptor *descriptor : arguments)
    p.push_back(descriptor->get());
  using V = void *;
  switch (p.size()) {
  case 1: reinterpret_cast<void (*)(V)>(address)(p[0]); break;
  case 2: reinterpret_cast<void (*)(V, V)>(address)(p[0], p[1]); break;
  case 3: reinterpret_cast<void (*)(V, V, V)>(address)(p[0], p[1], p[2]); break;
  case 4:
    reinterpret_cast<void (*)(V, V, V, V)>(address)(p[0], p[1], p[2], p[3]);
    break;
  case 5:
    reinterpret_cast<void (*)(V, V, V, V, V)>(address)(p[0], p[1], p[2], p[3],
                                                        p[4]);
    break;
  case 6:
    reinterpret_cast<void (*)(V, V, V, V, V, V)>(address)(p[0], p[1], p[2],
                                                           p[3], p[4], p[5]);
    break;
  case 7:
    reinterpret_cast<void (*)(V, V, V, V, V, V, V)>(address)(
        p[0], p[1], p[2], p[3], p[4], p[5], p[6]);
    break;
  case 8:
    reinterpret_cast<void (*)(V, V, V, V, V, V, V, V)>(address)(
        p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
    break;
  case 9:
    reinterpret_cast<void (*)(V, V, V, V, V, V, V, V, V)>(address)(
        p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]);
    break;
  default:
    return llvm::createStringError(
        "functions with more than 8 operands are not supported by the "
        "shared-library loader");
  }
  return llvm::Error::success();
}
