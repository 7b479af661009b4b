//===- CpuFlashKernelMasks.cpp - masks and score mods on query lanes ------===//
//
// The parts of the CPU kernel that evaluate a tile's mask pattern, segment
// ids and score mods for a whole vector of queries at once.
//
//===----------------------------------------------------------------------===//
#include "CpuFlashKernel.h"
#include "SegmentIds.h"
#include "VectorMath.h"

using namespace mlir;
using namespace mlir::attn;

Value CpuFlashKernel::queryPositions(int64_t t) {
  Value offsets = buildLaneOffsets(b, t * kLanes, kLanes);
  // Packed heads: lane g * Lq + i holds query i of head g.
  if (packsHeads)
    return arith::RemUIOp::create(b, offsets, splatIndex(queryLen));
  return arith::AddIOp::create(b, splatIndex(i0), offsets);
}

Value CpuFlashKernel::splatPosition(Value index) {
  return vector::BroadcastOp::create(
      b, VectorType::get({kLanes}, positionType),
      arith::IndexCastOp::create(b, positionType, index));
}

Value CpuFlashKernel::queryPositionVector(int64_t t) {
  SmallVector<APInt> iota;
  for (int64_t n = 0; n < kLanes; ++n)
    iota.push_back(APInt(positionType.getIntOrFloatBitWidth(), t * kLanes + n));
  Value offsets = arith::ConstantOp::create(
      b, DenseElementsAttr::get(VectorType::get({kLanes}, positionType), iota));
  if (packsHeads)
    return arith::RemUIOp::create(b, offsets, splatPosition(queryLen));
  return arith::AddIOp::create(b, splatPosition(i0), offsets);
}

void CpuFlashKernel::applyMask(Value sT, Value j0, Value tk) {
  // The pattern is evaluated for a whole vector of queries at once.
  MaskContext context;
  context.delta = splatPosition(delta);
  DenseMap<Attribute, SmallVector<Value>> tableLanes;
  walkMask(pattern, [&](MaskAttrInterface m) {
    if (isTablePattern(m) && !tableLanes.count(m))
      tableLanes[m] = tableLaneMasks(m, j0);
  });
  Value negInf = vecConst(-INFINITY);
  loop(index(0), tk, 1, {}, [&](Value r, ValueRange) {
    Value j = add(j0, r);
    Value key = splatPosition(j);
    Value keyId;
    if (kvSegments)
      keyId = vector::BroadcastOp::create(
          b, VectorType::get({kLanes}, b.getI64Type()),
          segmentId(kvSegments, j));
    for (int64_t t = 0; t < kQueryVectors; ++t) {
      auto evaluate = [&](MaskAttrInterface member) -> Value {
        if (isTablePattern(member))
          return tableLanes[member][t];
        if (isa<SegmentsAttr>(member))
          return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, queryIds[t],
                                       keyId);
        return {};
      };
      context.evaluateMember = evaluate;
      Value kept = emitElementMask(b, b.getLoc(), pattern,
                                   queryPositionVector(t), key, context);
      Value s = loadVec(sT, {r, lane(t)});
      storeVec(arith::SelectOp::create(b, kept, s, negInf), sT, {r, lane(t)});
    }
    return SmallVector<Value>{};
  });
}

SmallVector<Value> CpuFlashKernel::tableLaneMasks(MaskAttrInterface m,
                                                  Value j0) {
  MaskContext context;
  context.delta = delta;
  context.head = headIv;
  context.shape = op.getMaskShape();
  // Padded lanes repeat the last query; their results are never stored.
  Value lastQuery = sub(queryLen, index(1));
  SmallVector<Value> masks;
  for (int64_t t = 0; t < kQueryVectors; ++t) {
    Value lanes = arith::ConstantOp::create(
        b, DenseElementsAttr::get(VectorType::get({kLanes}, b.getI1Type()),
                                  false));
    for (int64_t n = 0; n < kLanes; ++n) {
      Value i = minIndex(add(i0, index(t * kLanes + n)), lastQuery);
      Value kept = emitElementMask(b, b.getLoc(), m, i, j0, context);
      lanes = vector::InsertOp::create(b, kept, lanes, ArrayRef<int64_t>{n});
    }
    masks.push_back(lanes);
  }
  return masks;
}

Value CpuFlashKernel::segmentId(Value ids, Value position) {
  return buildSegmentId(b, ids, batchIv, position);
}

void CpuFlashKernel::loadQueryIds() {
  Value lastQuery = sub(queryLen, index(1));
  for (int64_t t = 0; t < kQueryVectors; ++t) {
    Value ids = arith::ConstantOp::create(
        b, DenseElementsAttr::get(VectorType::get({kLanes}, b.getI64Type()),
                                  int64_t(0)));
    for (int64_t n = 0; n < kLanes; ++n) {
      Value i = minIndex(add(i0, index(t * kLanes + n)), lastQuery);
      ids = vector::InsertOp::create(b, segmentId(qSegments, i), ids,
                                     ArrayRef<int64_t>{n});
    }
    queryIds.push_back(ids);
  }
}

std::pair<Value, Value> CpuFlashKernel::idRange(Value ids, Value first,
                                                Value count) {
  return buildIdRange(b, ids, batchIv, first, count);
}

std::pair<Value, Value> CpuFlashKernel::segmentTileClass(Value j0, Value tk) {
  return buildSegmentTileClass(b, {queryIdMin, queryIdMax},
                               idRange(kvSegments, j0, tk));
}

Value CpuFlashKernel::applyMods(Value sT, Value j0, Value tk) {
  ArrayAttr mods = op.getModsAttr();
  int64_t numHeads =
      cast<RankedTensorType>(op.getQuery().getType()).getDimSize(1);
  Value deltaLanes = splatIndex(delta);
  // Relative-position tables are gathered per query lane.
  Value allLanes = arith::ConstantOp::create(
      b,
      DenseElementsAttr::get(VectorType::get({kLanes}, b.getI1Type()), true));
  Value zeros = vecConst(0.0f);
  auto gatherRelTable = [&](Value head, Value columns) -> Value {
    return vector::GatherOp::create(b, vec, relTable,
                                    ValueRange{head, index(0)}, columns,
                                    allLanes, zeros, IntegerAttr());
  };
  auto gatherConstant = [&](ArrayRef<float> values, Value indices) -> Value {
    memref::GlobalOp global = createF32Table(
        (op->getParentOfType<func::FuncOp>().getSymName() + "__attn_mod_table")
            .str(),
        values);
    Value table =
        memref::GetGlobalOp::create(b, global.getType(), global.getSymName());
    return vector::GatherOp::create(b, vec, table, ValueRange{index(0)},
                                    indices, allLanes, zeros, IntegerAttr());
  };
  ScoreModLanes lanes{gatherRelTable, gatherConstant};
  // The bias and mask rows of this (batch, head): size-1 dims broadcast
  // (decided at run time when the size is dynamic).
  auto broadcastIndex = [&](Value buffer, int64_t d, Value iv) -> Value {
    int64_t size = cast<MemRefType>(buffer.getType()).getDimSize(d);
    if (!ShapedType::isDynamic(size))
      return size == 1 ? index(0) : iv;
    Value isOne = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                        dim(buffer, d), index(1));
    return arith::SelectOp::create(b, isOne, index(0), iv);
  };
  Value biasBatch, biasHead, maskBatch, maskHead;
  if (bias) {
    biasBatch = broadcastIndex(bias, 0, batchIv);
    biasHead = broadcastIndex(bias, 1, headIv);
  }
  if (maskOperand) {
    maskBatch = broadcastIndex(maskOperand, 0, batchIv);
    maskHead = broadcastIndex(maskOperand, 1, headIv);
  }
  // The loop carries the smallest bias seen (a masked key counts as -inf):
  // -inf drops a key.
  bool tracksDrops = bias || maskOperand;
  Value init = f32Const(INFINITY);
  scf::ForOp rows = loop(
      index(0), tk, 1, tracksDrops ? ValueRange{init} : ValueRange{},
      [&](Value r, ValueRange minBias) {
        Value key = add(j0, r);
        Value keyLanes = splatIndex(key);
        Value biasValue, biasLanes, kept, keptLanes;
        if (bias) {
          biasValue = loadAsF32(bias, {biasBatch, biasHead, index(0), key});
          biasLanes = vector::BroadcastOp::create(b, vec, biasValue);
        }
        if (maskOperand) {
          kept = memref::LoadOp::create(
              b, maskOperand, ValueRange{maskBatch, maskHead, index(0), key});
          keptLanes = vector::BroadcastOp::create(
              b, VectorType::get({kLanes}, b.getI1Type()), kept);
          // A select, not -inf added: a masked key's NaN stays out.
          Value dropped = arith::SelectOp::create(b, kept, f32Const(INFINITY),
                                                  f32Const(-INFINITY));
          biasValue = biasValue
                          ? arith::SelectOp::create(b, kept, biasValue, dropped)
                          : dropped;
        }
        for (int64_t t = 0; t < kQueryVectors; ++t) {
          Value x = emitSoftcap(b, b.getLoc(), mods, loadVec(sT, {r, lane(t)}));
          if (bias)
            x = arith::AddFOp::create(b, x, biasLanes);
          if (mods && !mods.empty()) {
            // r = j - (i + delta) for each query lane.
            Value distance = arith::SubIOp::create(
                b, keyLanes,
                arith::AddIOp::create(b, queryPositions(t), deltaLanes));
            x = emitScoreMods(b, b.getLoc(), mods, x, distance, headIv,
                              Value(), numHeads, lanes);
          }
          if (maskOperand)
            x = arith::SelectOp::create(b, keptLanes, x, vecConst(-INFINITY));
          storeVec(x, sT, {r, lane(t)});
        }
        if (!tracksDrops)
          return SmallVector<Value>{};
        return SmallVector<Value>{
            arith::MinimumFOp::create(b, minBias[0], biasValue)};
      });
  if (!tracksDrops)
    return Value();
  return arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, rows.getResult(0),
                               f32Const(-INFINITY));
}

memref::GlobalOp CpuFlashKernel::createF32Table(StringRef name,
                                                ArrayRef<float> data) {
  memref::GlobalOp &cached =
      f32Tables[std::vector<float>(data.begin(), data.end())];
  if (cached)
    return cached;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op->getParentOfType<func::FuncOp>());
  auto type = MemRefType::get({int64_t(data.size())}, f32);
  auto global = memref::GlobalOp::create(
      b, name, b.getStringAttr("private"), type,
      DenseElementsAttr::get(RankedTensorType::get(type.getShape(), f32), data),
      /*constant=*/true, /*alignment=*/IntegerAttr());
  SymbolTable(module).insert(global); // uniquifies the name
  cached = global;
  return global;
}

memref::GlobalOp CpuFlashKernel::createTable(ModuleOp module, StringRef name,
                                             ArrayRef<int32_t> data) {
  auto type = MemRefType::get({int64_t(data.size())}, b.getI32Type());
  auto tensorType = RankedTensorType::get(type.getShape(), b.getI32Type());
  auto global = memref::GlobalOp::create(
      b, name, b.getStringAttr("private"), type,
      DenseElementsAttr::get(tensorType, data), /*constant=*/true,
      /*alignment=*/IntegerAttr());
  SymbolTable(module).insert(global); // uniquifies the name
  return global;
}
