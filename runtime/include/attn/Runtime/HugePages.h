//===- HugePages.h - large buffers on 2 MiB pages ---------------*- C++ -*-===//
//
// A GEMM streams megabytes of weights and touches C rows N floats apart: on
// 4 KiB pages each panel of B crosses a page every few dozen k-steps and
// each C tile a dozen pages, and on a virtual machine every TLB miss is a
// two-level page walk. Buffers of 2 MiB and more are therefore aligned to
// 2 MiB and advised for transparent huge pages (Linux's default "madvise"
// mode backs only advised ranges); elsewhere the advice is a no-op.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_HUGEPAGES_H
#define ATTN_RUNTIME_HUGEPAGES_H

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace attnrt {

constexpr size_t kHugePageBytes = size_t(1) << 21;

/// `bytes` (rounded up to `alignment`, a power of two) aligned to
/// `alignment`, or from 2 MiB on to 2 MiB and advised for huge pages before
/// anything touches them. Released with std::free; null when out of memory.
inline void *allocateHugePageAdvised(size_t alignment, size_t bytes) {
  if (bytes >= kHugePageBytes && alignment < kHugePageBytes)
    alignment = kHugePageBytes;
  size_t total = (bytes + alignment - 1) / alignment * alignment;
  void *p = std::aligned_alloc(alignment, total ? total : alignment);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p && total >= kHugePageBytes)
    madvise(p, total, MADV_HUGEPAGE); // advice only: failure is harmless
#endif
  return p;
}

/// A std::vector allocator on allocateHugePageAdvised (e.g. a layer's
/// packed weights).
template <typename T> struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U> &) noexcept {}
  T *allocate(size_t n) {
    void *p = allocateHugePageAdvised(alignof(T) < 64 ? 64 : alignof(T),
                                      n * sizeof(T));
    if (!p) { // as std::allocator does, built without exceptions
      std::fputs("attn: out of memory\n", stderr);
      std::abort();
    }
    return static_cast<T *>(p);
  }
  void deallocate(T *p, size_t) noexcept { std::free(p); }
  template <typename U> bool operator==(const HugePageAllocator<U> &) const {
    return true;
  }
  template <typename U> bool operator!=(const HugePageAllocator<U> &) const {
    return false;
  }
};

} // namespace attnrt

#endif // ATTN_RUNTIME_HUGEPAGES_H
