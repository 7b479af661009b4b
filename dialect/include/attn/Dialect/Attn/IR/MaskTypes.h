//===- MaskTypes.h - plain types of the mask algebra ------------*- C++ -*-===//
//
// The value types the mask-pattern attributes are queried with. They carry
// no MLIR state so that tests and the runtime can build them directly.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECT_ATTN_IR_MASKTYPES_H
#define ATTN_DIALECT_ATTN_IR_MASKTYPES_H

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>

namespace mlir::attn {

/// What a tile of the score matrix holds for a pattern.
enum class TileClass { Empty, Partial, Full };

llvm::StringRef stringifyTileClass(TileClass cls);

/// The half-open tile [i0, i1) x [j0, j1) of query rows x key columns.
struct Tile {
  int64_t i0, i1, j0, j1;
};

/// Everything a pattern needs to answer "is (i, j) kept?" for one
/// (batch, head) slice.
struct MaskQuery {
  int64_t lq = 0;    ///< number of queries
  int64_t lk = 0;    ///< number of keys
  int64_t delta = 0; ///< key-space position of query 0 (see Alignment)
  int64_t head = 0;  ///< query head index
  /// Segment ids of this batch row; empty when unknown (compile time).
  llvm::ArrayRef<int64_t> qSegments;
  llvm::ArrayRef<int64_t> kvSegments;
};

/// Static knowledge of the op's shape; ShapedType::kDynamic when unknown.
struct MaskShape {
  int64_t lq = ShapedType::kDynamic;
  int64_t lk = ShapedType::kDynamic;
  int64_t numHeads = ShapedType::kDynamic;
  /// query_offset - key_offset of the op (a block of a larger attention):
  /// added to the alignment's delta.
  int64_t shift = 0;
};

} // namespace mlir::attn

#endif // ATTN_DIALECT_ATTN_IR_MASKTYPES_H
