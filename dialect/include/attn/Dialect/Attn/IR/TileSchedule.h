//===- TileSchedule.h - the non-empty tiles of a mask pattern ---*- C++ -*-===//
//
// For sizes known at compile time, the key tiles each query tile must visit
// and whether it needs per-element masking there. Kernels iterate over these
// lists instead of over every key tile, so sparse patterns cost what they
// keep. The same lists drive `attn-compile --stats` and the SVG drawing.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECT_ATTN_IR_TILESCHEDULE_H
#define ATTN_DIALECT_ATTN_IR_TILESCHEDULE_H

#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::attn {

/// The visited tiles of one head, query tile by query tile (CSR layout).
struct TileSchedule {
  int64_t queryTile = 0, keyTile = 0;
  int64_t numQueryTiles = 0, numKeyTiles = 0;
  /// Query tile t visits entries [rowStart[t], rowStart[t + 1]).
  llvm::SmallVector<int64_t> rowStart;
  /// Per entry: the key tile index and its class (Full or Partial).
  llvm::SmallVector<int64_t> keyTiles;
  llvm::SmallVector<TileClass> classes;

  int64_t numVisited() const { return keyTiles.size(); }
  int64_t numTotal() const { return numQueryTiles * numKeyTiles; }
  int64_t numFull() const {
    return llvm::count(classes, TileClass::Full);
  }
};

/// Builds the schedule of `pattern` (null: every tile, all full) for one
/// head. A tile is listed iff the pattern keeps some element of it: tiles
/// the algebra cannot decide (intersections) are checked element by element.
/// A tile listed as Full keeps every element; Partial is always safe.
TileSchedule buildTileSchedule(MaskAttrInterface pattern, const MaskQuery &q,
                               int64_t queryTile, int64_t keyTile);

/// Whether the pattern keeps different elements for different heads.
bool dependsOnHead(MaskAttrInterface pattern);

/// Calls `fn` on the pattern and every member of its or/and compositions.
void walkMask(MaskAttrInterface pattern,
              llvm::function_ref<void(MaskAttrInterface)> fn);

} // namespace mlir::attn

#endif // ATTN_DIALECT_ATTN_IR_TILESCHEDULE_H
