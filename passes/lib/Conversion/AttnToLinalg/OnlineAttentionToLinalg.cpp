//===- OnlineAttentionToLinalg.cpp - the tiled form as loops of linalg ----===//
//
// The generic lowering of the tiled form (TiledForm.h), for any target.
// attn.online_attention becomes the flash loop over key tiles:
//
//   scf.for j0 = 0 to Lk step TK iter_args(m, l, acc) {
//     if tile is empty under the pattern: yield unchanged
//     S = scale * Q_tile K_tile^T (+ bias), masked unless the tile is full
//     m' = max(m, rowmax S); alpha = exp(m - m'); P = exp(S - m')
//     l' = alpha l + rowsum P; acc' = alpha acc + P V_tile
//   }
//
// and attn.finalize_tile becomes O_tile = l == 0 ? 0 : acc / l. Remainder
// tiles are the sizes left over (min(T, L - start)), so any length works.
// A running max of -inf (nothing kept yet) is replaced by 0 before it is
// subtracted, so fully masked rows stay NaN-free and end with l == 0.
// Inputs of other float types are extended to f32 where they are read.
//
//===----------------------------------------------------------------------===//
#include "ScoreTile.h"
#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/MaskCodegen.h"
#include "attn/Transforms/ScoreModCodegen.h"
#include "attn/Transforms/TiledForm.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/IRMapping.h"
#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNLOWERONLINEATTENTION
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

using utils::IteratorType;
using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// Reports the first feature of `op` this lowering does not handle yet.
LogicalResult checkSupported(OnlineAttentionOp op) {
  std::string reason;
  int64_t numHeads =
      cast<RankedTensorType>(op.getQuery().getType()).getDimSize(1);
  if (!isScoreModCodegenSupported(op.getModsAttr(), numHeads, reason))
    return op.emitOpError("attn-lower-online-attention: ") << reason;
  if (MaskAttrInterface pattern = op.getPatternAttr()) {
    if (!isMaskCodegenSupported(pattern, op.getMaskShape(),
                                /*withTensors=*/true, reason))
      return op.emitOpError("attn-lower-online-attention: ") << reason;
  }
  return success();
}

/// Builds the key tile loop of one attn.online_attention.
class FlashTiler {
public:
  explicit FlashTiler(OnlineAttentionOp op)
      : op(op), b(op), loc(op.getLoc()), keyTile(op.getKeyTileAttr().getInt()),
        f32(b.getF32Type()) {}

  /// Returns the final state (m, l, acc).
  SmallVector<Value> build();

private:
  // Small builders.
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32Const(OpBuilder &builder, Location l, float v) {
    return arith::ConstantOp::create(builder, l, builder.getF32FloatAttr(v));
  }
  Value dim(Value tensor, int64_t d) {
    return getValueOrCreateConstantIndexOp(
        b, loc, tensor::getMixedSize(b, loc, tensor, d));
  }
  Value minIndex(Value x, Value y) {
    return arith::MinSIOp::create(b, loc, x, y);
  }
  Value filled(float value, ArrayRef<Value> sizes) {
    SmallVector<OpFoldResult> mixed = getAsOpFoldResult(sizes);
    Value empty = tensor::EmptyOp::create(b, loc, mixed, f32);
    return linalg::FillOp::create(b, loc, ValueRange{f32Const(b, loc, value)},
                                  ValueRange{empty})
        .getResult(0);
  }
  Value emptyTensor(ArrayRef<Value> sizes, Type elementType) {
    return tensor::EmptyOp::create(b, loc, getAsOpFoldResult(sizes),
                                   elementType);
  }
  /// A rank-reduced [rows, cols] slice of a 4-D [B, H, L, C] tensor.
  Value slice(Value source, ArrayRef<Value> offsets, Value rows, Value cols) {
    return sliceRows(b, loc, source, offsets, rows, cols);
  }
  /// linalg.generic with one result whose body returns the yielded value.
  Value generic(ValueRange inputs, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iterators, BodyFn body);

  /// S = scale * Q K^T (+ bias), with masked entries at -inf when `masked`.
  Value buildScores(Value qTile, Value kTile, Value i0, Value j0, Value tq,
                    Value tk, bool masked);
  /// One kv tile of the online softmax; returns {m', l', acc'}.
  SmallVector<Value> buildTileUpdate(ValueRange state, Value qTile, Value j0,
                                     Value tk, Value tq, Value isFull);

  OnlineAttentionOp op;
  OpBuilder b;
  Location loc;
  int64_t keyTile;
  Type f32;

  // Values of the op, set up by build().
  MaskAttrInterface pattern;
  Value batchIv, headIv, kvHead, i0;
  Value headDim, valueDim, keyLen, delta, scale;
};

Value FlashTiler::generic(ValueRange inputs, Value init,
                          ArrayRef<AffineMap> maps,
                          ArrayRef<IteratorType> iterators, BodyFn body) {
  auto genericOp = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc,
                                ValueRange{body(nested, nestedLoc, args)});
      });
  return genericOp.getResult(0);
}

Value FlashTiler::buildScores(Value qTile, Value kTile, Value i0Tile, Value j0,
                              Value tq, Value tk, bool masked) {
  ScoreOperands operands{
      op.getBias(),
      op.getMask(),
      op.getQSegments(),
      op.getKvSegments(),
      op.getRelTable(),
      op.getModsAttr(),
      pattern,
      op.getMaskShape(),
      cast<RankedTensorType>(op.getQuery().getType()).getDimSize(1),
      {}};
  if (!op.getScore().empty())
    operands.scoreRegion = [&](OpBuilder &nb, Value x, Value batch, Value head,
                               Value row, Value col) {
      return emitScoreRegion(nb, op, x, batch, head, row, col,
                             /*copyCapturedConstants=*/false);
    };
  Value dot = buildTileProduct(b, loc, qTile, kTile, tq, tk);
  return buildScoreTile(b, loc, operands,
                        {batchIv, headIv, i0Tile, j0, tq, tk, delta, scale},
                        dot, masked);
}

SmallVector<Value> FlashTiler::buildTileUpdate(ValueRange state, Value qTile,
                                               Value j0, Value tk, Value tq,
                                               Value isFull) {
  MLIRContext *ctx = b.getContext();
  Value m = state[0], l = state[1], acc = state[2];
  Value kTile =
      slice(op.getKey(), {batchIv, kvHead, j0, index(0)}, tk, headDim);
  Value vTile =
      slice(op.getValue(), {batchIv, kvHead, j0, index(0)}, tk, valueDim);

  // Full tiles (known from the pattern) take the unmasked path; a dense mask
  // operand always needs the masked one.
  Value scores;
  bool needsMask = pattern || op.getMask();
  if (!needsMask) {
    scores = buildScores(qTile, kTile, i0, j0, tq, tk, /*masked=*/false);
  } else if (op.getMask()) {
    scores = buildScores(qTile, kTile, i0, j0, tq, tk, /*masked=*/true);
  } else {
    auto ifOp = scf::IfOp::create(
        b, loc, isFull,
        [&](OpBuilder &nb, Location l) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          scf::YieldOp::create(
              b, l, buildScores(qTile, kTile, i0, j0, tq, tk, false));
        },
        [&](OpBuilder &nb, Location l) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          scf::YieldOp::create(b, l,
                               buildScores(qTile, kTile, i0, j0, tq, tk, true));
        });
    scores = ifOp.getResult(0);
  }

  AffineExpr i, j, c;
  bindDims(ctx, i, j, c);
  auto map2 = [&](ArrayRef<AffineExpr> r) {
    return AffineMap::get(2, 0, r, ctx);
  };
  auto map3 = [&](ArrayRef<AffineExpr> r) {
    return AffineMap::get(3, 0, r, ctx);
  };
  SmallVector<IteratorType> rowReduction = {IteratorType::parallel,
                                            IteratorType::reduction};
  SmallVector<IteratorType> par1 = {IteratorType::parallel};
  SmallVector<IteratorType> par2 = {IteratorType::parallel,
                                    IteratorType::parallel};
  AffineMap id1 = b.getMultiDimIdentityMap(1);
  AffineMap id2 = b.getMultiDimIdentityMap(2);

  // -inf (nothing kept yet) is subtracted as 0 so that exp stays finite.
  auto safeMax = [&](OpBuilder &nb, Location l, Value mx) -> Value {
    Value negInf = f32Const(nb, l, -INFINITY);
    Value none =
        arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, mx, negInf);
    return arith::SelectOp::create(nb, l, none, f32Const(nb, l, 0.0f), mx);
  };

  Value mNew = generic({scores}, m, {map2({i, j}), map2({i})}, rowReduction,
                       [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         return arith::MaximumFOp::create(nb, l, a[0], a[1]);
                       });
  Value alpha = generic({m, mNew}, emptyTensor({tq}, f32), {id1, id1, id1},
                        par1, [&](OpBuilder &nb, Location l, ValueRange a) {
                          Value diff = arith::SubFOp::create(
                              nb, l, a[0], safeMax(nb, l, a[1]));
                          return math::ExpOp::create(nb, l, diff);
                        });
  Value probs = generic({scores, mNew}, emptyTensor({tq, tk}, f32),
                        {map2({i, j}), map2({i}), map2({i, j})}, par2,
                        [&](OpBuilder &nb, Location l, ValueRange a) {
                          Value diff = arith::SubFOp::create(
                              nb, l, a[0], safeMax(nb, l, a[1]));
                          return math::ExpOp::create(nb, l, diff);
                        });
  auto scaleRows = [](OpBuilder &nb, Location l, ValueRange a) -> Value {
    return arith::MulFOp::create(nb, l, a[0], a[1]);
  };
  Value lScaled = generic({l, alpha}, emptyTensor({tq}, f32), {id1, id1, id1},
                          par1, scaleRows);
  Value lNew =
      generic({probs}, lScaled, {map2({i, j}), map2({i})}, rowReduction,
              [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                return arith::AddFOp::create(nb, l, a[1], a[0]);
              });
  Value accScaled = generic({acc, alpha}, emptyTensor({tq, valueDim}, f32),
                            {id2, map2({i}), id2}, par2, scaleRows);
  // acc'[i, c] += sum_j P[i, j] V[j, c]; dims (i, c, j). A dropped key
  // (P = 0) adds nothing even where V is NaN or inf (0 * NaN = NaN).
  Value accNew = generic(
      {probs, vTile}, accScaled, {map3({i, c}), map3({c, j}), map3({i, j})},
      {IteratorType::parallel, IteratorType::parallel, IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value prod =
            arith::MulFOp::create(nb, l, a[0], extendToF32(nb, l, a[1]));
        Value kept = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::ONE,
                                           a[0], f32Const(nb, l, 0.0f));
        return arith::SelectOp::create(
            nb, l, kept, arith::AddFOp::create(nb, l, a[2], prod), a[2]);
      });
  return {mNew, lNew, accNew};
}

SmallVector<Value> FlashTiler::build() {
  Value q = op.getQuery(), k = op.getKey();
  pattern = op.getPatternAttr();
  Value queryLen = dim(q, 2), queryHeads = dim(q, 1);
  headDim = dim(q, 3);
  keyLen = dim(k, 2);
  valueDim = dim(op.getValue(), 3);
  Value groups =
      arith::DivUIOp::create(b, loc, queryHeads, dim(k, 1)); // Hq / Hkv
  delta = op.getAlignment() == Alignment::bottom_right
              ? arith::SubIOp::create(b, loc, keyLen, queryLen).getResult()
              : index(0);
  if (int64_t shift = op.getPositionShift())
    delta = arith::AddIOp::create(b, loc, delta, index(shift));
  if (std::optional<APFloat> attr = op.getScale()) {
    scale = f32Const(b, loc, attr->convertToFloat());
  } else {
    Value d = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), headDim);
    Value df = arith::UIToFPOp::create(b, loc, f32, d);
    scale = math::RsqrtOp::create(b, loc, df);
  }

  batchIv = op.getBatchIndex();
  headIv = op.getHeadIndex();
  kvHead = arith::DivUIOp::create(b, loc, headIv, groups);
  QueryTiling tiling{op.getQueryTileAttr().getInt(),
                     op.getQueryPeriodAttr().getInt()};
  i0 = emitQueryTileRows(b, loc, tiling, op.getTileIndex(), queryLen).first;
  // The state's rows are the tile's (the op's contract).
  Value tq = dim(op.getMax(), 0);
  Value i1 = arith::AddIOp::create(b, loc, i0, tq);
  Value qTile = slice(q, {batchIv, headIv, i0, index(0)}, tq, headDim);

  SmallVector<Value> init = {op.getMax(), op.getSum(), op.getAcc()};
  auto kvLoop = scf::ForOp::create(
      b, loc, index(0), keyLen, index(keyTile), init,
      [&](OpBuilder &nb, Location l, Value j0, ValueRange state) {
        OpBuilder::InsertionGuard loopGuard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value tk =
            minIndex(index(keyTile), arith::SubIOp::create(b, l, keyLen, j0));
        Value j1 = arith::AddIOp::create(b, l, j0, tk);
        if (!pattern) {
          scf::YieldOp::create(
              b, l, buildTileUpdate(state, qTile, j0, tk, tq, Value()));
          return;
        }
        std::pair<Value, Value> tileClass =
            emitTileClass(b, l, pattern, i0, i1, j0, j1, delta);
        Value isEmpty = tileClass.first, isFull = tileClass.second;
        // Tiles the pattern drops entirely are skipped.
        auto skip = scf::IfOp::create(
            b, l, isEmpty,
            [&](OpBuilder &tb, Location tl) {
              scf::YieldOp::create(tb, tl, state);
            },
            [&](OpBuilder &eb, Location el) {
              OpBuilder::InsertionGuard g(b);
              b.setInsertionPoint(eb.getInsertionBlock(),
                                  eb.getInsertionPoint());
              scf::YieldOp::create(
                  b, el, buildTileUpdate(state, qTile, j0, tk, tq, isFull));
            });
        scf::YieldOp::create(b, l, skip.getResults());
      });
  return SmallVector<Value>(kvLoop.getResults());
}

/// O_tile = acc / l, or 0 for rows that kept nothing, in the result's
/// element type.
Value lowerFinalize(FinalizeTileOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(op.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, op.getAcc());
  Value init = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  AffineExpr i, c;
  bindDims(ctx, i, c);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{op.getAcc(), op.getSum()},
      ValueRange{init}, {id2, AffineMap::get(2, 0, {i}, ctx), id2},
      {IteratorType::parallel, IteratorType::parallel},
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value zero =
            arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0.0f));
        Value empty = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                            a[1], zero);
        Value ratio = arith::DivFOp::create(nb, nl, a[0], a[1]);
        Value o = arith::SelectOp::create(nb, nl, empty, zero, ratio);
        if (!type.getElementType().isF32())
          o = arith::TruncFOp::create(nb, nl, type.getElementType(), o);
        linalg::YieldOp::create(nb, nl, ValueRange{o});
      });
  Value result = generic.getResult(0);
  if (result.getType() != type)
    result = tensor::CastOp::create(b, loc, type, result);
  return result;
}

/// lse = m + log l, or -inf for rows that kept nothing (l = 0).
Value lowerTileLse(TileLseOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, op.getSum());
  Value init = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
  AffineMap id1 = b.getMultiDimIdentityMap(1);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{op.getMax(), op.getSum()},
      ValueRange{init}, {id1, id1, id1}, {IteratorType::parallel},
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value zero =
            arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0.0f));
        Value negInf =
            arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(-INFINITY));
        Value empty = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                            a[1], zero);
        Value lse = arith::AddFOp::create(nb, nl, a[0],
                                          math::LogOp::create(nb, nl, a[1]));
        linalg::YieldOp::create(
            nb, nl, ValueRange{arith::SelectOp::create(nb, nl, empty, negInf,
                                                       lse)});
      });
  Value result = generic.getResult(0);
  if (result.getType() != op.getType())
    result = tensor::CastOp::create(b, loc, op.getType(), result);
  return result;
}

struct AttnLowerOnlineAttentionPass
    : attn::impl::AttnLowerOnlineAttentionBase<AttnLowerOnlineAttentionPass> {
  void runOnOperation() override {
    SmallVector<OnlineAttentionOp> tiles;
    getOperation()->walk([&](OnlineAttentionOp op) { tiles.push_back(op); });
    for (OnlineAttentionOp op : tiles) {
      if (failed(checkSupported(op)))
        return signalPassFailure();
      SmallVector<Value> state = FlashTiler(op).build();
      op.replaceAllUsesWith(state);
      op.erase();
    }
    SmallVector<FinalizeTileOp> finals;
    getOperation()->walk([&](FinalizeTileOp op) { finals.push_back(op); });
    for (FinalizeTileOp op : finals) {
      op.replaceAllUsesWith(lowerFinalize(op));
      op.erase();
    }
    SmallVector<TileLseOp> lses;
    getOperation()->walk([&](TileLseOp op) { lses.push_back(op); });
    for (TileLseOp op : lses) {
      op.replaceAllUsesWith(lowerTileLse(op));
      op.erase();
    }
  }
};

} // namespace
