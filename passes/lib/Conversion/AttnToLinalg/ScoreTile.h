//===- ScoreTile.h - one tile of logits as linalg on tensors ----*- C++ -*-===//
//
// The logits of a [rows, cols] tile of attention (docs/Dialect.md, steps 1-7:
// scale, soft-cap, bias, mods, score region, pattern and mask) as linalg on
// tensors, from the tile's product Q K^T. Shared by the generic lowerings of
// the forward (attn.online_attention) and of the backward
// (attn.attention_grad), which read the same operands.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOLINALG_SCORETILE_H
#define ATTN_CONVERSION_ATTNTOLINALG_SCORETILE_H

#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include <functional>

namespace mlir::attn {

/// What the logits of an attention op read besides Q and K.
struct ScoreOperands {
  Value bias, mask, qSegments, kvSegments, relTable;
  ArrayAttr mods;
  MaskAttrInterface pattern;
  MaskShape maskShape;
  int64_t numHeads = 0;
  /// Inlines the op's score region on x of (batch, head, row, col); null
  /// without one.
  std::function<Value(OpBuilder &, Value x, Value batch, Value head, Value row,
                      Value col)>
      scoreRegion;
  /// The same region with its derivative: (y, dy/dx). When set, the tile
  /// builder also returns the logits before the region and the slope.
  std::function<std::pair<Value, Value>(OpBuilder &, Value x, Value batch,
                                        Value head, Value row, Value col)>
      scoreRegionWithSlope;
};

/// Where a tile sits: batch row, query head, first query row i0 and first
/// key j0, its sizes, and the op's delta (alignment and offsets) and scale.
struct ScoreTilePlace {
  Value batch, head, i0, j0, rows, cols, delta, scale;
};

/// A rank-reduced [rows, cols] slice of a 4-D [B, H, L, C] tensor.
Value sliceRows(OpBuilder &b, Location loc, Value source,
                ArrayRef<Value> offsets, Value rows, Value cols);

/// `value` extended to f32 where it is of another float type.
Value extendToF32(OpBuilder &b, Location loc, Value value);

/// The [rows, cols] f32 product Q_tile K_tile^T, contracting the head dim.
Value buildTileProduct(OpBuilder &b, Location loc, Value qTile, Value kTile,
                       Value rows, Value cols);

/// The logits of the tile from its product `dot`; with `masked`, entries
/// the pattern or mask drop are -inf.
Value buildScoreTile(OpBuilder &b, Location loc, const ScoreOperands &ops,
                     const ScoreTilePlace &at, Value dot, bool masked);

/// The logits, and with ops.scoreRegionWithSlope the logits before the
/// score region (not masked) and the region's slope dy/dx at them.
struct ScoreTileOutputs {
  Value logits, preRegion, regionSlope;
};
ScoreTileOutputs buildScoreTileWithSlope(OpBuilder &b, Location loc,
                                         const ScoreOperands &ops,
                                         const ScoreTilePlace &at, Value dot,
                                         bool masked);

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOLINALG_SCORETILE_H
