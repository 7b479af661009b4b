//===- MemRefCopy.h - strided copies for compiled kernels -------*- C++ -*-===//
//
// memref.copy between buffers that are not both contiguous lowers to a call
// of `memrefCopy` (finalize-memref-to-llvm). MLIR ships it in
// libmlir_c_runner_utils; attn's kernels find it in libattn_support instead,
// so that neither a deployed artifact nor the JIT needs an MLIR library at
// run time.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_MEMREFCOPY_H
#define ATTN_RUNTIME_MEMREFCOPY_H

#include <cstdint>

extern "C" {
/// MLIR's unranked memref: the rank and a pointer to the ranked descriptor
/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
struct AttnUnrankedMemRef {
  int64_t rank;
  void *descriptor;
};

/// Copies every element of `source` to the same index of `target` (equal
/// sizes), `elementSize` bytes each, following both strides.
void memrefCopy(int64_t elementSize, AttnUnrankedMemRef *source,
                AttnUnrankedMemRef *target);
}

#endif // ATTN_RUNTIME_MEMREFCOPY_H
