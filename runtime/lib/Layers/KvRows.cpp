//===- KvRows.cpp - keys or values a decoder layer keeps ------------------===//
#include "KvRows.h"
#include "LayerMath.h"
#include "attn/Runtime/LayerStack.h"
#include <algorithm>
#include <cstring>

using namespace attnrt;

void KvRows::append(const float *fresh, int64_t n, int64_t blockCount,
                    int64_t rowDim, bool bf16) {
  extend(n, blockCount, rowDim, bf16);
  for (int64_t b = 0; b < blocks; ++b) {
    const float *from = fresh + b * n * dim;
    if (isBf16())
      layermath::roundToBf16(from, n * dim,
                             static_cast<uint16_t *>(at(b, rows - n)));
    else
      std::memcpy(at(b, rows - n), from, n * dim * elementBytes);
  }
}

void KvRows::extend(int64_t n, int64_t blockCount, int64_t rowDim, bool bf16,
                    int64_t minCapacity) {
  if (empty()) {
    bytes.clear();
    blocks = blockCount;
    dim = rowDim;
    elementBytes = bf16 ? 2 : 4;
    capacity = 0;
  }
  int64_t rowBytes = dim * elementBytes;
  if (rows + n > capacity || minCapacity > capacity) {
    // Double (a first append takes exactly its rows: a prompt's cache is
    // dense until the first decode step grows it).
    int64_t grown = rows ? std::max(2 * capacity, rows + n) : n;
    grown = std::max(grown, minCapacity);
    std::vector<char> moved(blocks * grown * rowBytes);
    for (int64_t b = 0; b < blocks && rows; ++b)
      std::memcpy(moved.data() + b * grown * rowBytes,
                  bytes.data() + b * capacity * rowBytes, rows * rowBytes);
    bytes.swap(moved);
    capacity = grown;
    rowsVersion = newRowsVersion();
  }
  rows += n;
}

void KvRows::keepLast(int64_t keep) {
  if (keep >= rows)
    return;
  int64_t rowBytes = dim * elementBytes;
  for (int64_t b = 0; b < blocks; ++b)
    std::memmove(at(b, 0), at(b, rows - keep), keep * rowBytes);
  rows = keep;
  rowsVersion = newRowsVersion();
}

void *KvRows::at(int64_t block, int64_t row) {
  return bytes.data() + (block * capacity + row) * dim * elementBytes;
}

void *KvRows::denseRows(std::vector<char> &copy) {
  if (dense())
    return bytes.data();
  int64_t blockBytes = rows * dim * elementBytes;
  copy.resize(blocks * blockBytes);
  for (int64_t b = 0; b < blocks; ++b)
    std::memcpy(copy.data() + b * blockBytes, at(b, 0), blockBytes);
  return copy.data();
}
