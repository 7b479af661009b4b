//===- HostTensor.cpp - aligned host buffers for kernel operands ----------===//
#include "attn/Tooling/HostTensor.h"
#include "llvm/Support/ErrorHandling.h"
#include <algorithm>
#include <cstring>

using namespace attnrt;

HostTensor::HostTensor(llvm::ArrayRef<int64_t> shape, int64_t elementBytes)
    : shape(shape.begin(), shape.end()), numElements(1),
      elementBytes(elementBytes) {
  for (int64_t size : shape)
    numElements *= size;
  // aligned_alloc wants a multiple of the alignment; never ask for 0 bytes.
  size_t bytes = ((std::max<int64_t>(getSizeInBytes(), 1) + 63) / 64) * 64;
  storage.reset(std::aligned_alloc(64, bytes));
  if (!storage)
    llvm::report_bad_alloc_error("attn: out of memory for a host tensor");
  std::memset(storage.get(), 0, bytes);
}
