//===- TiledForm.h - the tiled form every back end consumes -----*- C++ -*-===//
//
// attn-tile rewrites each attn.attention into (docs/Design.md, "The tiled
// form"):
//
//   %r = scf.forall (%b, %h, %t) in (B, Hq, query tiles) shared_outs(%o) {
//     %first, %rows = the rows of query tile %t
//     %m, %l, %acc = attn.online_attention ... tile(%b, %h, %t)
//                      state(-inf, 0, 0 filled [%rows], [%rows, Dv])
//     %tile = attn.finalize_tile %acc, %l
//     parallel_insert_slice %tile into %o[%b, %h, %first, 0]
//   }
//
// A back end either lowers the whole loop nest at once (the CPU kernels,
// matchTiledAttention) or lowers attn.online_attention and
// attn.finalize_tile where they stand (attn-lower-online-attention).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_TILEDFORM_H
#define ATTN_TRANSFORMS_TILEDFORM_H

#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/IR/TileSchedule.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include <optional>

namespace mlir::attn {

/// One attention in the tiled form.
struct TiledAttention {
  scf::ForallOp forall;
  OnlineAttentionOp tile;
  FinalizeTileOp finalize;
  /// The rows' log-sum-exp, written to the forall's second result, when
  /// attn.attention had an `lse` result; null otherwise.
  TileLseOp lse;

  QueryTiling queryTiling() {
    return {tile.getQueryTileAttr().getInt(),
            tile.getQueryPeriodAttr().getInt()};
  }
};

/// `forall` as one attention in the tiled form: its induction variables are
/// the tile coordinates of its only attn.online_attention, which starts
/// from an empty state (-inf, 0, 0) and runs over every key tile, and the
/// finalized rows are its output, written at the tile's rows (and, as a
/// second output, the log-sum-exp of those rows).
/// Anything else (a forall rewritten since attn-tile) does not match.
std::optional<TiledAttention> matchTiledAttention(scf::ForallOp forall);

/// The first row and the number of rows of query tile `tile` under
/// `tiling` for `queryLen` queries (QueryTiling::rows, as IR).
std::pair<Value, Value> emitQueryTileRows(OpBuilder &b, Location loc,
                                          QueryTiling tiling, Value tile,
                                          Value queryLen);

/// attn.online_attention of `op`'s operands and attributes for query tile
/// `tile` (`rows` rows) of (batch, head), from the empty online-softmax
/// state (-inf, 0, 0); its score region is left to the caller.
OnlineAttentionOp emitTileFromEmptyState(OpBuilder &b, AttentionOp op,
                                         Value batch, Value head, Value tile,
                                         Value rows, QueryTiling tiling,
                                         int64_t keyTile);

/// The number of query tiles of `tiling` for `queryLen` queries.
Value emitNumQueryTiles(OpBuilder &b, Location loc, QueryTiling tiling,
                        Value queryLen);

/// The score region of `op` inlined at `b`'s insertion point for score `x`
/// of (batch, head, row, col); returns the score it yields. With
/// `copyCapturedConstants` (kernels outside the op's function), constants
/// the region uses from outside it are cloned too.
Value emitScoreRegion(OpBuilder &b, OnlineAttentionOp op, Value x, Value batch,
                      Value head, Value row, Value col,
                      bool copyCapturedConstants);

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_TILEDFORM_H
