//===- TiledForm.cpp - matching and building the tiled form ---------------===//
#include "attn/Transforms/TiledForm.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

/// `value` without the tensor.casts canonicalization adds around it.
static Value skipCasts(Value value) {
  while (auto cast = value.getDefiningOp<tensor::CastOp>())
    value = cast.getSource();
  return value;
}

/// The rows under casts and a tensor.expand_shape that only adds the unit
/// (batch, head) dims: how upstream's tiling drivers (the TilingInterface
/// of attn.attention) write a tile's [1, 1, rows, Dv] result.
static Value skipUnitReshape(Value value) {
  value = skipCasts(value);
  if (auto expand = value.getDefiningOp<tensor::ExpandShapeOp>()) {
    ArrayRef<int64_t> shape = expand.getResultType().getShape();
    if (shape.size() >= 2 && shape[0] == 1 && shape[1] == 1 &&
        expand.getResultType().getRank() == expand.getSrcType().getRank() + 2)
      return skipCasts(expand.getSrc());
  }
  return value;
}

/// Whether `index` is `iv`, directly or as an affine.apply chain that
/// composes to it (upstream's tiling drivers write the tile index as
/// (iv * rows) floordiv rows).
static bool isInductionVariable(Value index, Value iv) {
  if (index == iv)
    return true;
  auto apply = index.getDefiningOp<affine::AffineApplyOp>();
  if (!apply)
    return false;
  AffineMap map = apply.getAffineMap();
  SmallVector<Value> operands(apply.getMapOperands());
  affine::fullyComposeAffineMapAndOperands(&map, &operands);
  map = simplifyAffineMap(map);
  return map.getNumResults() == 1 && operands.size() == 1 &&
         operands[0] == iv &&
         map.getResult(0) == getAffineDimExpr(0, map.getContext());
}

/// Whether `state` is a linalg.fill of the constant `expected`.
static bool isFilledWith(Value state, float expected) {
  auto fill = skipCasts(state).getDefiningOp<linalg::FillOp>();
  FloatAttr value;
  return fill && matchPattern(fill.getInputs()[0], m_Constant(&value)) &&
         value.getValueAsDouble() == double(expected);
}

std::optional<TiledAttention>
mlir::attn::matchTiledAttention(scf::ForallOp forall) {
  if (forall.getRank() != 3 || forall.getNumResults() < 1 ||
      forall.getNumResults() > 2 || !forall.isNormalized())
    return std::nullopt;
  OnlineAttentionOp tile;
  FinalizeTileOp finalize;
  TileLseOp lse;
  for (Operation &op : forall.getBody()->without_terminator()) {
    if (auto online = dyn_cast<OnlineAttentionOp>(op)) {
      if (tile)
        return std::nullopt;
      tile = online;
    } else if (auto fin = dyn_cast<FinalizeTileOp>(op)) {
      if (finalize)
        return std::nullopt;
      finalize = fin;
    } else if (auto rowLse = dyn_cast<TileLseOp>(op)) {
      if (lse)
        return std::nullopt;
      lse = rowLse;
    } else if (!isPure(&op)) {
      return std::nullopt;
    }
  }
  if (!tile || !finalize || bool(lse) != (forall.getNumResults() == 2))
    return std::nullopt;
  SmallVector<Value> ivs = forall.getInductionVars();
  if (tile.getBatchIndex() != ivs[0] || tile.getHeadIndex() != ivs[1] ||
      !isInductionVariable(tile.getTileIndex(), ivs[2]) ||
      finalize.getAcc() != tile.getNewAcc() ||
      finalize.getSum() != tile.getNewSum() ||
      !isFilledWith(tile.getMax(), -INFINITY) ||
      !isFilledWith(tile.getSum(), 0.0f) || !isFilledWith(tile.getAcc(), 0.0f))
    return std::nullopt;
  if (lse &&
      (lse.getMax() != tile.getNewMax() || lse.getSum() != tile.getNewSum()))
    return std::nullopt;
  // The only writes: the finalized rows into the shared output at [b, h]
  // (and their log-sum-exp into the second one).
  SmallVector<Operation *> yields;
  for (Operation &yield : forall.getTerminator().getYieldingOps())
    yields.push_back(&yield);
  if (yields.size() != forall.getNumResults())
    return std::nullopt;
  Value sources[2] = {finalize.getOutput(), lse ? lse.getLse() : Value()};
  for (auto [index, yield] : llvm::enumerate(yields)) {
    auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(yield);
    if (!insert || skipUnitReshape(insert.getSource()) != sources[index] ||
        insert.getDest() != forall.getRegionIterArgs()[index])
      return std::nullopt;
    SmallVector<OpFoldResult> offsets = insert.getMixedOffsets();
    if (offsets.size() != (index ? 3 : 4) ||
        offsets[0] != OpFoldResult(ivs[0]) ||
        offsets[1] != OpFoldResult(ivs[1]))
      return std::nullopt;
  }
  return TiledAttention{forall, tile, finalize, lse};
}

std::pair<Value, Value>
mlir::attn::emitQueryTileRows(OpBuilder &b, Location loc, QueryTiling tiling,
                              Value tile, Value queryLen) {
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value first, end;
  if (tiling.period) {
    Value perPeriod = index(tiling.tilesPerPeriod());
    Value p = arith::DivUIOp::create(b, loc, tile, perPeriod);
    Value k = arith::RemUIOp::create(b, loc, tile, perPeriod);
    Value periodStart = arith::MulIOp::create(b, loc, p, index(tiling.period));
    first = arith::AddIOp::create(
        b, loc, periodStart,
        arith::MulIOp::create(b, loc, k, index(tiling.tile)));
    end = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, first, index(tiling.tile)),
        arith::AddIOp::create(b, loc, periodStart, index(tiling.period)));
  } else {
    first = arith::MulIOp::create(b, loc, tile, index(tiling.tile));
    end = arith::AddIOp::create(b, loc, first, index(tiling.tile));
  }
  first = arith::MinUIOp::create(b, loc, first, queryLen);
  end = arith::MinUIOp::create(b, loc, end, queryLen);
  return {first, arith::SubIOp::create(b, loc, end, first)};
}

Value mlir::attn::emitNumQueryTiles(OpBuilder &b, Location loc,
                                    QueryTiling tiling, Value queryLen) {
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  if (!tiling.period)
    return arith::CeilDivUIOp::create(b, loc, queryLen, index(tiling.tile));
  Value periods =
      arith::CeilDivUIOp::create(b, loc, queryLen, index(tiling.period));
  return arith::MulIOp::create(b, loc, periods, index(tiling.tilesPerPeriod()));
}

Value mlir::attn::emitScoreRegion(OpBuilder &b, OnlineAttentionOp op, Value x,
                                  Value batch, Value head, Value row, Value col,
                                  bool copyCapturedConstants) {
  Block &body = op.getScore().front();
  IRMapping mapping;
  Value args[] = {x, batch, head, row, col};
  for (auto [arg, value] : llvm::zip(body.getArguments(), args))
    mapping.map(arg, value);
  if (copyCapturedConstants)
    op.getScore().walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        if (!mapping.contains(operand) &&
            !op.getScore().isAncestor(operand.getParentRegion()))
          mapping.map(operand, b.clone(*operand.getDefiningOp())->getResult(0));
    });
  for (Operation &inner : body.without_terminator())
    b.clone(inner, mapping);
  return mapping.lookup(cast<YieldOp>(body.getTerminator()).getValues()[0]);
}

OnlineAttentionOp
mlir::attn::emitTileFromEmptyState(OpBuilder &b, AttentionOp op, Value batch,
                                   Value head, Value tile, Value rows,
                                   QueryTiling tiling, int64_t keyTile) {
  Location loc = op.getLoc();
  Value valueDim = getValueOrCreateConstantIndexOp(
      b, loc, tensor::getMixedSize(b, loc, op.getValue(), 3));
  auto filled = [&](float value, ArrayRef<Value> sizes) -> Value {
    Value empty = tensor::EmptyOp::create(b, loc, getAsOpFoldResult(sizes),
                                          b.getF32Type());
    Value constant =
        arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
    return linalg::FillOp::create(b, loc, ValueRange{constant},
                                  ValueRange{empty})
        .getResult(0);
  };
  Value m = filled(-INFINITY, {rows}), l = filled(0.0f, {rows}),
        acc = filled(0.0f, {rows, valueDim});
  return OnlineAttentionOp::create(
      b, loc, TypeRange{m.getType(), l.getType(), acc.getType()}, op.getQuery(),
      op.getKey(), op.getValue(), op.getMask(), op.getBias(), op.getQSegments(),
      op.getKvSegments(), op.getRelTable(), batch, head, tile, m, l, acc,
      tiling.tile, tiling.period, keyTile, op.getPatternAttr(),
      op.getScaleAttr(), op.getAlignAttr(), op.getModsAttr(),
      op.getQueryOffsetAttr(), op.getKeyOffsetAttr());
}
