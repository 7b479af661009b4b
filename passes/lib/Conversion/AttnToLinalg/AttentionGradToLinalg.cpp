//===- AttentionGradToLinalg.cpp - the backward as loops of linalg --------===//
//
// attn.attention_grad becomes two loop nests over tiles (FlashAttention-2's
// backward with a second pass instead of atomics, so that each result tile
// has one writer):
//
//   dQ:     forall (b, h, query tile)   for key tiles j0:     dQ += dS K
//   dK, dV: forall (b, hkv, key tile)   for h in the group, query tiles i0:
//                                         dV += P^T dO, dK += dS^T Q
//
// where, per tile, x are the logits (ScoreTile.h), P = exp(x - lse) (0 for
// dropped keys and for rows that keep nothing), D = rowsum(dO o O) and
// dS = scale P (dO V^T - D) (1 - tanh^2) (the last factor only with a
// soft-cap). Products skip entries with P = 0 / dS = 0, so a dropped key's
// K or V never reaches a gradient even as NaN or inf. Tiles the pattern
// drops are skipped (emitTileClass, as the forward).
//
//===----------------------------------------------------------------------===//
#include "ScoreTile.h"
#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/MaskCodegen.h"
#include "attn/Transforms/ScoreModCodegen.h"
#include "attn/Transforms/ScoreRegionDerivative.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/AffineMap.h"
#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNLOWERATTENTIONGRAD
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

using utils::IteratorType;

/// The first feature of `op` this lowering cannot differentiate, reported
/// at the op.
LogicalResult checkSupported(AttentionGradOp op) {
  auto refuse = [&](const Twine &what) {
    return op.emitOpError("attn-lower-attention-grad: ")
           << what << " has no backward yet";
  };
  if (!op.getScore().empty())
    if (Operation *inner = findUndifferentiableOp(op.getScore()))
      return refuse(Twine("the score region's '") +
                    inner->getName().getStringRef() + "'");
  if (ArrayAttr mods = op.getModsAttr())
    for (Attribute mod : mods)
      if (isa<DistanceWeightAttr>(mod))
        return refuse("#attn.distance_weight (not additive)");
  if (!op.getOperandGrads().empty() && op.getBias()) {
    // Which dimensions the bias broadcasts must be known to sum over them.
    auto biasType = cast<RankedTensorType>(op.getBias().getType());
    for (int64_t d = 0; d < 3; ++d)
      if (biasType.isDynamicDim(d))
        return op.emitOpError("attn-lower-attention-grad: the bias gradient "
                              "needs the bias's batch, head and query "
                              "dimensions static");
  }
  std::string reason;
  int64_t numHeads =
      cast<RankedTensorType>(op.getQuery().getType()).getDimSize(1);
  if (!isScoreModCodegenSupported(op.getModsAttr(), numHeads, reason))
    return op.emitOpError("attn-lower-attention-grad: ") << reason;
  if (MaskAttrInterface pattern = op.getPatternAttr())
    if (!isMaskCodegenSupported(pattern, op.getMaskShape(),
                                /*withTensors=*/true, reason))
      return op.emitOpError("attn-lower-attention-grad: ") << reason;
  return success();
}

/// Builds the two loop nests of one attn.attention_grad.
class GradLowering {
public:
  GradLowering(AttentionGradOp op, int64_t queryTile, int64_t keyTile,
               bool countTiles)
      : op(op), b(op), loc(op.getLoc()), f32(b.getF32Type()),
        queryTile(queryTile), keyTile(keyTile), countTiles(countTiles) {}

  /// dQ, dK, dV in the op's result types.
  SmallVector<Value> build();

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32Const(OpBuilder &builder, float v) {
    return arith::ConstantOp::create(builder, loc, builder.getF32FloatAttr(v));
  }
  Value dim(Value tensor, int64_t d) {
    return getValueOrCreateConstantIndexOp(
        b, loc, tensor::getMixedSize(b, loc, tensor, d));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  /// min(tile, length - start): the rows of the tile at `start`.
  Value tileRows(int64_t tile, Value length, Value start) {
    return arith::MinSIOp::create(b, loc, index(tile),
                                  arith::SubIOp::create(b, loc, length, start));
  }
  Value filled(float value, ArrayRef<Value> sizes) {
    Value empty =
        tensor::EmptyOp::create(b, loc, getAsOpFoldResult(sizes), f32);
    return linalg::FillOp::create(b, loc, ValueRange{f32Const(b, value)},
                                  ValueRange{empty})
        .getResult(0);
  }
  Value generic(ValueRange inputs, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iterators,
                function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    return linalg::GenericOp::create(
               b, loc, TypeRange{init.getType()}, inputs, ValueRange{init},
               maps, iterators,
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 linalg::YieldOp::create(nb, l, ValueRange{body(nb, l, args)});
               })
        .getResult(0);
  }
  AffineMap map2(ArrayRef<AffineExpr> results) {
    return AffineMap::get(2, 0, results, b.getContext());
  }
  AffineMap map3(ArrayRef<AffineExpr> results) {
    return AffineMap::get(3, 0, results, b.getContext());
  }

  /// The query-side tiles of (batch, head, rows [i0, i0 + tq)).
  struct QueryRows {
    Value q, o, dO, lse, rowDot; // rowDot = rowsum(dO o O)
  };
  QueryRows queryRows(Value batch, Value head, Value i0, Value tq);
  /// P, dX (the gradient of the logits before the score region, when
  /// there is one), dS of one tile (the file comment's formulas), and with
  /// a score region the final logits' gradient and the logits before it.
  struct TileGradients {
    Value probs, logitGrad, scoreGrad, finalLogitGrad, preRegion;
  };
  TileGradients tileGradients(const QueryRows &rows, Value kTile, Value vTile,
                              Value batch, Value head, Value i0, Value j0,
                              Value tq, Value tk);
  /// acc[r, c] += sum_s weights(s, r or r, s) x[s, c], skipping zero weights;
  /// `transposed` reads weights as [s, r] (dK, dV), else as [r, s] (dQ).
  Value accumulate(Value acc, Value weights, Value x, bool transposed);
  /// Runs `body` on the tile [i0, i0 + tq) x [j0, j0 + tk) unless the
  /// pattern drops it; yields `state` unchanged when it does.
  SmallVector<Value> unlessEmpty(Value i0, Value tq, Value j0, Value tk,
                                 ValueRange state,
                                 function_ref<SmallVector<Value>()> body);

  /// dQ, then [B, Hq, Lq, Lk] tensors of every (b, h, i, j): with
  /// `withLogitGrads` dX, with `withRegionInputs` the final logits'
  /// gradient and the logits before the score region.
  SmallVector<Value> buildQueryGrad(bool withLogitGrads, bool withRegionInputs);
  /// Reports (dQ pass, dK/dV pass) visited tiles to the runtime's
  /// attn_record_backward_tiles (declared once).
  void record(ValueRange passCounts);
  /// In `forall`'s terminator: tile n, rows [first, first + rows) of
  /// (batch, head) and columns[n] wide, into shared output n.
  void insertTiles(scf::ForallOp forall, ValueRange tiles, Value batch,
                   Value head, Value first, Value rows,
                   ArrayRef<Value> columns);
  /// The bias operand's gradient from dX.
  Value buildBiasGrad(Value logitGrads);
  /// The rel_table operand's gradient from dX: each logit's dX added to
  /// the table entry its Shaw / T5 mod read.
  Value buildRelTableGrad(Value logitGrads);
  /// The gradients of the tensors the score region captures: per logit,
  /// its final gradient times the region's derivative with respect to
  /// each element it read, added to that element.
  SmallVector<Value> buildCapturedGrads(Value finalLogitGrads, Value preRegion);
  /// for b, h, i, j of [B, Hq, Lq, Lk]: state = body(b, h, i, j, state).
  SmallVector<Value> forEachLogit(
      ValueRange init,
      function_ref<SmallVector<Value>(ValueRange ivs, ValueRange state)> body);
  std::pair<Value, Value> buildKeyValueGrads();
  /// `value` (f32) in the element type of `like`.
  Value toElementTypeOf(Value value, Value like);

  AttentionGradOp op;
  OpBuilder b;
  Location loc;
  Type f32;
  int64_t queryTile, keyTile;
  /// Count visited tiles (a last index in every loop's state) and report
  /// them to the runtime's counters.
  bool countTiles;
  ScoreOperands operands;
  Value batchSize, queryHeads, keyHeads, groups, queryLen, keyLen, headDim,
      valueDim, delta, scale;
};

void GradLowering::record(ValueRange passCounts) {
  StringRef function = "attn_record_backward_tiles";
  auto module = op->getParentOfType<ModuleOp>();
  Type i64 = b.getI64Type();
  if (!module.lookupSymbol(function)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    func::FuncOp::create(b, loc, function,
                         b.getFunctionType({i64, i64, i64, i64}, {}))
        .setPrivate();
  }
  SmallVector<Value> args;
  for (Value count :
       {index(queryTile), index(keyTile), passCounts[0], passCounts[1]})
    args.push_back(arith::IndexCastOp::create(b, loc, i64, count));
  func::CallOp::create(b, loc, function, TypeRange{}, args);
}

void GradLowering::insertTiles(scf::ForallOp forall, ValueRange tiles,
                               Value batch, Value head, Value first, Value rows,
                               ArrayRef<Value> columns) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  for (auto [n, width] : llvm::enumerate(columns)) {
    SmallVector<OpFoldResult> offsets = {batch, head, first, b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                                       getAsOpFoldResult(rows),
                                       getAsOpFoldResult(width)};
    tensor::ParallelInsertSliceOp::create(b, loc, tiles[n],
                                          forall.getRegionIterArgs()[n],
                                          offsets, sizes, strides);
  }
}

GradLowering::QueryRows GradLowering::queryRows(Value batch, Value head,
                                                Value i0, Value tq) {
  QueryRows rows;
  rows.q = sliceRows(b, loc, op.getQuery(), {batch, head, i0, index(0)}, tq,
                     headDim);
  rows.o = sliceRows(b, loc, op.getOutput(), {batch, head, i0, index(0)}, tq,
                     valueDim);
  rows.dO = sliceRows(b, loc, op.getOutputGrad(), {batch, head, i0, index(0)},
                      tq, valueDim);
  SmallVector<OpFoldResult> offsets =
      getAsOpFoldResult(ValueRange{batch, head, i0});
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                                     getAsOpFoldResult(tq)};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  auto lseType = tensor::ExtractSliceOp::inferCanonicalRankReducedResultType(
      1, cast<RankedTensorType>(op.getLse().getType()), sizes);
  rows.lse = tensor::ExtractSliceOp::create(b, loc, lseType, op.getLse(),
                                            offsets, sizes, strides);
  AffineExpr i, c;
  bindDims(b.getContext(), i, c);
  rows.rowDot =
      generic({rows.dO, rows.o}, filled(0.0f, {tq}),
              {map2({i, c}), map2({i, c}), map2({i})},
              {IteratorType::parallel, IteratorType::reduction},
              [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                Value prod = arith::MulFOp::create(
                    nb, l, extendToF32(nb, l, a[0]), extendToF32(nb, l, a[1]));
                return arith::AddFOp::create(nb, l, a[2], prod);
              });
  return rows;
}

GradLowering::TileGradients
GradLowering::tileGradients(const QueryRows &rows, Value kTile, Value vTile,
                            Value batch, Value head, Value i0, Value j0,
                            Value tq, Value tk) {
  Value dot = buildTileProduct(b, loc, rows.q, kTile, tq, tk);
  bool masked = operands.pattern || operands.mask;
  ScoreTileOutputs scores = buildScoreTileWithSlope(
      b, loc, operands, {batch, head, i0, j0, tq, tk, delta, scale}, dot,
      masked);
  Value logits = scores.logits;
  Value dP = buildTileProduct(b, loc, rows.dO, vTile, tq, tk);
  AffineExpr i, j;
  bindDims(b.getContext(), i, j);
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  SmallVector<IteratorType> par2(2, IteratorType::parallel);
  Value empty = tensor::EmptyOp::create(
      b, loc, getAsOpFoldResult(ValueRange{tq, tk}), f32);
  // P = exp(x - lse): 0 where x = -inf (a dropped key) and in a row that
  // keeps nothing (lse = -inf), where x - lse would be NaN.
  Value probs = generic(
      {logits, rows.lse}, empty, {id2, map2({i}), id2}, par2,
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value negInf = f32Const(nb, -INFINITY);
        Value emptyRow = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                               a[1], negInf);
        Value p = math::ExpOp::create(nb, l,
                                      arith::SubFOp::create(nb, l, a[0], a[1]));
        return arith::SelectOp::create(nb, l, emptyRow, f32Const(nb, 0.0f), p);
      });
  std::optional<float> cap;
  if (ArrayAttr mods = op.getModsAttr())
    for (Attribute mod : mods)
      if (auto softcap = dyn_cast<SoftcapAttr>(mod))
        cap = softcap.getCap().convertToFloat();
  // dX = P (dP - D), 0 where P = 0 (a dropped key's NaN V stays out);
  // through a score region, times its slope.
  auto logitGrad = [&](Value slope) {
    SmallVector<Value> inputs = {probs, dP, rows.rowDot};
    SmallVector<AffineMap> maps = {id2, id2, map2({i})};
    if (slope) {
      inputs.push_back(slope);
      maps.push_back(id2);
    }
    maps.push_back(id2);
    return generic(
        inputs, empty, maps, par2,
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value dx = arith::MulFOp::create(
              nb, l, a[0], arith::SubFOp::create(nb, l, a[1], a[2]));
          if (slope)
            dx = arith::MulFOp::create(nb, l, dx, a[3]);
          Value kept = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::ONE,
                                             a[0], f32Const(nb, 0.0f));
          return arith::SelectOp::create(nb, l, kept, dx, f32Const(nb, 0.0f));
        });
  };
  Value dX = logitGrad(scores.regionSlope);
  Value finalDX = scores.regionSlope ? logitGrad(Value()) : dX;
  Value dS =
      generic({dX, dot}, empty, {id2, id2, id2}, par2,
              [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                Value ds = arith::MulFOp::create(nb, l, a[0], scale);
                if (!cap)
                  return ds;
                // d(c tanh(s / c)) / ds = 1 - tanh^2(s / c), s = scale Q K^T.
                Value s = arith::MulFOp::create(nb, l, a[1], scale);
                Value t = math::TanhOp::create(
                    nb, l, arith::DivFOp::create(nb, l, s, f32Const(nb, *cap)));
                Value slope =
                    arith::SubFOp::create(nb, l, f32Const(nb, 1.0f),
                                          arith::MulFOp::create(nb, l, t, t));
                return arith::MulFOp::create(nb, l, ds, slope);
              });
  return {probs, dX, dS, finalDX, scores.preRegion};
}

Value GradLowering::accumulate(Value acc, Value weights, Value x,
                               bool transposed) {
  AffineExpr r, c, s;
  bindDims(b.getContext(), r, c, s);
  return generic(
      {weights, x}, acc,
      {map3(transposed ? ArrayRef<AffineExpr>{s, r}
                       : ArrayRef<AffineExpr>{r, s}),
       map3({s, c}), map3({r, c})},
      {IteratorType::parallel, IteratorType::parallel, IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value prod =
            arith::MulFOp::create(nb, l, a[0], extendToF32(nb, l, a[1]));
        Value kept = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::ONE,
                                           a[0], f32Const(nb, 0.0f));
        return arith::SelectOp::create(
            nb, l, kept, arith::AddFOp::create(nb, l, a[2], prod), a[2]);
      });
}

SmallVector<Value>
GradLowering::unlessEmpty(Value i0, Value tq, Value j0, Value tk,
                          ValueRange state,
                          function_ref<SmallVector<Value>()> body) {
  // A visited tile adds one to the counter (the state's last value).
  auto visit = [&]() {
    SmallVector<Value> next = body();
    if (countTiles)
      next.push_back(add(state.back(), index(1)));
    return next;
  };
  if (!operands.pattern)
    return visit();
  Value isEmpty = emitTileClass(b, loc, operands.pattern, i0, add(i0, tq), j0,
                                add(j0, tk), delta)
                      .first;
  auto ifOp = scf::IfOp::create(
      b, loc, isEmpty,
      [&](OpBuilder &tb, Location tl) { scf::YieldOp::create(tb, tl, state); },
      [&](OpBuilder &eb, Location el) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(eb.getInsertionBlock(), eb.getInsertionPoint());
        scf::YieldOp::create(b, el, visit());
      });
  return SmallVector<Value>(ifOp.getResults());
}

SmallVector<Value> GradLowering::buildQueryGrad(bool withLogitGrads,
                                                bool withRegionInputs) {
  Value numTiles =
      arith::CeilDivUIOp::create(b, loc, queryLen, index(queryTile));
  // Per (b, h, i, j) tensors kept whole for the operand gradients.
  unsigned numWhole = (withLogitGrads ? 1 : 0) + (withRegionInputs ? 2 : 0);
  SmallVector<Value> outs = {tensor::EmptyOp::create(
      b, loc,
      getAsOpFoldResult(ValueRange{batchSize, queryHeads, queryLen, headDim}),
      f32)};
  for (unsigned n = 0; n < numWhole; ++n)
    outs.push_back(tensor::EmptyOp::create(
        b, loc,
        getAsOpFoldResult(ValueRange{batchSize, queryHeads, queryLen, keyLen}),
        f32));
  auto forall = scf::ForallOp::create(
      b, loc, getAsOpFoldResult(ValueRange{batchSize, queryHeads, numTiles}),
      outs, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value batch = forall.getInductionVars()[0],
        head = forall.getInductionVars()[1];
  Value i0 = mul(forall.getInductionVars()[2], index(queryTile));
  Value tq = tileRows(queryTile, queryLen, i0);
  Value kvHead = arith::DivUIOp::create(b, loc, head, groups);
  QueryRows rows = queryRows(batch, head, i0, tq);
  // The state: dQ's rows, and the rows of the whole tensors over every key
  // (0 in the tiles the pattern drops).
  SmallVector<Value> init = {filled(0.0f, {tq, headDim})};
  for (unsigned n = 0; n < numWhole; ++n)
    init.push_back(filled(0.0f, {tq, keyLen}));
  if (countTiles)
    init.push_back(index(0));
  auto loop = scf::ForOp::create(
      b, loc, index(0), keyLen, index(keyTile), init,
      [&](OpBuilder &nb, Location l, Value j0, ValueRange state) {
        OpBuilder::InsertionGuard loopGuard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value tk = tileRows(keyTile, keyLen, j0);
        SmallVector<Value> next = unlessEmpty(i0, tq, j0, tk, state, [&] {
          Value kTile = sliceRows(b, loc, op.getKey(),
                                  {batch, kvHead, j0, index(0)}, tk, headDim);
          Value vTile = sliceRows(b, loc, op.getValue(),
                                  {batch, kvHead, j0, index(0)}, tk, valueDim);
          TileGradients tile =
              tileGradients(rows, kTile, vTile, batch, head, i0, j0, tq, tk);
          SmallVector<Value> updated = {accumulate(
              state[0], tile.scoreGrad, kTile, /*transposed=*/false)};
          SmallVector<Value> whole;
          if (withLogitGrads)
            whole.push_back(tile.logitGrad);
          if (withRegionInputs)
            whole.append({tile.finalLogitGrad, tile.preRegion});
          for (auto [n, t] : llvm::enumerate(whole))
            updated.push_back(tensor::InsertSliceOp::create(
                b, loc, t, state[1 + n],
                ArrayRef<OpFoldResult>{b.getIndexAttr(0), j0},
                ArrayRef<OpFoldResult>{tq, tk},
                ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)}));
          return updated;
        });
        scf::YieldOp::create(b, l, next);
      });
  if (countTiles)
    record({loop.getResults().back(), index(0)});
  SmallVector<Value> columns = {headDim};
  columns.append(numWhole, keyLen);
  insertTiles(forall, loop.getResults(), batch, head, i0, tq, columns);
  return SmallVector<Value>(forall.getResults());
}

Value GradLowering::buildBiasGrad(Value logitGrads) {
  // dBias[b', h', i', j] = sum of dX[b, h, i, j] over the dimensions the
  // bias broadcasts (size 1: static, checked by checkSupported): a
  // reduction into the kept dimensions, then the unit ones put back.
  Value bias = op.getBias();
  auto biasType = cast<RankedTensorType>(bias.getType());
  SmallVector<AffineExpr> kept;
  SmallVector<IteratorType> iterators;
  SmallVector<Value> keptSizes;
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices pending;
  for (int64_t d = 0; d < 4; ++d) {
    bool broadcast = biasType.getDimSize(d) == 1 && d < 3;
    iterators.push_back(broadcast ? IteratorType::reduction
                                  : IteratorType::parallel);
    pending.push_back(d);
    if (broadcast)
      continue;
    kept.push_back(b.getAffineDimExpr(d));
    keptSizes.push_back(dim(logitGrads, d));
    groups.push_back(pending);
    pending.clear();
  }
  Value sum = generic(
      {logitGrads}, filled(0.0f, keptSizes),
      {b.getMultiDimIdentityMap(4), AffineMap::get(4, 0, kept, b.getContext())},
      iterators, [](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::AddFOp::create(nb, l, a[1], a[0]);
      });
  Value expanded =
      tensor::ExpandShapeOp::create(b, loc, biasType.clone(f32), sum, groups);
  return toElementTypeOf(expanded, bias);
}

std::pair<Value, Value> GradLowering::buildKeyValueGrads() {
  Value numTiles = arith::CeilDivUIOp::create(b, loc, keyLen, index(keyTile));
  Value dkOut = tensor::EmptyOp::create(
      b, loc,
      getAsOpFoldResult(ValueRange{batchSize, keyHeads, keyLen, headDim}), f32);
  Value dvOut = tensor::EmptyOp::create(
      b, loc,
      getAsOpFoldResult(ValueRange{batchSize, keyHeads, keyLen, valueDim}),
      f32);
  auto forall = scf::ForallOp::create(
      b, loc, getAsOpFoldResult(ValueRange{batchSize, keyHeads, numTiles}),
      ValueRange{dkOut, dvOut}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value batch = forall.getInductionVars()[0],
        kvHead = forall.getInductionVars()[1];
  Value j0 = mul(forall.getInductionVars()[2], index(keyTile));
  Value tk = tileRows(keyTile, keyLen, j0);
  Value kTile = sliceRows(b, loc, op.getKey(), {batch, kvHead, j0, index(0)},
                          tk, headDim);
  Value vTile = sliceRows(b, loc, op.getValue(), {batch, kvHead, j0, index(0)},
                          tk, valueDim);
  SmallVector<Value> init = {filled(0.0f, {tk, headDim}),
                             filled(0.0f, {tk, valueDim})};
  if (countTiles)
    init.push_back(index(0));
  // The query heads of the group share this K/V head: their dK, dV add up.
  auto heads = scf::ForOp::create(
      b, loc, index(0), groups, index(1), init,
      [&](OpBuilder &hb, Location hl, Value g, ValueRange headState) {
        OpBuilder::InsertionGuard headGuard(b);
        b.setInsertionPoint(hb.getInsertionBlock(), hb.getInsertionPoint());
        Value head = add(mul(kvHead, groups), g);
        auto rowsLoop = scf::ForOp::create(
            b, hl, index(0), queryLen, index(queryTile), headState,
            [&](OpBuilder &nb, Location l, Value i0, ValueRange state) {
              OpBuilder::InsertionGuard loopGuard(b);
              b.setInsertionPoint(nb.getInsertionBlock(),
                                  nb.getInsertionPoint());
              Value tq = tileRows(queryTile, queryLen, i0);
              SmallVector<Value> next = unlessEmpty(i0, tq, j0, tk, state, [&] {
                QueryRows rows = queryRows(batch, head, i0, tq);
                TileGradients tile = tileGradients(rows, kTile, vTile, batch,
                                                   head, i0, j0, tq, tk);
                return SmallVector<Value>{
                    accumulate(state[0], tile.scoreGrad, rows.q,
                               /*transposed=*/true),
                    accumulate(state[1], tile.probs, rows.dO,
                               /*transposed=*/true)};
              });
              scf::YieldOp::create(b, l, next);
            });
        scf::YieldOp::create(b, hl, rowsLoop.getResults());
      });
  if (countTiles)
    record({index(0), heads.getResults().back()});
  insertTiles(forall, heads.getResults(), batch, kvHead, j0, tk,
              {headDim, valueDim});
  return {forall.getResult(0), forall.getResult(1)};
}

SmallVector<Value> GradLowering::forEachLogit(
    ValueRange init,
    function_ref<SmallVector<Value>(ValueRange ivs, ValueRange state)> body) {
  SmallVector<Value> uppers = {batchSize, queryHeads, queryLen, keyLen};
  SmallVector<Value> ivs;
  // One scf.for per dimension, the state threaded through them in order
  // (a scatter: entries are shared by many logits).
  std::function<SmallVector<Value>(unsigned, ValueRange)> nest =
      [&](unsigned d, ValueRange state) -> SmallVector<Value> {
    if (d == uppers.size())
      return body(ivs, state);
    auto loop = scf::ForOp::create(
        b, loc, index(0), uppers[d], index(1), state,
        [&](OpBuilder &nb, Location l, Value iv, ValueRange args) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          ivs.push_back(iv);
          scf::YieldOp::create(b, l, nest(d + 1, args));
          ivs.pop_back();
        });
    return SmallVector<Value>(loop.getResults());
  };
  return nest(0, init);
}

Value GradLowering::buildRelTableGrad(Value logitGrads) {
  Value table = op.getRelTable();
  Value init = filled(0.0f, {dim(table, 0), dim(table, 1)});
  // grad[h, column(j - (i + delta))] += dX[b, h, i, j].
  Value sum = forEachLogit(init, [&](ValueRange ivs, ValueRange state) {
    Value distance =
        arith::SubIOp::create(b, loc, ivs[3], add(ivs[2], delta)).getResult();
    Value column = emitRelTableColumn(b, loc, op.getModsAttr(), distance);
    Value dx = tensor::ExtractOp::create(b, loc, logitGrads, ivs);
    Value old =
        tensor::ExtractOp::create(b, loc, state[0], ValueRange{ivs[1], column});
    return SmallVector<Value>{
        tensor::InsertOp::create(b, loc, arith::AddFOp::create(b, loc, old, dx),
                                 state[0], ValueRange{ivs[1], column})
            .getResult()};
  })[0];
  return toElementTypeOf(sum, table);
}

SmallVector<Value> GradLowering::buildCapturedGrads(Value finalLogitGrads,
                                                    Value preRegion) {
  SmallVector<Value> captured = op.getCapturedTensors();
  SmallVector<Value> init;
  for (Value tensor : captured) {
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < cast<RankedTensorType>(tensor.getType()).getRank();
         ++d)
      sizes.push_back(dim(tensor, d));
    init.push_back(filled(0.0f, sizes));
  }
  SmallVector<Value> sums = forEachLogit(init, [&](ValueRange ivs,
                                                   ValueRange state) {
    Value dx = tensor::ExtractOp::create(b, loc, finalLogitGrads, ivs);
    // Only logits with a gradient run the region (a dropped key adds
    // nothing, and the region may not be defined there).
    Value reached = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, dx,
                                          f32Const(b, 0.0f));
    auto ifOp = scf::IfOp::create(
        b, loc, reached,
        [&](OpBuilder &tb, Location tl) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(tb.getInsertionBlock(), tb.getInsertionPoint());
          Value x = tensor::ExtractOp::create(b, loc, preRegion, ivs);
          ScoreRegionTangents t = emitScoreRegionTangents(
              b, loc, op.getScore(), {x, ivs[0], ivs[1], ivs[2], ivs[3]},
              captured);
          SmallVector<Value> next(state.begin(), state.end());
          for (const CapturedRead &read : t.reads) {
            Value &sum = next[read.tensor];
            Value old = tensor::ExtractOp::create(b, loc, sum, read.indices);
            Value added = arith::MulFOp::create(
                b, loc, dx, extendToF32(b, loc, read.slope));
            sum = tensor::InsertOp::create(
                b, loc, arith::AddFOp::create(b, loc, old, added), sum,
                read.indices);
          }
          scf::YieldOp::create(b, tl, next);
        },
        [&](OpBuilder &eb, Location el) {
          scf::YieldOp::create(eb, el, state);
        });
    return SmallVector<Value>(ifOp.getResults());
  });
  SmallVector<Value> grads;
  for (auto [sum, tensor] : llvm::zip(sums, captured))
    grads.push_back(toElementTypeOf(sum, tensor));
  return grads;
}

Value GradLowering::toElementTypeOf(Value value, Value like) {
  auto type = cast<RankedTensorType>(like.getType());
  if (type.getElementType().isF32())
    return value;
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(dim(like, d));
  Value init = tensor::EmptyOp::create(b, loc, getAsOpFoldResult(sizes),
                                       type.getElementType());
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  return generic(
      {value}, init, {id, id},
      SmallVector<IteratorType>(type.getRank(), IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::TruncFOp::create(nb, l, type.getElementType(), a[0]);
      });
}

SmallVector<Value> GradLowering::build() {
  Value q = op.getQuery(), k = op.getKey();
  batchSize = dim(q, 0);
  queryHeads = dim(q, 1);
  queryLen = dim(q, 2);
  headDim = dim(q, 3);
  keyHeads = dim(k, 1);
  keyLen = dim(k, 2);
  valueDim = dim(op.getValue(), 3);
  groups = arith::DivUIOp::create(b, loc, queryHeads, keyHeads);
  delta = op.getAlignment() == Alignment::bottom_right
              ? arith::SubIOp::create(b, loc, keyLen, queryLen).getResult()
              : index(0);
  if (int64_t shift = op.getPositionShift())
    delta = add(delta, index(shift));
  if (std::optional<APFloat> attr = op.getScale()) {
    scale = f32Const(b, attr->convertToFloat());
  } else {
    Value d = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), headDim);
    scale =
        math::RsqrtOp::create(b, loc, arith::UIToFPOp::create(b, loc, f32, d));
  }
  operands = ScoreOperands{op.getBias(),
                           op.getMask(),
                           op.getQSegments(),
                           op.getKvSegments(),
                           op.getRelTable(),
                           op.getModsAttr(),
                           op.getPatternAttr(),
                           op.getMaskShape(),
                           cast<RankedTensorType>(q.getType()).getDimSize(1),
                           {}};
  bool hasRegion = !op.getScore().empty();
  if (hasRegion)
    operands.scoreRegionWithSlope = [&](OpBuilder &nb, Value x, Value batch,
                                        Value head, Value row, Value col) {
      ScoreRegionTangents t = emitScoreRegionTangents(
          nb, loc, op.getScore(), {x, batch, head, row, col});
      return std::make_pair(t.y, t.slope);
    };
  bool operandGrads = !op.getOperandGrads().empty();
  bool withLogitGrads = operandGrads && (op.getBias() || op.getRelTable());
  bool withCaptured = operandGrads && !op.getCapturedTensors().empty();
  SmallVector<Value> queryPass = buildQueryGrad(withLogitGrads, withCaptured);
  auto [dk, dv] = buildKeyValueGrads();
  SmallVector<Value> grads = {toElementTypeOf(queryPass[0], q),
                              toElementTypeOf(dk, k),
                              toElementTypeOf(dv, op.getValue())};
  if (withLogitGrads && op.getBias())
    grads.push_back(buildBiasGrad(queryPass[1]));
  if (withLogitGrads && op.getRelTable())
    grads.push_back(buildRelTableGrad(queryPass[1]));
  if (withCaptured)
    llvm::append_range(grads,
                       buildCapturedGrads(queryPass[withLogitGrads ? 2 : 1],
                                          queryPass[withLogitGrads ? 3 : 2]));
  return grads;
}

struct AttnLowerAttentionGradPass
    : attn::impl::AttnLowerAttentionGradBase<AttnLowerAttentionGradPass> {
  using AttnLowerAttentionGradBase::AttnLowerAttentionGradBase;

  void runOnOperation() override {
    if (queryTile < 1 || keyTile < 1) {
      getOperation().emitError("attn-lower-attention-grad: query-tile and "
                               "key-tile must be positive");
      return signalPassFailure();
    }
    SmallVector<AttentionGradOp> ops;
    getOperation().walk([&](AttentionGradOp op) { ops.push_back(op); });
    for (AttentionGradOp op : ops) {
      if (failed(checkSupported(op)))
        return signalPassFailure();
      SmallVector<Value> grads =
          GradLowering(op, queryTile, keyTile, countTiles).build();
      op.replaceAllUsesWith(grads);
      op.erase();
    }
  }
};

} // namespace
