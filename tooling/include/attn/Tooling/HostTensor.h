//===- HostTensor.h - aligned host buffers for kernel operands --*- C++ -*-===//
#ifndef ATTN_TOOLING_HOSTTENSOR_H
#define ATTN_TOOLING_HOSTTENSOR_H

#include "attn/Runtime/MemRefDescriptor.h"
#include "llvm/ADT/ArrayRef.h"
#include <cstdlib>
#include <memory>
#include <vector>

namespace attnrt {

/// A dense row-major tensor in 64-byte aligned host memory (a cache line,
/// and the width of an AVX-512 register), zero-initialized.
class HostTensor {
public:
  HostTensor(llvm::ArrayRef<int64_t> shape, int64_t elementBytes);

  llvm::ArrayRef<int64_t> getShape() const { return shape; }
  int64_t getNumElements() const { return numElements; }
  int64_t getSizeInBytes() const { return numElements * elementBytes; }
  void *data() { return storage.get(); }
  template <typename T> T *as() { return static_cast<T *>(data()); }

  /// The C-interface descriptor of this tensor (valid while it lives).
  MemRefDescriptor descriptor() { return MemRefDescriptor(data(), shape); }

private:
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::vector<int64_t> shape;
  int64_t numElements, elementBytes;
  std::unique_ptr<void, Free> storage;
};

} // namespace attnrt

#endif // ATTN_TOOLING_HOSTTENSOR_H
