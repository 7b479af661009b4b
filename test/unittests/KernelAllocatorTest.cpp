//===- KernelAllocatorTest.cpp - the compiled kernels' heap ---------------===//
#include "attn/Runtime/KernelAllocator.h"
#include "gtest/gtest.h"
#include <cstdint>
#include <cstring>

namespace {

bool alignedTo(void *p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

TEST(KernelAllocator, SmallAndAlignedBlocksAreUsable) {
  for (size_t size : {size_t(1), size_t(63), size_t(4096), size_t(100000)}) {
    void *p = _mlir_memref_to_llvm_alloc(size);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(alignedTo(p, 64));
    std::memset(p, 0xab, size); // the whole block is ours
    _mlir_memref_to_llvm_free(p);
  }
  for (size_t alignment : {size_t(16), size_t(64), size_t(256), size_t(4096)}) {
    void *p = _mlir_memref_to_llvm_aligned_alloc(alignment, 1000);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(alignedTo(p, alignment));
    std::memset(p, 0, 1000);
    _mlir_memref_to_llvm_free(p);
  }
  _mlir_memref_to_llvm_free(nullptr);
}

TEST(KernelAllocator, LargeBlocksAreReusedNotReturned) {
  size_t before = attnrt::kernelAllocatorCachedBytes();
  void *p = _mlir_memref_to_llvm_alloc(3 << 20);
  std::memset(p, 1, 3 << 20);
  _mlir_memref_to_llvm_free(p);
  EXPECT_EQ(attnrt::kernelAllocatorCachedBytes(), before + (3 << 20));
  // The next request of that size class gets the same block back.
  void *q = _mlir_memref_to_llvm_alloc((3 << 20) - 100);
  EXPECT_EQ(q, p);
  EXPECT_EQ(attnrt::kernelAllocatorCachedBytes(), before);
  // Two live blocks of one class are distinct.
  void *r = _mlir_memref_to_llvm_alloc(3 << 20);
  EXPECT_NE(r, q);
  _mlir_memref_to_llvm_free(q);
  _mlir_memref_to_llvm_free(r);
  EXPECT_EQ(attnrt::kernelAllocatorCachedBytes(), before + 2 * (3 << 20));
}

} // namespace
