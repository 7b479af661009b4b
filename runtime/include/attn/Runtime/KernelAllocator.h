//===- KernelAllocator.h - the heap of compiled kernels ---------*- C++ -*-===//
//
// attn-cpu-pipeline lowers memref.alloc / memref.dealloc to these functions
// (finalize-memref-to-llvm's generic allocation functions), which
// libattn_support provides and the JIT registers. Large blocks are kept for
// reuse when freed: a kernel whose temporaries are megabytes (the feature
// maps of FAVOR+, a GEMM's packed panels) would otherwise map fresh pages
// on every call and spend its time in page faults.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_KERNELALLOCATOR_H
#define ATTN_RUNTIME_KERNELALLOCATOR_H

#include <cstddef>

extern "C" {
/// `size` bytes aligned to 64.
void *_mlir_memref_to_llvm_alloc(size_t size);
/// `size` bytes aligned to `alignment` (a power of two).
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size);
/// Releases a block of either function (null: nothing).
void _mlir_memref_to_llvm_free(void *ptr);
}

namespace attnrt {
/// Bytes of freed blocks held for reuse.
size_t kernelAllocatorCachedBytes();
} // namespace attnrt

#endif // ATTN_RUNTIME_KERNELALLOCATOR_H
