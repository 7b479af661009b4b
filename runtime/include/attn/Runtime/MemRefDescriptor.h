//===- MemRefDescriptor.h - C-interface memref descriptors ------*- C++ -*-===//
//
// What compiled kernels take through their C interface
// (`_mlir_ciface_<name>`): one pointer per operand to
// {allocated, aligned, offset, sizes[rank], strides[rank]}. Header-only and
// free of LLVM, for every caller of kernels.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_MEMREFDESCRIPTOR_H
#define ATTN_RUNTIME_MEMREFDESCRIPTOR_H

#include <cstdint>
#include <vector>

namespace attnrt {

/// The descriptor of a dense row-major buffer of `shape`.
class MemRefDescriptor {
public:
  MemRefDescriptor() = default;
  MemRefDescriptor(void *data, const std::vector<int64_t> &shape) {
    int64_t rank = int64_t(shape.size());
    storage.assign(3 + 2 * rank, 0);
    storage[0] = storage[1] = reinterpret_cast<int64_t>(data);
    int64_t stride = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      storage[3 + d] = shape[d];
      storage[3 + rank + d] = stride;
      stride *= shape[d];
    }
  }

  void *get() { return storage.data(); }
  void *alignedData() const { return reinterpret_cast<void *>(storage[1]); }
  int64_t size(int64_t d) const { return storage[3 + d]; }

private:
  std::vector<int64_t> storage;
};

} // namespace attnrt

#endif // ATTN_RUNTIME_MEMREFDESCRIPTOR_H
