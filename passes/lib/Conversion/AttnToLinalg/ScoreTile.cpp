//===- ScoreTile.cpp - one tile of logits as linalg on tensors ------------===//
#include "ScoreTile.h"
#include "attn/Transforms/MaskCodegen.h"
#include "attn/Transforms/ScoreModCodegen.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/AffineMap.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using utils::IteratorType;

Value mlir::attn::sliceRows(OpBuilder &b, Location loc, Value source,
                            ArrayRef<Value> offsets, Value rows, Value cols) {
  auto sourceType = cast<RankedTensorType>(source.getType());
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                                     getAsOpFoldResult(rows),
                                     getAsOpFoldResult(cols)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  RankedTensorType type =
      tensor::ExtractSliceOp::inferCanonicalRankReducedResultType(2, sourceType,
                                                                  sizes);
  return tensor::ExtractSliceOp::create(
      b, loc, type, source, getAsOpFoldResult(offsets), sizes, strides);
}

Value mlir::attn::extendToF32(OpBuilder &b, Location loc, Value value) {
  if (value.getType().isF32())
    return value;
  return arith::ExtFOp::create(b, loc, b.getF32Type(), value);
}

Value mlir::attn::buildTileProduct(OpBuilder &b, Location loc, Value qTile,
                                   Value kTile, Value rows, Value cols) {
  MLIRContext *ctx = b.getContext();
  AffineExpr i, j, c;
  bindDims(ctx, i, j, c);
  auto map3 = [&](ArrayRef<AffineExpr> r) {
    return AffineMap::get(3, 0, r, ctx);
  };
  Type f32 = b.getF32Type();
  Value empty = tensor::EmptyOp::create(
      b, loc, getAsOpFoldResult(ValueRange{rows, cols}), f32);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  Value init =
      linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{empty})
          .getResult(0);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{qTile, kTile},
             ValueRange{init},
             ArrayRef<AffineMap>{map3({i, c}), map3({j, c}), map3({i, j})},
             ArrayRef<IteratorType>{IteratorType::parallel,
                                    IteratorType::parallel,
                                    IteratorType::reduction},
             [](OpBuilder &nb, Location l, ValueRange a) {
               Value prod = arith::MulFOp::create(
                   nb, l, extendToF32(nb, l, a[0]), extendToF32(nb, l, a[1]));
               linalg::YieldOp::create(
                   nb, l, ValueRange{arith::AddFOp::create(nb, l, a[2], prod)});
             })
      .getResult(0);
}

/// Offset along a broadcastable dim of `operand`: 0 when its size is 1.
static Value broadcastOffset(OpBuilder &b, Location loc, Value operand,
                             int64_t d, Value offset) {
  Value size = getValueOrCreateConstantIndexOp(
      b, loc, tensor::getMixedSize(b, loc, operand, d));
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value isOne =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, size, one);
  return arith::SelectOp::create(b, loc, isOne, zero, offset);
}

Value mlir::attn::buildScoreTile(OpBuilder &b, Location loc,
                                 const ScoreOperands &ops,
                                 const ScoreTilePlace &at, Value dot,
                                 bool masked) {
  return buildScoreTileWithSlope(b, loc, ops, at, dot, masked).logits;
}

ScoreTileOutputs mlir::attn::buildScoreTileWithSlope(OpBuilder &b, Location loc,
                                                     const ScoreOperands &ops,
                                                     const ScoreTilePlace &at,
                                                     Value dot, bool masked) {
  bool withSlope = bool(ops.scoreRegionWithSlope);
  MLIRContext *ctx = b.getContext();
  AffineExpr j = getAffineDimExpr(1, ctx);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> inputs = {dot};
  // A per-key bias [., ., 1, Lk] reads its one row for every query.
  bool biasPerKey =
      ops.bias && cast<RankedTensorType>(ops.bias.getType()).getDimSize(2) == 1;
  if (ops.bias)
    inputs.push_back(sliceRows(b, loc, ops.bias,
                               {broadcastOffset(b, loc, ops.bias, 0, at.batch),
                                broadcastOffset(b, loc, ops.bias, 1, at.head),
                                biasPerKey ? zero : at.i0, at.j0},
                               biasPerKey ? one : at.rows, at.cols));
  bool readsMask = masked && ops.mask;
  // So does a per-key (padding) mask.
  bool maskPerKey =
      readsMask &&
      cast<RankedTensorType>(ops.mask.getType()).getDimSize(2) == 1;
  if (readsMask)
    inputs.push_back(sliceRows(b, loc, ops.mask,
                               {broadcastOffset(b, loc, ops.mask, 0, at.batch),
                                broadcastOffset(b, loc, ops.mask, 1, at.head),
                                maskPerKey ? zero : at.i0, at.j0},
                               maskPerKey ? one : at.rows, at.cols));
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  SmallVector<AffineMap> maps(inputs.size() + 1, id2);
  AffineMap perKey = AffineMap::get(2, 0, {b.getAffineConstantExpr(0), j}, ctx);
  if (biasPerKey)
    maps[1] = perKey;
  if (maskPerKey)
    maps[ops.bias ? 2 : 1] = perKey;
  Value init = tensor::EmptyOp::create(
      b, loc, getAsOpFoldResult(ValueRange{at.rows, at.cols}), b.getF32Type());
  // With the region's slope: the logits before the region and dy/dx too.
  unsigned numOutputs = withSlope ? 3 : 1;
  maps.append(numOutputs - 1, id2);
  SmallVector<Value> inits(numOutputs, init);
  auto body = [&](OpBuilder &nb, Location l, ValueRange a) {
    Value x = arith::MulFOp::create(nb, l, a[0], at.scale);
    x = emitSoftcap(nb, l, ops.mods, x);
    unsigned next = 1;
    if (ops.bias)
      x = arith::AddFOp::create(nb, l, x, extendToF32(nb, l, a[next++]));
    Value row =
        arith::AddIOp::create(nb, l, at.i0, linalg::IndexOp::create(nb, l, 0));
    Value col =
        arith::AddIOp::create(nb, l, at.j0, linalg::IndexOp::create(nb, l, 1));
    if (ops.mods) {
      // r = j - (i + delta), the signed distance of docs/Dialect.md.
      Value distance = arith::SubIOp::create(
          nb, l, col, arith::AddIOp::create(nb, l, row, at.delta));
      x = emitScoreMods(nb, l, ops.mods, x, distance, at.head, ops.relTable,
                        ops.numHeads);
    }
    // The custom score function comes last (docs/Dialect.md, step 4).
    SmallVector<Value> extra;
    if (withSlope) {
      auto [y, slope] =
          ops.scoreRegionWithSlope(nb, x, at.batch, at.head, row, col);
      extra = {x, slope};
      x = y;
    } else if (ops.scoreRegion) {
      x = ops.scoreRegion(nb, x, at.batch, at.head, row, col);
    }
    auto yield = [&](Value logit) {
      SmallVector<Value> values = {logit};
      llvm::append_range(values, extra);
      linalg::YieldOp::create(nb, l, values);
    };
    if (!masked)
      return yield(x);
    Value kept;
    if (ops.pattern)
      kept = emitElementMask(nb, l, ops.pattern, row, col,
                             MaskContext{at.delta,
                                         at.head,
                                         at.batch,
                                         ops.qSegments,
                                         ops.kvSegments,
                                         ops.maskShape,
                                         {}});
    if (readsMask)
      kept = kept ? arith::AndIOp::create(nb, l, kept, a[next]) : a[next];
    if (!kept)
      return yield(x);
    Value negInf =
        arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(-INFINITY));
    yield(arith::SelectOp::create(nb, l, kept, x, negInf));
  };
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange(ValueRange(inits)), inputs, inits, maps,
      ArrayRef<IteratorType>{IteratorType::parallel, IteratorType::parallel},
      body);
  ScoreTileOutputs out;
  out.logits = generic.getResult(0);
  if (withSlope) {
    out.preRegion = generic.getResult(1);
    out.regionSlope = generic.getResult(2);
  }
  return out;
}
