//===- AttentionTiling.cpp - attn.attention's TilingInterface -------------===//
//
// attn.attention is a parallel loop nest over (batch, query head, query
// row): tiling it with upstream's drivers (scf::tileUsingSCF, the
// transform dialect's tile_using_forall) gives attn's tiled form per tile,
// one attn.online_attention over the key tiles from an empty state and its
// attn.finalize_tile (docs/Design.md, "The tiled form"). A tile is one
// (batch, head) and query rows that start at a multiple of a static row
// count, the tile sizes the online-softmax op describes; other tilings are
// refused. The key tile is the module target's CPU plan's (attn-tile's),
// else attn-tile's default. An external model, so the dialect does not
// depend on the planning it reads.
//
//===----------------------------------------------------------------------===//
#include "attn/Analysis/KernelPlan.h"
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/Patterns.h"
#include "attn/Transforms/TiledForm.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/TilingInterface.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// attn-tile's key tile without a target.
constexpr int64_t kDefaultKeyTile = 128;

struct AttentionTiling
    : TilingInterface::ExternalModel<AttentionTiling, AttentionOp> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *) const {
    return SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel);
  }

  SmallVector<Range> getIterationDomain(Operation *op, OpBuilder &b) const {
    Location loc = op->getLoc();
    Value q = cast<AttentionOp>(op).getQuery();
    SmallVector<Range> domain;
    for (int64_t d = 0; d < 3; ++d)
      domain.push_back({b.getIndexAttr(0), tensor::getMixedSize(b, loc, q, d),
                        b.getIndexAttr(1)});
    return domain;
  }

  FailureOr<TilingResult>
  getTiledImplementation(Operation *operation, OpBuilder &b,
                         ArrayRef<OpFoldResult> offsets,
                         ArrayRef<OpFoldResult> sizes) const {
    auto op = cast<AttentionOp>(operation);
    Location loc = op.getLoc();
    // One (batch, head) per tile; query rows from a static tile size (the
    // last tile may be shorter: its size is then not a constant).
    std::optional<int64_t> queryTile = staticRows(sizes[2]);
    if (getConstantIntValue(sizes[0]) != 1 ||
        getConstantIntValue(sizes[1]) != 1 || !queryTile || *queryTile < 1)
      return op.emitOpError(
          "tiles of attn.attention are one batch row, one query head and a "
          "static number of query rows");
    Type f32 = b.getF32Type();
    auto index = [&](OpFoldResult v) {
      return getValueOrCreateConstantIndexOp(b, loc, v);
    };
    Value rows = index(sizes[2]);
    Value tileIndex = tileIndexOf(b, loc, offsets[2], *queryTile);
    Value valueDim = getValueOrCreateConstantIndexOp(
        b, loc, tensor::getMixedSize(b, loc, op.getValue(), 3));
    OnlineAttentionOp tile = emitTileFromEmptyState(
        b, op, index(offsets[0]), index(offsets[1]), tileIndex, rows,
        QueryTiling{*queryTile, 0}, keyTileFor(op));
    // The original op stays until the driver replaces it: its score region
    // is copied.
    if (!op.getScore().empty()) {
      IRMapping mapping;
      op.getScore().cloneInto(&tile.getScore(), mapping);
    }
    // The output rows as a [1, 1, rows, Dv] tile (and lse's [1, 1, rows]).
    auto resultType = cast<RankedTensorType>(op.getOutput().getType());
    auto rowsType =
        RankedTensorType::get({ShapedType::kDynamic, resultType.getDimSize(3)},
                              resultType.getElementType());
    Value outRows = FinalizeTileOp::create(b, loc, rowsType, tile.getNewAcc(),
                                           tile.getNewSum());
    SmallVector<Value> results = {tensor::ExpandShapeOp::create(
        b, loc,
        RankedTensorType::get(
            {1, 1, ShapedType::kDynamic, resultType.getDimSize(3)},
            resultType.getElementType()),
        outRows, SmallVector<ReassociationIndices>{{0, 1, 2}, {3}},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), rows,
                               getAsOpFoldResult(valueDim)})};
    if (op.getLse()) {
      Value lseRows = TileLseOp::create(b, loc, tile.getNewMax().getType(),
                                        tile.getNewMax(), tile.getNewSum());
      results.push_back(tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get({1, 1, ShapedType::kDynamic}, f32),
          lseRows, SmallVector<ReassociationIndices>{{0, 1, 2}},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), rows}));
    }
    return TilingResult{{tile}, results, {}};
  }

  LogicalResult
  getResultTilePosition(Operation *op, OpBuilder &b, unsigned resultNumber,
                        ArrayRef<OpFoldResult> offsets,
                        ArrayRef<OpFoldResult> sizes,
                        SmallVector<OpFoldResult> &resultOffsets,
                        SmallVector<OpFoldResult> &resultSizes) const {
    resultOffsets.assign(offsets.begin(), offsets.end());
    resultSizes.assign(sizes.begin(), sizes.end());
    if (resultNumber == 0) {
      Value v = cast<AttentionOp>(op).getValue();
      resultOffsets.push_back(b.getIndexAttr(0));
      resultSizes.push_back(tensor::getMixedSize(b, op->getLoc(), v, 3));
    }
    return success();
  }

private:
  /// The static query rows of a tile: its size, or, where a short last
  /// tile makes it `affine.min(T, Lq - offset)` (upstream's drivers), T.
  static std::optional<int64_t> staticRows(OpFoldResult size) {
    if (std::optional<int64_t> rows = getConstantIntValue(size))
      return rows;
    auto min = dyn_cast_if_present<affine::AffineMinOp>(
        dyn_cast<Value>(size) ? cast<Value>(size).getDefiningOp() : nullptr);
    if (!min)
      return std::nullopt;
    for (AffineExpr result : min.getAffineMap().getResults())
      if (auto constant = dyn_cast<AffineConstantExpr>(result))
        return constant.getValue();
    return std::nullopt;
  }

  /// The query tile starting at row `offset`: offset floordiv rows, as an
  /// affine.apply, so that once the driver's loop is normalized (offset =
  /// iv * rows) it composes to the loop's induction variable, the form the
  /// CPU kernels match (matchTiledAttention).
  static Value tileIndexOf(OpBuilder &b, Location loc, OpFoldResult offset,
                           int64_t rows) {
    AffineExpr row = b.getAffineDimExpr(0);
    return affine::makeComposedAffineApply(
        b, loc, AffineMap::get(1, 0, row.floorDiv(rows)), {offset});
  }

  /// The module target's key tile for `op` (its CPU plan), else attn-tile's
  /// default.
  static int64_t keyTileFor(AttentionOp op) {
    std::optional<TargetDescription> target = TargetDescription::of(op);
    if (!target || !target->isCpu())
      return kDefaultKeyTile;
    KernelPlan plan = planKernel(AttentionFacts::of(op), *target, 0, false);
    return plan.keyTile ? plan.keyTile : kDefaultKeyTile;
  }
};

} // namespace

void mlir::attn::registerAttnTilingInterfaceModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, AttnDialect *) {
    AttentionOp::attachInterface<AttentionTiling>(*context);
  });
}
