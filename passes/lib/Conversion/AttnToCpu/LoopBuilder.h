//===- LoopBuilder.h - scf.for and scf.if from callbacks ---------*- C++ -*-===//
//
// The control-flow helpers the CPU emitters share: a loop body builds its
// ops at the start of the loop and returns what the iteration yields; a
// choice builds one branch, or only the one a constant condition picks.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOCPU_LOOPBUILDER_H
#define ATTN_CONVERSION_ATTNTOCPU_LOOPBUILDER_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"

namespace mlir::attn {

inline scf::ForOp
buildLoop(ImplicitLocOpBuilder &b, Value lb, Value ub, Value step,
          ValueRange init,
          function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto forOp = scf::ForOp::create(b, lb, ub, step, init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forOp.getBody());
  SmallVector<Value> results =
      body(forOp.getInductionVar(), forOp.getRegionIterArgs());
  // scf.for builds its yield only without loop-carried values.
  if (forOp.getBody()->empty() ||
      !forOp.getBody()->back().hasTrait<OpTrait::IsTerminator>())
    scf::YieldOp::create(b, results);
  else
    forOp.getBody()->back().setOperands(results);
  return forOp;
}

/// if (condition) then() else otherwise(), folded when the condition is a
/// constant.
inline void buildIfElse(ImplicitLocOpBuilder &b, Value condition,
                        function_ref<void()> then,
                        function_ref<void()> otherwise) {
  if (matchPattern(condition, m_One()))
    return then();
  if (matchPattern(condition, m_Zero()))
    return otherwise();
  auto ifOp = scf::IfOp::create(b, condition, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  then();
  b.setInsertionPointToStart(ifOp.elseBlock());
  otherwise();
}

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOCPU_LOOPBUILDER_H
