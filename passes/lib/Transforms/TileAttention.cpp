//===- TileAttention.cpp - attn.attention to the tiled form ---------------===//
//
// Builds the tiled form (TiledForm.h, docs/Design.md): per (batch, query
// head, query tile) an online-softmax state, one attn.online_attention over
// the key tiles and attn.finalize_tile into the output rows. Tile sizes come
// from the options, or from the kernel plan of the target.
//
//===----------------------------------------------------------------------===//
#include "attn/Analysis/KernelPlan.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/TiledForm.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNTILE
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Replaces `op` by its tiled form.
void tileAttention(AttentionOp op, QueryTiling queryTiling, int64_t keyTile) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto dim = [&](Value tensor, int64_t d) -> Value {
    return getValueOrCreateConstantIndexOp(
        b, loc, tensor::getMixedSize(b, loc, tensor, d));
  };
  Value q = op.getQuery();
  Value batch = dim(q, 0), queryHeads = dim(q, 1), queryLen = dim(q, 2);
  Value valueDim = dim(op.getValue(), 3);

  auto resultType = cast<RankedTensorType>(op.getOutput().getType());
  SmallVector<Value> dynamicSizes;
  Value resultDims[4] = {batch, queryHeads, queryLen, valueDim};
  for (int64_t d = 0; d < 4; ++d)
    if (resultType.isDynamicDim(d))
      dynamicSizes.push_back(resultDims[d]);
  Value out = tensor::EmptyOp::create(
      b, loc, resultType.getShape(), resultType.getElementType(), dynamicSizes);
  SmallVector<Value> outs = {out};
  if (Value lse = op.getLse()) {
    auto lseType = cast<RankedTensorType>(lse.getType());
    SmallVector<Value> lseSizes;
    for (int64_t d = 0; d < 3; ++d)
      if (lseType.isDynamicDim(d))
        lseSizes.push_back(resultDims[d]);
    outs.push_back(tensor::EmptyOp::create(b, loc, lseType.getShape(),
                                           lseType.getElementType(), lseSizes));
  }
  Value numQueryTiles = emitNumQueryTiles(b, loc, queryTiling, queryLen);
  auto forall = scf::ForallOp::create(
      b, loc, getAsOpFoldResult(ValueRange{batch, queryHeads, numQueryTiles}),
      outs, std::nullopt);

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  SmallVector<Value> ivs = forall.getInductionVars();
  auto [first, rows] = emitQueryTileRows(b, loc, queryTiling, ivs[2], queryLen);
  OnlineAttentionOp tile = emitTileFromEmptyState(b, op, ivs[0], ivs[1], ivs[2],
                                                  rows, queryTiling, keyTile);
  if (!op.getScore().empty())
    tile.getScore().takeBody(op.getScore());

  auto outTileType =
      RankedTensorType::get({ShapedType::kDynamic, resultType.getDimSize(3)},
                            resultType.getElementType());
  Value outTile = FinalizeTileOp::create(b, loc, outTileType, tile.getNewAcc(),
                                         tile.getNewSum());
  Value lseTile;
  if (op.getLse())
    lseTile = TileLseOp::create(b, loc, tile.getNewMax().getType(),
                                tile.getNewMax(), tile.getNewSum());

  // Only parallel_insert_slice may live in the terminator: every value it
  // uses is created before.
  SmallVector<OpFoldResult> offsets = {ivs[0], ivs[1], first,
                                       b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1), rows,
                                     getAsOpFoldResult(valueDim)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      b, loc, outTile, forall.getRegionIterArgs()[0], offsets, sizes, strides);
  if (lseTile)
    tensor::ParallelInsertSliceOp::create(
        b, loc, lseTile, forall.getRegionIterArgs()[1],
        ArrayRef<OpFoldResult>(offsets).take_front(3),
        ArrayRef<OpFoldResult>(sizes).take_front(3),
        ArrayRef<OpFoldResult>(strides).take_front(3));
  op.replaceAllUsesWith(forall.getResults());
  op.erase();
}

struct AttnTilePass : attn::impl::AttnTileBase<AttnTilePass> {
  using AttnTileBase::AttnTileBase;

  void runOnOperation() override {
    std::optional<TargetDescription> description;
    if (forTarget)
      description = TargetDescription::of(getOperation());
    // Tiles are buffers of q-tile x kv-tile floats: 4096 x 4096 is 64 MiB.
    // The CPU kernels keep their score tile on each worker thread's stack:
    // 1024 key rows are 256 KiB at 512 bits.
    int64_t minKeyTile = description ? 0 : 1;
    int64_t maxKeyTile = description ? 1024 : 4096;
    if (queryTile < 1 || keyTile < minKeyTile || queryTile > 4096 ||
        keyTile > maxKeyTile) {
      getOperation()->emitError(
          "attn-tile: tile sizes must be 1 to 4096 (kv-tile 0 to 1024 with "
          "a target)");
      return signalPassFailure();
    }
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    for (AttentionOp op : ops) {
      if (!description) {
        tileAttention(op, QueryTiling{queryTile, 0}, keyTile);
        continue;
      }
      KernelPlan plan =
          description->isCpu()
              ? planKernel(AttentionFacts::of(op), *description, keyTile,
                           /*countTiles=*/false)
              : planGpuKernel(AttentionFacts::of(op), *description);
      if (!plan.keyTile) {
        op.emitError() << "attn-tile: one key row of this attention does not "
                          "fit the workgroup memory of target '"
                       << description->name << "'";
        return signalPassFailure();
      }
      tileAttention(op, plan.queryTiling, plan.keyTile);
    }
  }
};

} // namespace
