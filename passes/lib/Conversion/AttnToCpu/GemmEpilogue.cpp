//===- GemmEpilogue.cpp - element-wise steps fused into the GEMM ----------===//
#include "GemmEpilogue.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::attn;

/// An f32 buffer read with vector loads along its last dim.
static bool isVectorReadable(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.getElementType().isF32() && type.isLastDimUnitStride();
}

linalg::GenericOp mlir::attn::matchGemmEpilogue(Operation *product, Value c) {
  auto op = dyn_cast_or_null<linalg::GenericOp>(product->getNextNode());
  if (!op || !op.hasPureBufferSemantics() || op.getNumLoops() != 2 ||
      op.getNumParallelLoops() != 2 || op.getNumDpsInits() != 1 ||
      op.getDpsInits()[0] != c || !isVectorReadable(c))
    return {};
  MLIRContext *ctx = op.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap alongRows = AffineMap::get(2, 0, getAffineDimExpr(1, ctx));
  if (op.getMatchingIndexingMap(op.getDpsInitOperand(0)) != identity)
    return {};
  // Inputs are read in the last k-block, after earlier k-blocks stored
  // partial sums into C: C itself is no input.
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (input->get() == c || !isVectorReadable(input->get()) ||
        (map != identity && map != alongRows))
      return {};
  }
  // Scalar arith / math ops become the same ops on vectors.
  auto scalar = [](Type t) { return isa<FloatType, IntegerType>(t); };
  Block &body = op.getRegion().front();
  for (Operation &inner : body.without_terminator()) {
    if (!isa<arith::ArithDialect, math::MathDialect>(inner.getDialect()) ||
        inner.getNumRegions() || inner.getNumResults() != 1 ||
        !llvm::all_of(inner.getOperandTypes(), scalar) ||
        !scalar(inner.getResult(0).getType()))
      return {};
  }
  return op;
}

void mlir::attn::moveUnderEmptyReduction(Operation *moved,
                                         linalg::LinalgOp product) {
  ImplicitLocOpBuilder b(moved->getLoc(), moved);
  SmallVector<Range, 4> ranges = product.createLoopRanges(b, b.getLoc());
  Value empty;
  for (auto [range, type] :
       llvm::zip(ranges, product.getIteratorTypesArray())) {
    if (type != utils::IteratorType::reduction)
      continue;
    Value size = getValueOrCreateConstantIndexOp(b, b.getLoc(), range.size);
    Value isEmpty =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, size,
                              arith::ConstantIndexOp::create(b, 0));
    empty = empty ? arith::OrIOp::create(b, empty, isEmpty) : isEmpty;
  }
  auto ifOp = scf::IfOp::create(b, empty, /*withElseRegion=*/false);
  moved->moveBefore(ifOp.thenBlock()->getTerminator());
}

SmallVector<Value> mlir::attn::loadTile(ImplicitLocOpBuilder &b, Value buffer,
                                        VectorType vec,
                                        ArrayRef<Value> rowIndex,
                                        ArrayRef<Value> rowValid,
                                        ArrayRef<Value> colIndex,
                                        ArrayRef<Value> masks) {
  Value zero = arith::ConstantOp::create(b, vec, b.getZeroAttr(vec));
  SmallVector<Type> rowTypes(colIndex.size(), vec);
  SmallVector<Value> tile;
  for (auto [row, valid] : llvm::zip(rowIndex, rowValid)) {
    auto load = scf::IfOp::create(b, rowTypes, valid, /*else=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(load.thenBlock());
    SmallVector<Value> loaded;
    for (auto [col, mask] : llvm::zip(colIndex, masks))
      loaded.push_back(vector::MaskedLoadOp::create(
          b, vec, buffer, ValueRange{row, col}, mask, zero));
    scf::YieldOp::create(b, loaded);
    b.setInsertionPointToStart(load.elseBlock());
    scf::YieldOp::create(b, SmallVector<Value>(colIndex.size(), zero));
    llvm::append_range(tile, load.getResults());
  }
  return tile;
}

bool mlir::attn::isSelfContainedEpilogue(linalg::GenericOp epilogue) {
  Region &body = epilogue.getRegion();
  return body
      .walk([&](Operation *inner) {
        for (Value operand : inner->getOperands())
          if (operand.getParentRegion() != &body)
            return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted() == false;
}

SmallVector<Value> mlir::attn::applyGemmEpilogue(
    ImplicitLocOpBuilder &b, linalg::GenericOp epilogue, ArrayRef<Value> acc,
    ArrayRef<Value> rowIndex, ArrayRef<Value> rowValid,
    ArrayRef<Value> colIndex, ArrayRef<Value> masks, ValueRange inputValues) {
  int64_t rows = rowIndex.size(), vectors = colIndex.size();
  auto vec = cast<VectorType>(acc.front().getType());
  auto vectorOf = [&](Type t) { return VectorType::get(vec.getShape(), t); };
  Value zero = arith::ConstantOp::create(b, vec, b.getZeroAttr(vec));
  Block &body = epilogue.getRegion().front();
  SmallVector<OpOperand *> inputs = epilogue.getDpsInputOperands();
  auto alongRows = [&](OpOperand *input) {
    return epilogue.getMatchingIndexingMap(input).getNumResults() == 1;
  };
  auto buffer = [&](OpOperand *input) {
    unsigned i = input->getOperandNumber();
    return inputValues.empty() ? input->get() : inputValues[i];
  };
  // Row-broadcast inputs (a bias): one load per column vector.
  SmallVector<SmallVector<Value>> rowInputs(inputs.size());
  for (auto [i, input] : llvm::enumerate(inputs))
    if (alongRows(input))
      for (int64_t v = 0; v < vectors; ++v)
        rowInputs[i].push_back(vector::MaskedLoadOp::create(
            b, vec, buffer(input), ValueRange{colIndex[v]}, masks[v], zero));

  // (m, n) inputs: loaded on rows below M, zeros past it (not stored).
  SmallVector<SmallVector<Value>> matrixInputs(inputs.size());
  for (auto [i, input] : llvm::enumerate(inputs))
    if (!alongRows(input))
      matrixInputs[i] =
          loadTile(b, buffer(input), vec, rowIndex, rowValid, colIndex, masks);

  SmallVector<Value> result;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t v = 0; v < vectors; ++v) {
      IRMapping map;
      for (auto [i, input] : llvm::enumerate(inputs))
        map.map(body.getArgument(i), alongRows(input)
                                         ? rowInputs[i][v]
                                         : matrixInputs[i][r * vectors + v]);
      map.map(body.getArgument(inputs.size()), acc[r * vectors + v]);
      for (Operation &inner : body.without_terminator()) {
        // Scalars from outside the body are broadcast; constants splat.
        for (Value operand : inner.getOperands())
          if (!map.contains(operand))
            map.map(operand, vector::BroadcastOp::create(
                                 b, vectorOf(operand.getType()), operand));
        Type type = vectorOf(inner.getResult(0).getType());
        if (auto constant = dyn_cast<arith::ConstantOp>(inner)) {
          map.map(inner.getResult(0),
                  arith::ConstantOp::create(
                      b, DenseElementsAttr::get(cast<ShapedType>(type),
                                                constant.getValue())));
          continue;
        }
        Operation *copy = b.clone(inner, map);
        copy->getResult(0).setType(type);
      }
      Value yielded = body.getTerminator()->getOperand(0);
      result.push_back(map.contains(yielded)
                           ? map.lookup(yielded)
                           : vector::BroadcastOp::create(b, vec, yielded));
    }
  }
  return result;
}
