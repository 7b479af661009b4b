//===- MemRefCopy.cpp - strided copies for compiled kernels ---------------===//
#include "attn/Runtime/MemRefCopy.h"
#include <cstring>
#include <vector>

namespace {
/// A view of a ranked descriptor's words.
struct Strided {
  char *base;
  const int64_t *sizes;
  const int64_t *strides;
};

Strided viewOf(const AttnUnrankedMemRef *m, int64_t elementSize) {
  auto *words = static_cast<int64_t *>(m->descriptor);
  char *aligned = reinterpret_cast<char *>(words[1]);
  return {aligned + words[2] * elementSize, words + 3, words + 3 + m->rank};
}
} // namespace

void memrefCopy(int64_t elementSize, AttnUnrankedMemRef *source,
                AttnUnrankedMemRef *target) {
  int64_t rank = source->rank;
  Strided from = viewOf(source, elementSize), to = viewOf(target, elementSize);
  for (int64_t d = 0; d < rank; ++d)
    if (from.sizes[d] == 0)
      return;
  if (rank == 0) {
    std::memcpy(to.base, from.base, elementSize);
    return;
  }
  // Rows of the innermost dimension are copied in one memcpy when both are
  // contiguous there; the outer dimensions are walked like an odometer.
  int64_t inner = rank - 1, rowLength = from.sizes[inner];
  bool contiguousRows = from.strides[inner] == 1 && to.strides[inner] == 1;
  std::vector<int64_t> index(rank, 0);
  while (true) {
    int64_t fromOffset = 0, toOffset = 0;
    for (int64_t d = 0; d < inner; ++d) {
      fromOffset += index[d] * from.strides[d];
      toOffset += index[d] * to.strides[d];
    }
    if (contiguousRows) {
      std::memcpy(to.base + toOffset * elementSize,
                  from.base + fromOffset * elementSize, rowLength * elementSize);
    } else {
      for (int64_t i = 0; i < rowLength; ++i)
        std::memcpy(to.base + (toOffset + i * to.strides[inner]) * elementSize,
                    from.base + (fromOffset + i * from.strides[inner]) *
                                    elementSize,
                    elementSize);
    }
    int64_t d = inner - 1;
    while (d >= 0 && ++index[d] == from.sizes[d])
      index[d--] = 0;
    if (d < 0)
      return;
  }
}
