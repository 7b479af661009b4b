//===- KernelAllocator.cpp - the heap of compiled kernels -----------------===//
#include "attn/Runtime/KernelAllocator.h"
#include "attn/Runtime/HugePages.h"
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <unistd.h>
#include <map>
#include <mutex>

namespace {

/// What precedes every block handed out: where its allocation starts and,
/// for blocks that may be kept, their size class (0: never kept).
struct Header {
  void *base;
  size_t sizeClass;
};

/// Blocks from this size on are kept when freed (in size classes of
/// 64 KiB); smaller ones go back to malloc, which reuses them itself.
constexpr size_t kKeptFrom = size_t(1) << 18;
constexpr size_t kSizeClass = size_t(1) << 16;
/// At most this many bytes are held (an eighth of the machine's memory, at
/// least 1 GiB); beyond it freed blocks are released. FAVOR+ at N = 16384
/// (H = 12, 256 features) keeps 1-2 GiB of feature maps live: with a 1 GiB
/// cap a quarter of its time went to faulting fresh pages in.
size_t heldLimit() {
  static const size_t limit = [] {
    long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
    size_t physical = pages > 0 && pageSize > 0
                          ? size_t(pages) * size_t(pageSize)
                          : size_t(0);
    return std::max(size_t(1) << 30, physical / 8);
  }();
  return limit;
}
constexpr size_t kBaseAlignment = 64;

struct Cache {
  std::mutex mutex;
  std::multimap<size_t, void *> blocks; // size class -> base
  size_t held = 0;
};

/// Never destroyed: kernels may free blocks during static destruction.
Cache &cache() {
  static Cache *instance = new Cache;
  return *instance;
}

void *allocate(size_t alignment, size_t size) {
  if (alignment < kBaseAlignment)
    alignment = kBaseAlignment;
  // The header sits just before the returned pointer, in a prefix of
  // `alignment` bytes, so the pointer keeps the base's alignment.
  size_t prefix = alignment;
  size_t sizeClass = 0, bytes = (size + kBaseAlignment - 1) /
                                     kBaseAlignment * kBaseAlignment;
  if (alignment == kBaseAlignment && size >= kKeptFrom) {
    sizeClass = (size + kSizeClass - 1) / kSizeClass * kSizeClass;
    bytes = sizeClass;
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.blocks.find(sizeClass);
    if (it != c.blocks.end()) {
      char *base = static_cast<char *>(it->second);
      c.blocks.erase(it);
      c.held -= sizeClass;
      return base + prefix;
    }
  }
  // From 2 MiB on, huge pages (HugePages.h): a GEMM's packed panels.
  char *base =
      static_cast<char *>(attnrt::allocateHugePageAdvised(alignment, prefix + bytes));
  if (!base)
    return nullptr;
  char *ptr = base + prefix;
  *(reinterpret_cast<Header *>(ptr) - 1) = Header{base, sizeClass};
  return ptr;
}

} // namespace

void *_mlir_memref_to_llvm_alloc(size_t size) {
  return allocate(kBaseAlignment, size);
}

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size) {
  return allocate(alignment, size);
}

void _mlir_memref_to_llvm_free(void *ptr) {
  if (!ptr)
    return;
  Header header = *(reinterpret_cast<Header *>(ptr) - 1);
  if (header.sizeClass) {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.held + header.sizeClass <= heldLimit()) {
      c.blocks.emplace(header.sizeClass, header.base);
      c.held += header.sizeClass;
      return;
    }
  }
  std::free(header.base);
}

size_t attnrt::kernelAllocatorCachedBytes() {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.held;
}
