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
#include <algorithm>
#include <utility>

namespace mlir::attn {

/// How query rows are cut into tiles: `tile` rows each, restarting at every
/// multiple of `period` (0: never) so that no tile straddles a query block
/// of a block-sparse pattern; the last tile of a period may be shorter.
struct QueryTiling {
  int64_t tile = 1, period = 0;

  int64_t tilesPerPeriod() const {
    return period ? (period + tile - 1) / tile : 0;
  }
  int64_t numTiles(int64_t lq) const {
    return period ? (lq + period - 1) / period * tilesPerPeriod()
                  : (lq + tile - 1) / tile;
  }
  /// Rows [first, end) of tile t, clipped to lq (empty past the end).
  std::pair<int64_t, int64_t> rows(int64_t t, int64_t lq) const {
    int64_t first = t * tile, end = first + tile;
    if (period) {
      int64_t p = t / tilesPerPeriod(), k = t % tilesPerPeriod();
      first = p * period + k * tile;
      end = std::min(first + tile, (p + 1) * period);
    }
    return {std::min(first, lq), std::min(end, lq)};
  }
};

/// The visited tiles of one head, query tile by query tile (CSR layout).
struct TileSchedule {
  QueryTiling queryTiling;
  int64_t keyTile = 0;
  int64_t numQueryTiles = 0, numKeyTiles = 0;
  /// Tiles of the score matrix (query tiles with rows x key tiles).
  int64_t totalTiles = 0;
  /// Query tile t visits entries [rowStart[t], rowStart[t + 1]).
  llvm::SmallVector<int64_t> rowStart;
  /// Per entry: the key tile index and its class (Full or Partial).
  llvm::SmallVector<int64_t> keyTiles;
  llvm::SmallVector<TileClass> classes;
  /// False when building stopped at its entry limit.
  bool complete = true;

  int64_t numVisited() const { return keyTiles.size(); }
  int64_t numTotal() const { return totalTiles; }
  int64_t numFull() const {
    return llvm::count(classes, TileClass::Full);
  }
};

/// Builds the schedule of `pattern` (null: every tile, all full) for one
/// head. A tile is listed iff the pattern keeps some element of it: tiles
/// the algebra cannot decide (intersections) are checked element by element.
/// A tile listed as Full keeps every element; Partial is always safe.
/// Building stops once more than `maxEntries` tiles (or query tiles) would
/// be listed: `complete` is then false and the schedule must not be used
/// (very long static sequences take run-time classification instead of
/// tables of that size).
TileSchedule buildTileSchedule(MaskAttrInterface pattern, const MaskQuery &q,
                               QueryTiling queryTiling, int64_t keyTile,
                               int64_t maxEntries = INT64_MAX);

/// The schedule's entries listed per query tile (`byKey` false) or per key
/// tile (true, the backward's order): for each, the other tile's index * 2
/// + 1 if the tile is full.
std::vector<std::vector<int32_t>> scheduleLists(const TileSchedule &schedule,
                                                bool byKey);

/// Whether the pattern keeps different elements for different heads.
bool dependsOnHead(MaskAttrInterface pattern);

/// Calls `fn` on the pattern and every member of its or/and compositions.
void walkMask(MaskAttrInterface pattern,
              llvm::function_ref<void(MaskAttrInterface)> fn);

} // namespace mlir::attn

#endif // ATTN_DIALECT_ATTN_IR_TILESCHEDULE_H
