//===- KvRows.h - keys or values a decoder layer keeps ----------*- C++ -*-===//
//
// A decoder's KV cache, one per keys and values: per (sequence, KV head) a
// block of capacity() rows of `dim`, the first length() of them in use, in
// the attention kernel's element type (f32, or bf16 rounded once, as rows
// are appended). Blocks grow by doubling, so a decode step writes its rows
// in place instead of copying the cache; while capacity() == length() the
// rows are the dense [B, Hkv, length, D] operand a whole kernel reads.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_LAYERS_KVROWS_H
#define ATTN_RUNTIME_LAYERS_KVROWS_H

#include <cstdint>
#include <vector>

namespace attnrt {

class KvRows {
public:
  /// Appends `fresh` [blocks, n, dim] after the rows kept, rounded to bf16
  /// when `bf16`. The first append sets blocks, dim and the element type
  /// (the rows are then exactly `fresh`); later ones must keep them.
  void append(const float *fresh, int64_t n, int64_t blocks, int64_t dim,
              bool bf16);
  /// Appends `n` rows whose contents the caller writes (at(b, length() -
  /// n) on), with room for at least `minCapacity` rows per block; blocks,
  /// dim and type as append's. A GPU stack that appends a step's keys on
  /// the device reads them back into these rows.
  void extend(int64_t n, int64_t blocks, int64_t dim, bool bf16,
              int64_t minCapacity = 0);
  /// Keeps the last `keep` rows of each block.
  void keepLast(int64_t keep);
  /// Keeps the first `keep` rows of each block (undoes appends).
  void truncate(int64_t keep) { rows = keep < rows ? keep : rows; }
  /// Bytes held (spare rows included).
  int64_t heldBytes() const { return int64_t(bytes.size()); }
  /// The blocks as they are held: [blocks, capacityRows(), dim], and the
  /// version of their rows (KernelOperand::version): new when the rows
  /// move (a first append, growth, keepLast).
  void *data() { return bytes.data(); }
  int64_t capacityRows() const { return capacity; }
  uint64_t version() const { return rowsVersion; }

  int64_t length() const { return rows; }
  bool empty() const { return rows == 0; }
  bool isBf16() const { return elementBytes == 2; }
  /// Whether the rows in use are dense [blocks, length, dim].
  bool dense() const { return rows == capacity; }
  /// Row `row` of block `block` (f32 or uint16_t bits).
  void *at(int64_t block, int64_t row);
  /// The rows in use as dense [blocks, length, dim]: the cache itself when
  /// dense(), else a copy in `copy`.
  void *denseRows(std::vector<char> &copy);

private:
  std::vector<char> bytes;
  int64_t elementBytes = 4, blocks = 0, dim = 0, capacity = 0, rows = 0;
  uint64_t rowsVersion = 0;
};

} // namespace attnrt

#endif // ATTN_RUNTIME_LAYERS_KVROWS_H
