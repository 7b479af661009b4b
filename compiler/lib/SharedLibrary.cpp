//===- SharedLibrary.cpp - call kernels from attn-compile --emit=so -------===//
#include "attn/Compiler/Jit.h"
#include "attn/Runtime/CInterfaceCall.h"
#include "attn/Runtime/ElfCheck.h"
#include "llvm/Support/DynamicLibrary.h"

using namespace attnrt;

llvm::Expected<std::unique_ptr<SharedLibraryKernel>>
SharedLibraryKernel::load(llvm::StringRef path) {
  // A truncated file would fault inside dlopen (SIGBUS), not fail.
  if (std::string problem = elfProblem(path.str().c_str()); !problem.empty())
    return llvm::createStringError(problem);
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
  std::vector<void *> pointers;
  for (MemRefDescriptor *descriptor : arguments)
    pointers.push_back(descriptor->get());
  if (!callCInterface(address, pointers))
    return llvm::createStringError(
        "functions with more than 8 operands are not supported by the "
        "shared-library loader");
  return llvm::Error::success();
}
