//===- RuntimeCall.cpp - calls of the runtime's support functions ---------===//
#include "attn/Transforms/RuntimeCall.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::attn;

/// The memref type a tensor is passed as: same rank and element type, all
/// sizes dynamic.
static MemRefType argumentTypeOf(RankedTensorType type) {
  return MemRefType::get(
      SmallVector<int64_t>(type.getRank(), ShapedType::kDynamic),
      type.getElementType());
}

static func::FuncOp declare(OpBuilder &b, Location loc, StringRef name,
                            TypeRange argumentTypes) {
  auto module =
      b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
  auto func = func::FuncOp::create(mb, loc, name,
                                   mb.getFunctionType(argumentTypes, {}));
  func.setPrivate();
  func->setAttr("llvm.emit_c_interface", mb.getUnitAttr());
  return func;
}

SmallVector<Value>
mlir::attn::createRuntimeCall(OpBuilder &b, Location loc, StringRef name,
                              ValueRange inputs,
                              ArrayRef<RankedTensorType> outputTypes,
                              ArrayRef<SmallVector<Value>> dynamicSizes) {
  SmallVector<Value> arguments, outputs;
  SmallVector<Type> argumentTypes;
  for (Value input : inputs) {
    auto type = cast<RankedTensorType>(input.getType());
    Value buffer = bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()), input,
        /*read_only=*/true);
    argumentTypes.push_back(argumentTypeOf(type));
    arguments.push_back(
        memref::CastOp::create(b, loc, argumentTypes.back(), buffer));
  }
  for (auto [i, type] : llvm::enumerate(outputTypes)) {
    Value buffer = memref::AllocOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()),
        i < dynamicSizes.size() ? ValueRange(dynamicSizes[i]) : ValueRange(),
        b.getI64IntegerAttr(64));
    outputs.push_back(buffer);
    argumentTypes.push_back(argumentTypeOf(type));
    arguments.push_back(
        memref::CastOp::create(b, loc, argumentTypes.back(), buffer));
  }
  func::CallOp::create(b, loc, declare(b, loc, name, argumentTypes), arguments);
  SmallVector<Value> results;
  for (auto [buffer, type] : llvm::zip(outputs, outputTypes))
    results.push_back(bufferization::ToTensorOp::create(
        b, loc, type, buffer, /*restrict=*/b.getUnitAttr(),
        /*writable=*/b.getUnitAttr()));
  return results;
}
