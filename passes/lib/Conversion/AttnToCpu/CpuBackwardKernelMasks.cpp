//===- CpuBackwardKernelMasks.cpp - what decides the backward's tiles -----===//
//
// CpuBackwardKernel's masks: the compile-time lists of each key tile's
// query tiles, segment ids (id ranges per tile, ids per lane) and the
// lanes of bias and boolean mask operands.
//
//===----------------------------------------------------------------------===//
#include "CpuBackwardKernel.h"
#include "LoopBuilder.h"
#include "SegmentIds.h"
#include "attn/Analysis/KernelPlan.h"
#include "attn/Dialect/Attn/IR/TileSchedule.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::attn;

SmallVector<Value> CpuBackwardKernel::operandRow(Value buffer, Value head,
                                                 Value row, Value j) {
  auto type = cast<MemRefType>(buffer.getType());
  auto broadcast = [&](int64_t d, Value iv) -> Value {
    int64_t size = type.getDimSize(d);
    if (!ShapedType::isDynamic(size))
      return size == 1 ? index(0) : iv;
    Value isOne = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                        dim(buffer, d), index(1));
    return arith::SelectOp::create(b, isOne, index(0), iv);
  };
  return {broadcast(0, batchIv), broadcast(1, head), broadcast(2, row), j};
}

Value CpuBackwardKernel::biasLanes(Value head, Value row, Value j) {
  Type element = cast<MemRefType>(bias.getType()).getElementType();
  Value pad = arith::ConstantOp::create(b, b.getFloatAttr(element, 0.0));
  Value lanes =
      vector::TransferReadOp::create(b, VectorType::get({kLanes}, element),
                                     bias, operandRow(bias, head, row, j), pad,
                                     /*inBounds=*/ArrayRef<bool>{false});
  return element.isF32() ? lanes : arith::ExtFOp::create(b, vec, lanes);
}

Value CpuBackwardKernel::segmentId(Value ids, Value position) {
  return buildSegmentId(b, ids, batchIv, position);
}

std::pair<Value, Value> CpuBackwardKernel::idRange(Value ids, Value first,
                                                   Value count) {
  return buildIdRange(b, ids, batchIv, first, count);
}

Value CpuBackwardKernel::keySegmentLanes(Value j) {
  Type element = cast<MemRefType>(kvSegments.getType()).getElementType();
  Value pad = arith::ConstantOp::create(b, b.getIntegerAttr(element, 0));
  Value lanes = vector::TransferReadOp::create(
      b, VectorType::get({kLanes}, element), kvSegments, ValueRange{batchIv, j},
      pad, /*inBounds=*/ArrayRef<bool>{false});
  if (element.isInteger(64))
    return lanes;
  return arith::ExtSIOp::create(b, VectorType::get({kLanes}, b.getI64Type()),
                                lanes);
}

Value CpuBackwardKernel::maskLanes(Value head, Value row, Value j) {
  auto boolVec = VectorType::get({kLanes}, b.getI1Type());
  Value lanes =
      arith::ConstantOp::create(b, DenseElementsAttr::get(boolVec, false));
  SmallVector<Value> at = operandRow(mask, head, row, j);
  for (int64_t n = 0; n < kLanes; ++n) {
    Value key = add(j, index(n));
    at[3] = minIndex(key, sub(keyLen, index(1)));
    Value kept = arith::AndIOp::create(
        b, memref::LoadOp::create(b, mask, at),
        arith::CmpIOp::create(b, arith::CmpIPredicate::slt, key, keyLen));
    lanes = vector::InsertOp::create(b, kept, lanes, ArrayRef<int64_t>{n});
  }
  return lanes;
}

memref::GlobalOp CpuBackwardKernel::createTable(ModuleOp module, StringRef name,
                                                ArrayRef<int32_t> data) {
  auto type = MemRefType::get({int64_t(data.size())}, b.getI32Type());
  auto global = memref::GlobalOp::create(
      b, name, b.getStringAttr("private"), type,
      DenseElementsAttr::get(
          RankedTensorType::get(type.getShape(), b.getI32Type()), data),
      /*constant=*/true, /*alignment=*/IntegerAttr());
  SymbolTable(module).insert(global); // uniquifies the name
  return global;
}

bool CpuBackwardKernel::buildSchedule(ModuleOp module) {
  // Segment ids are known at run time only: the rest of the pattern.
  MaskAttrInterface pattern = splitRuntimeSegments(op.getPatternAttr()).second;
  MaskShape shape = op.getMaskShape();
  if (!pattern || ShapedType::isDynamic(shape.lq) ||
      ShapedType::isDynamic(shape.lk) || dependsOnHead(pattern) ||
      pattern.usesSegments())
    return false;
  int64_t delta =
      (op.getAlignment() == Alignment::bottom_right ? shape.lk - shape.lq : 0) +
      op.getPositionShift();
  // Tables past 4M entries (16 MiB) are not worth their size: run time.
  TileSchedule schedule = buildTileSchedule(
      pattern, MaskQuery{shape.lq, shape.lk, delta, 0},
      QueryTiling{kBackwardTile, 0}, kBackwardTile, int64_t(1) << 22);
  if (!schedule.complete)
    return false;
  // Transposed: per key tile, its query tiles in order.
  SmallVector<int32_t> columnStart = {0}, entries;
  for (const std::vector<int32_t> &column :
       scheduleLists(schedule, /*byKey=*/true)) {
    entries.append(column.begin(), column.end());
    columnStart.push_back(int32_t(entries.size()));
  }
  if (entries.empty())
    entries.push_back(0); // a global needs an element; columns stay empty
  std::string prefix =
      (op->getParentOfType<func::FuncOp>().getSymName() + "__attn_backward")
          .str();
  columnStartTable = createTable(module, prefix + "_columns", columnStart);
  entryTable = createTable(module, prefix + "_entries", entries);
  return true;
}
