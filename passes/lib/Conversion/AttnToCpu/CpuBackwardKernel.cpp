//===- CpuBackwardKernel.cpp - the fused CPU backward of attention --------===//
//
// CpuBackwardKernel's methods: the register-blocked products, the tile
// steps (P, dS, the dK / dV / dQ updates), the key tile loop with its
// compile-time query tile lists, the work and reduction functions and the
// forall calls (the algorithm: AttentionGradToCpu.cpp's file comment).
//
//===----------------------------------------------------------------------===//
#include "CpuBackwardKernel.h"
#include "LoopBuilder.h"
#include "SegmentIds.h"
#include "VectorMath.h"
#include "attn/Analysis/KernelPlan.h"
#include "attn/Dialect/Attn/IR/TileSchedule.h"
#include "attn/Transforms/MaskCodegen.h"
#include "attn/Transforms/ScoreModCodegen.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

Value CpuBackwardKernel::keyPositions(int64_t t) {
  return arith::AddIOp::create(b, splat(j0),
                               buildLaneOffsets(b, t * kLanes, kLanes));
}

void CpuBackwardKernel::blockedProduct(
    Value rows, int64_t nVectors, Value depth,
    function_ref<Value(Value, int64_t)> init,
    function_ref<Value(Value, Value)> aAt,
    function_ref<Value(Value, int64_t)> bAt,
    function_ref<void(Value, int64_t, Value)> finish) {
  for (int64_t t0 = 0; t0 < nVectors; t0 += kBlockVectors) {
    int64_t width = std::min(kBlockVectors, nVectors - t0);
    buildRowBlocks(b, rows, kBlockRows, [&](Value r0, int64_t height) {
      SmallVector<Value> sums;
      for (int64_t g = 0; g < height; ++g)
        for (int64_t t = 0; t < width; ++t)
          sums.push_back(init(add(r0, index(g)), t0 + t));
      scf::ForOp loop = buildLoop(
          b, index(0), depth, index(1), sums, [&](Value k, ValueRange acc) {
            SmallVector<Value> bRow;
            for (int64_t t = 0; t < width; ++t)
              bRow.push_back(bAt(k, t0 + t));
            SmallVector<Value> next(acc.begin(), acc.end());
            for (int64_t g = 0; g < height; ++g) {
              Value a = splat(aAt(k, add(r0, index(g))));
              for (int64_t t = 0; t < width; ++t) {
                Value &sum = next[g * width + t];
                sum = vector::FMAOp::create(b, a, bRow[t], sum);
              }
            }
            return next;
          });
      for (int64_t g = 0; g < height; ++g)
        for (int64_t t = 0; t < width; ++t)
          finish(add(r0, index(g)), t0 + t, loop.getResult(g * width + t));
    });
  }
}

void CpuBackwardKernel::copyRow(Value src, ValueRange prefix, Value dst,
                                Value dstRow, int64_t width, bool finiteOnly) {
  Type element = cast<MemRefType>(src.getType()).getElementType();
  auto keepFinite = [&](Value x) -> Value {
    if (!finiteOnly)
      return x;
    // |x| < inf is false for inf and NaN.
    Value magnitude = math::AbsFOp::create(b, x);
    Value inf =
        isa<VectorType>(x.getType()) ? vecConst(INFINITY) : f32Const(INFINITY);
    Value finite =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, magnitude, inf);
    Value zero = isa<VectorType>(x.getType()) ? vecConst(0) : f32Const(0);
    return arith::SelectOp::create(b, finite, x, zero);
  };
  int64_t c = 0;
  for (; c + kLanes <= width; c += kLanes) {
    Value x = vector::LoadOp::create(b, VectorType::get({kLanes}, element), src,
                                     concat(prefix, {index(c)}));
    if (!element.isF32())
      x = arith::ExtFOp::create(b, vec, x);
    storeVec(keepFinite(x), dst, {dstRow, index(c)});
  }
  for (; c < width; ++c)
    memref::StoreOp::create(
        b, keepFinite(loadScalar(src, concat(prefix, {index(c)}))), dst,
        ValueRange{dstRow, index(c)});
}

void CpuBackwardKernel::storeRow(Value src, Value srcRow, Value dst,
                                 ValueRange prefix, int64_t width) {
  Type element = cast<MemRefType>(dst.getType()).getElementType();
  int64_t c = 0;
  for (; c + kLanes <= width; c += kLanes) {
    Value x = loadVec(src, {srcRow, index(c)});
    if (!element.isF32())
      x = arith::TruncFOp::create(b, VectorType::get({kLanes}, element), x);
    vector::StoreOp::create(b, x, dst, concat(prefix, {index(c)}));
  }
  for (; c < width; ++c) {
    Value x = memref::LoadOp::create(b, src, ValueRange{srcRow, index(c)});
    if (!element.isF32())
      x = arith::TruncFOp::create(b, element, x);
    memref::StoreOp::create(b, x, dst, concat(prefix, {index(c)}));
  }
}

void CpuBackwardKernel::zero(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  Value zeros = vecConst(0.0f);
  buildLoop(b, index(0), index(type.getDimSize(0)), index(1), {},
            [&](Value r, ValueRange) {
              for (int64_t c = 0; c < type.getDimSize(1); c += kLanes)
                storeVec(zeros, buffer, {r, index(c)});
              return SmallVector<Value>{};
            });
}

void CpuBackwardKernel::computeProbabilities(Value head, Value i0, Value tq,
                                             bool masked) {
  ArrayAttr mods = op.getModsAttr();
  MaskAttrInterface pattern = op.getPatternAttr();
  Value negInf = vecConst(-INFINITY);
  Value log2e = vecConst(float(M_LOG2E));
  Value scaleLanes = splat(scale);
  blockedProduct(
      tq, kBackwardTile / kLanes, index(headDim),
      [&](Value, int64_t) { return vecConst(0.0f); },
      [&](Value k, Value r) {
        return memref::LoadOp::create(b, queryRows, ValueRange{r, k});
      },
      [&](Value k, int64_t t) { return loadVec(keysT, {k, lane(t)}); },
      [&](Value r, int64_t t, Value dot) {
        // The logit as docs/Dialect.md orders it: scale, soft-cap, mods.
        Value x = arith::MulFOp::create(b, dot, scaleLanes);
        x = emitSoftcap(b, b.getLoc(), mods, x);
        if (cap) {
          // d(c tanh(s / c)) / ds = 1 - tanh^2(s / c) = 1 - (x / c)^2.
          Value ratio = arith::MulFOp::create(b, x, vecConst(1.0f / *cap));
          Value slope = vector::FMAOp::create(
              b, arith::NegFOp::create(b, ratio), ratio, vecConst(1.0f));
          storeVec(slope, slopes, {r, lane(t)});
        }
        Value row = add(i0, r);
        // The bias as docs/Dialect.md adds it: -inf drops a key (P = 0), a NaN
        // score stays NaN, as in the reference.
        if (bias)
          x = arith::AddFOp::create(
              b, x, biasLanes(head, row, add(j0, index(t * kLanes))));
        if ((mods && !mods.empty()) || masked) {
          Value keys = keyPositions(t);
          if (mods && !mods.empty()) {
            Value distance =
                arith::SubIOp::create(b, keys, splat(add(row, delta)));
            x = emitScoreMods(
                b, b.getLoc(), mods, x, distance, head, Value(),
                cast<ShapedType>(op.getQuery().getType()).getDimSize(1));
          }
          if (masked) {
            Value kept = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                               keys, splat(keyLen));
            if (pattern) {
              MaskContext context;
              context.delta = splat(delta);
              context.head = head;
              context.batch = batchIv;
              context.shape = op.getMaskShape();
              // Segment ids: the row's id against each key lane's.
              std::function<Value(MaskAttrInterface)> evaluate =
                  [&](MaskAttrInterface m) -> Value {
                if (!isa<SegmentsAttr>(m))
                  return {};
                return arith::CmpIOp::create(
                    b, arith::CmpIPredicate::eq,
                    splat(segmentId(qSegments, row)),
                    keySegmentLanes(add(j0, index(t * kLanes))));
              };
              if (qSegments)
                context.evaluateMember = evaluate;
              kept = arith::AndIOp::create(b, kept,
                                           emitElementMask(b, b.getLoc(),
                                                           pattern, splat(row),
                                                           keys, context));
            }
            if (mask)
              kept = arith::AndIOp::create(
                  b, kept, maskLanes(head, row, add(j0, index(t * kLanes))));
            x = arith::SelectOp::create(b, kept, x, negInf);
          }
        }
        // P = exp(x - lse), 0 in a row that keeps nothing (lse = -inf).
        Value rowLseLanes =
            splat(memref::LoadOp::create(b, rowLse, ValueRange{r}));
        Value p = buildExp2(
            b, arith::MulFOp::create(
                   b, arith::SubFOp::create(b, x, rowLseLanes), log2e));
        Value emptyRow = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                               rowLseLanes, negInf);
        storeVec(arith::SelectOp::create(b, emptyRow, vecConst(0.0f), p), probs,
                 {r, lane(t)});
      });
}

void CpuBackwardKernel::computeScoreGrads(Value tq) {
  Value zero = vecConst(0.0f), scaleLanes = splat(scale);
  blockedProduct(
      tq, kBackwardTile / kLanes, index(valueDim),
      [&](Value, int64_t) { return vecConst(0.0f); },
      [&](Value k, Value r) {
        return memref::LoadOp::create(b, gradRows, ValueRange{r, k});
      },
      [&](Value k, int64_t t) { return loadVec(valuesT, {k, lane(t)}); },
      [&](Value r, int64_t t, Value dP) {
        // dS = scale P (dP - D), exactly 0 where P is (a dropped key's NaN
        // V stays out), times the soft-cap's slope.
        Value p = loadVec(probs, {r, lane(t)});
        Value d = splat(memref::LoadOp::create(b, rowDot, ValueRange{r}));
        Value ds = arith::MulFOp::create(
            b, arith::MulFOp::create(b, p, arith::SubFOp::create(b, dP, d)),
            scaleLanes);
        if (cap)
          ds = arith::MulFOp::create(b, ds, loadVec(slopes, {r, lane(t)}));
        Value kept =
            arith::CmpFOp::create(b, arith::CmpFPredicate::ONE, p, zero);
        storeVec(arith::SelectOp::create(b, kept, ds, zero), scoreGrads,
                 {r, lane(t)});
      });
}

void CpuBackwardKernel::accumulateTransposed(Value acc, Value weights, Value x,
                                             int64_t nVectors, Value depth) {
  blockedProduct(
      tk, nVectors, depth,
      [&](Value r, int64_t t) { return loadVec(acc, {r, lane(t)}); },
      [&](Value k, Value r) {
        return memref::LoadOp::create(b, weights, ValueRange{k, r});
      },
      [&](Value k, int64_t t) { return loadVec(x, {k, lane(t)}); },
      [&](Value r, int64_t t, Value sum) { storeVec(sum, acc, {r, lane(t)}); });
}

void CpuBackwardKernel::visitTile(Value head, Value i0, Value tq,
                                  Value needsMask) {
  if (counter) {
    Value n = memref::LoadOp::create(b, counter, ValueRange{index(0)});
    memref::StoreOp::create(b, add(n, index(1)), counter, ValueRange{index(0)});
  }
  // The query side of the tile: Q and dO rows, D = rowsum(dO o O), lse.
  buildLoop(b, index(0), tq, index(1), {}, [&](Value r, ValueRange) {
    Value row = add(i0, r);
    copyRow(query, {batchIv, head, row}, queryRows, r, headDim);
    copyRow(outputGrad, {batchIv, head, row}, gradRows, r, valueDim);
    Value sum = vecConst(0.0f);
    int64_t c = 0;
    Type outElement = cast<MemRefType>(output.getType()).getElementType();
    for (; c + kLanes <= valueDim; c += kLanes) {
      Value o = vector::LoadOp::create(
          b, VectorType::get({kLanes}, outElement), output,
          ValueRange{batchIv, head, row, index(c)});
      if (!outElement.isF32())
        o = arith::ExtFOp::create(b, vec, o);
      sum = vector::FMAOp::create(b, loadVec(gradRows, {r, index(c)}), o, sum);
    }
    Value dot = vector::ReductionOp::create(b, vector::CombiningKind::ADD, sum);
    for (; c < valueDim; ++c)
      dot = arith::AddFOp::create(
          b, dot,
          arith::MulFOp::create(
              b, memref::LoadOp::create(b, gradRows, ValueRange{r, index(c)}),
              loadScalar(output, {batchIv, head, row, index(c)})));
    memref::StoreOp::create(b, dot, rowDot, ValueRange{r});
    memref::StoreOp::create(
        b, memref::LoadOp::create(b, lse, ValueRange{batchIv, head, row}),
        rowLse, ValueRange{r});
    return SmallVector<Value>{};
  });
  // Full tiles carry no mask code.
  buildIfElse(
      b, needsMask, [&] { computeProbabilities(head, i0, tq, true); },
      [&] { computeProbabilities(head, i0, tq, false); });
  computeScoreGrads(tq);
  accumulateTransposed(valueGradSum, probs, gradRows, paddedValueDim / kLanes,
                       tq);
  accumulateTransposed(keyGradSum, scoreGrads, queryRows,
                       paddedHeadDim / kLanes, tq);
  // This split's dQ rows += dS K.
  blockedProduct(
      tq, paddedHeadDim / kLanes, tk,
      [&](Value r, int64_t t) {
        return loadVec(partial, {split, batchIv, head, add(i0, r), lane(t)});
      },
      [&](Value k, Value r) {
        return memref::LoadOp::create(b, scoreGrads, ValueRange{r, k});
      },
      [&](Value k, int64_t t) { return loadVec(keyRows, {k, lane(t)}); },
      [&](Value r, int64_t t, Value sum) {
        storeVec(sum, partial, {split, batchIv, head, add(i0, r), lane(t)});
      });
}

void CpuBackwardKernel::emitKeyTile(Value keyTileIndex) {
  j0 = mul(keyTileIndex, index(kBackwardTile));
  tk = minIndex(index(kBackwardTile), sub(keyLen, j0));
  // K^T and V^T of the tile (keys past tk zero) and K's rows, finite.
  zero(keysT);
  zero(valuesT);
  buildLoop(b, index(0), tk, index(1), {}, [&](Value r, ValueRange) {
    Value row = add(j0, r);
    for (int64_t c = 0; c < headDim; ++c)
      memref::StoreOp::create(b,
                              loadScalar(key, {batchIv, kvHead, row, index(c)}),
                              keysT, ValueRange{index(c), r});
    for (int64_t c = 0; c < valueDim; ++c)
      memref::StoreOp::create(
          b, loadScalar(value, {batchIv, kvHead, row, index(c)}), valuesT,
          ValueRange{index(c), r});
    copyRow(key, {batchIv, kvHead, row}, keyRows, r, headDim,
            /*finiteOnly=*/true);
    return SmallVector<Value>{};
  });
  zero(keyGradSum);
  zero(valueGradSum);
  MaskAttrInterface pattern = splitRuntimeSegments(op.getPatternAttr()).second;
  Value trueValue = arith::ConstantIntOp::create(b, b.getI1Type(), 1);
  // Document masks: each key tile's id range, against each query tile's.
  Value keyIdMin, keyIdMax;
  if (qSegments)
    std::tie(keyIdMin, keyIdMax) = idRange(kvSegments, j0, tk);
  // A mask operand is read in every tile.
  Value partialKeys = mask ? trueValue
                           : arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                                   tk, index(kBackwardTile))
                                 .getResult();
  // Each query tile against this key tile, for every head of the group.
  auto visitHeads = [&](Value i0, Value needsMask) {
    Value tq = minIndex(index(kBackwardTile), sub(queryLen, i0));
    auto visit = [&](Value needsMask) {
      buildLoop(b, index(0), groups, index(1), {}, [&](Value g, ValueRange) {
        visitTile(add(mul(kvHead, groups), g), i0, tq, needsMask);
        return SmallVector<Value>{};
      });
    };
    if (!qSegments)
      return visit(needsMask);
    auto [isEmpty, isFull] = buildSegmentTileClass(
        b, idRange(qSegments, i0, tq), {keyIdMin, keyIdMax});
    Value withIds = arith::OrIOp::create(
        b, needsMask, arith::XOrIOp::create(b, isFull, trueValue));
    buildIfElse(b, isEmpty, [] {}, [&] { visit(withIds); });
  };
  if (columnStartTable) {
    // The compile-time list: only the query tiles that keep something.
    auto table = [&](memref::GlobalOp global) -> Value {
      return memref::GetGlobalOp::create(b, global.getType(),
                                         global.getSymName());
    };
    Value columns = table(columnStartTable), entries = table(entryTable);
    auto word = [&](Value memref, Value at) -> Value {
      return arith::IndexCastOp::create(
          b, b.getIndexType(),
          memref::LoadOp::create(b, memref, ValueRange{at}));
    };
    Value first = word(columns, keyTileIndex);
    Value last = word(columns, add(keyTileIndex, index(1)));
    buildLoop(b, first, last, index(1), {}, [&](Value e, ValueRange) {
      Value entry = word(entries, e);
      Value i0 =
          mul(arith::ShRUIOp::create(b, entry, index(1)), index(kBackwardTile));
      Value isFull = arith::CmpIOp::create(
          b, arith::CmpIPredicate::eq,
          arith::AndIOp::create(b, entry, index(1)), index(1));
      visitHeads(
          i0, arith::OrIOp::create(
                  b, partialKeys, arith::XOrIOp::create(b, isFull, trueValue)));
      return SmallVector<Value>{};
    });
  } else {
    buildLoop(
        b, index(0), queryLen, index(kBackwardTile), {},
        [&](Value i0, ValueRange) {
          if (!pattern) {
            visitHeads(i0, partialKeys);
            return SmallVector<Value>{};
          }
          Value tq = minIndex(index(kBackwardTile), sub(queryLen, i0));
          auto [isEmpty, isFull] = emitTileClass(
              b, b.getLoc(), pattern, i0, add(i0, tq), j0, add(j0, tk), delta);
          Value needsMask = arith::OrIOp::create(
              b, partialKeys, arith::XOrIOp::create(b, isFull, trueValue));
          buildIfElse(b, isEmpty, [] {}, [&] { visitHeads(i0, needsMask); });
          return SmallVector<Value>{};
        });
  }
  // The tile's dK, dV rows (dS carries the scale already).
  buildLoop(b, index(0), tk, index(1), {}, [&](Value r, ValueRange) {
    Value row = add(j0, r);
    storeRow(keyGradSum, r, keyGrad, {batchIv, kvHead, row}, headDim);
    storeRow(valueGradSum, r, valueGrad, {batchIv, kvHead, row}, valueDim);
    return SmallVector<Value>{};
  });
}

func::FuncOp CpuBackwardKernel::buildWorkFunction(ModuleOp module) {
  auto bufferOf = [](Value v) {
    auto type = cast<ShapedType>(v.getType());
    return MemRefType::get(type.getShape(), type.getElementType());
  };
  int64_t dyn = ShapedType::kDynamic;
  Type indexType = b.getIndexType();
  SmallVector<Type> argTypes = {
      bufferOf(op.getQuery()),
      bufferOf(op.getKey()),
      bufferOf(op.getValue()),
      bufferOf(op.getOutput()),
      bufferOf(op.getOutputGrad()),
      bufferOf(op.getLse()),
      bufferOf(op.getKeyGrad()),
      bufferOf(op.getValueGrad()),
      MemRefType::get({dyn, dyn, dyn, dyn, paddedHeadDim}, f32),
      indexType,
      indexType,
      indexType,
      indexType};
  for (Value operand :
       {op.getBias(), op.getMask(), op.getQSegments(), op.getKvSegments()})
    if (operand)
      argTypes.push_back(bufferOf(operand));
  OpBuilder::InsertionGuard guard(b);
  auto parent = op->getParentOfType<func::FuncOp>();
  b.setInsertionPoint(parent);
  buildSchedule(module);
  if (countTiles && !module.lookupSymbol("attn_record_backward_fused_tiles")) {
    Type i64 = b.getI64Type();
    func::FuncOp::create(b, "attn_record_backward_fused_tiles",
                         b.getFunctionType({i64, i64, i64}, {}))
        .setPrivate();
  }
  // Named after the caller so that artifacts linked together do not clash.
  auto fn = func::FuncOp::create(
      b, (parent.getSymName() + "__attn_cpu_backward").str(),
      b.getFunctionType(argTypes, {}));
  fn.setPrivate();
  SymbolTable(module).insert(fn); // uniquifies the name
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto args = entry->getArguments();
  query = args[0];
  key = args[1];
  value = args[2];
  output = args[3];
  outputGrad = args[4];
  lse = args[5];
  keyGrad = args[6];
  valueGrad = args[7];
  partial = args[8];
  batchIv = args[9];
  kvHead = args[10];
  split = args[11];
  numSplits = args[12];
  unsigned next = 13;
  if (op.getBias())
    bias = args[next++];
  if (op.getMask())
    mask = args[next++];
  if (op.getQSegments()) {
    qSegments = args[next++];
    kvSegments = args[next++];
  }

  queryLen = dim(query, 2);
  keyLen = dim(key, 2);
  groups = arith::DivUIOp::create(b, dim(query, 1), dim(key, 1));
  delta = op.getAlignment() == Alignment::bottom_right ? sub(keyLen, queryLen)
                                                       : index(0);
  if (int64_t shift = op.getPositionShift())
    delta = add(delta, index(shift));
  scale = f32Const(op.getScale() ? op.getScale()->convertToFloat()
                                 : float(1.0 / std::sqrt(double(headDim))));

  // Scratch of the call's frame, 64-byte aligned for whole vectors; the
  // padding columns stay zero.
  IntegerAttr align = b.getI64IntegerAttr(64);
  auto scratch = [&](ArrayRef<int64_t> shape) -> Value {
    return memref::AllocaOp::create(b, MemRefType::get(shape, f32),
                                    ValueRange{}, align);
  };
  keysT = scratch({headDim, kBackwardTile});
  valuesT = scratch({valueDim, kBackwardTile});
  keyRows = scratch({kBackwardTile, paddedHeadDim});
  queryRows = scratch({kBackwardTile, paddedHeadDim});
  gradRows = scratch({kBackwardTile, paddedValueDim});
  probs = scratch({kBackwardTile, kBackwardTile});
  scoreGrads = scratch({kBackwardTile, kBackwardTile});
  if (cap)
    slopes = scratch({kBackwardTile, kBackwardTile});
  keyGradSum = scratch({kBackwardTile, paddedHeadDim});
  valueGradSum = scratch({kBackwardTile, paddedValueDim});
  rowDot = scratch({kBackwardTile});
  rowLse = scratch({kBackwardTile});
  for (Value buffer : {keyRows, queryRows, gradRows})
    zero(buffer);
  if (countTiles) {
    counter = memref::AllocaOp::create(b, MemRefType::get({1}, indexType));
    memref::StoreOp::create(b, index(0), counter, ValueRange{index(0)});
  }

  // This split's dQ rows of the group's heads start at zero.
  Value zeros = vecConst(0.0f);
  buildLoop(b, index(0), groups, index(1), {}, [&](Value g, ValueRange) {
    Value head = add(mul(kvHead, groups), g);
    buildLoop(b, index(0), queryLen, index(1), {}, [&](Value i, ValueRange) {
      for (int64_t c = 0; c < paddedHeadDim; c += kLanes)
        storeVec(zeros, partial, {split, batchIv, head, i, index(c)});
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
  // Key tiles split, split + splits, ...
  Value keyTiles = arith::CeilDivUIOp::create(b, keyLen, index(kBackwardTile));
  auto tiles = scf::ForOp::create(b, split, keyTiles, numSplits);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(tiles.getBody());
    emitKeyTile(tiles.getInductionVar());
  }
  if (counter) {
    Type i64 = b.getI64Type();
    auto asI64 = [&](Value v) {
      return arith::IndexCastOp::create(b, i64, v).getResult();
    };
    Value n = memref::LoadOp::create(b, counter, ValueRange{index(0)});
    func::CallOp::create(b, "attn_record_backward_fused_tiles", TypeRange{},
                         ValueRange{asI64(index(kBackwardTile)),
                                    asI64(index(kBackwardTile)), asI64(n)});
  }
  func::ReturnOp::create(b);
  return fn;
}

func::FuncOp CpuBackwardKernel::buildReduceFunction(ModuleOp module) {
  int64_t dyn = ShapedType::kDynamic;
  Type indexType = b.getIndexType();
  auto queryGradType = cast<ShapedType>(op.getQueryGrad().getType());
  MemRefType queryGradBuffer =
      MemRefType::get(queryGradType.getShape(), queryGradType.getElementType());
  OpBuilder::InsertionGuard guard(b);
  auto parent = op->getParentOfType<func::FuncOp>();
  b.setInsertionPoint(parent);
  auto fn = func::FuncOp::create(
      b, (parent.getSymName() + "__attn_cpu_backward_dq").str(),
      b.getFunctionType(
          {MemRefType::get({dyn, dyn, dyn, dyn, paddedHeadDim}, f32),
           queryGradBuffer, indexType, indexType, indexType},
          {}));
  fn.setPrivate();
  SymbolTable(module).insert(fn);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value partialBuf = entry->getArgument(0), queryGrad = entry->getArgument(1);
  Value batch = entry->getArgument(2), head = entry->getArgument(3),
        splits = entry->getArgument(4);
  Value rowSum =
      memref::AllocaOp::create(b, MemRefType::get({1, paddedHeadDim}, f32),
                               ValueRange{}, b.getI64IntegerAttr(64));
  buildLoop(b, index(0), dim(partialBuf, 3), index(1), {},
            [&](Value i, ValueRange) {
              for (int64_t c = 0; c < paddedHeadDim; c += kLanes) {
                scf::ForOp sum = buildLoop(
                    b, index(0), splits, index(1), {vecConst(0.0f)},
                    [&](Value s, ValueRange acc) {
                      return SmallVector<Value>{arith::AddFOp::create(
                          b, acc[0],
                          loadVec(partialBuf, {s, batch, head, i, index(c)}))};
                    });
                storeVec(sum.getResult(0), rowSum, {index(0), index(c)});
              }
              storeRow(rowSum, index(0), queryGrad, {batch, head, i}, headDim);
              return SmallVector<Value>{};
            });
  func::ReturnOp::create(b);
  return fn;
}

SmallVector<Value> CpuBackwardKernel::build(ModuleOp module) {
  auto toBuffer = [&](Value tensor) -> Value {
    auto type = cast<RankedTensorType>(tensor.getType());
    return bufferization::ToBufferOp::create(
        b, MemRefType::get(type.getShape(), type.getElementType()), tensor,
        /*read_only=*/true);
  };
  auto allocLike = [&](Value like, ArrayRef<Value> sizes) -> Value {
    auto type = cast<RankedTensorType>(like.getType());
    SmallVector<Value> dynamicSizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynamicSizes.push_back(sizes[d]);
    return memref::AllocOp::create(
        b, MemRefType::get(type.getShape(), type.getElementType()),
        dynamicSizes, b.getI64IntegerAttr(64));
  };
  Value q = toBuffer(op.getQuery()), k = toBuffer(op.getKey()),
        v = toBuffer(op.getValue());
  SmallVector<Value> buffers = {q,
                                k,
                                v,
                                toBuffer(op.getOutput()),
                                toBuffer(op.getOutputGrad()),
                                toBuffer(op.getLse())};
  Value batch = dim(q, 0), queryHeads = dim(q, 1), keyHeads = dim(k, 1);
  SmallVector<Value> keySizes = {batch, keyHeads, dim(k, 2), index(headDim)};
  Value dk = allocLike(op.getKeyGrad(), keySizes);
  keySizes[3] = index(valueDim);
  Value dv = allocLike(op.getValueGrad(), keySizes);
  Value dq = allocLike(op.getQueryGrad(),
                       {batch, queryHeads, dim(q, 2), index(headDim)});

  // Splits: two work items per thread when batch x key/value heads is
  // fewer, at most one per key tile.
  Value items = mul(batch, keyHeads);
  Value threads = buildOmpMaxThreads(b, module);
  Value wanted = arith::CeilDivUIOp::create(b, mul(threads, index(2)), items);
  Value keyTiles =
      arith::CeilDivUIOp::create(b, dim(k, 2), index(kBackwardTile));
  Value splits =
      arith::MaxUIOp::create(b, index(1), minIndex(wanted, keyTiles));
  Value partialBuf = memref::AllocOp::create(
      b,
      MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic,
                       ShapedType::kDynamic, ShapedType::kDynamic,
                       paddedHeadDim},
                      f32),
      ValueRange{splits, batch, queryHeads, dim(q, 2)},
      b.getI64IntegerAttr(64));

  func::FuncOp work = buildWorkFunction(module);
  func::FuncOp reduce = buildReduceFunction(module);
  auto forall = [&](ValueRange sizes, function_ref<void(ValueRange)> body) {
    auto loop = scf::ForallOp::create(b, getAsOpFoldResult(sizes), ValueRange{},
                                      std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVars());
  };
  SmallVector<Value> operandBuffers;
  for (Value operand :
       {op.getBias(), op.getMask(), op.getQSegments(), op.getKvSegments()})
    if (operand)
      operandBuffers.push_back(toBuffer(operand));
  forall({batch, keyHeads, splits}, [&](ValueRange iv) {
    SmallVector<Value> args = buffers;
    args.append({dk, dv, partialBuf, iv[0], iv[1], iv[2], splits});
    llvm::append_range(args, operandBuffers);
    func::CallOp::create(b, work, args);
  });
  forall({batch, queryHeads}, [&](ValueRange iv) {
    func::CallOp::create(b, reduce,
                         ValueRange{partialBuf, dq, iv[0], iv[1], splits});
  });
  // The deallocation pipeline frees the partial sums after this.
  SmallVector<Value> results;
  for (Value buffer : {dq, dk, dv})
    results.push_back(bufferization::ToTensorOp::create(
        b,
        RankedTensorType::get(
            cast<MemRefType>(buffer.getType()).getShape(),
            cast<MemRefType>(buffer.getType()).getElementType()),
        buffer, /*restrict=*/b.getUnitAttr(), /*writable=*/b.getUnitAttr()));
  return results;
}
