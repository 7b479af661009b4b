//===- LoopBuilder.h - scf.for from a body callback --------------*- C++ -*-===//
//
// The loop helper the CPU emitters share: the body builds its ops at the
// start of the loop and returns what the iteration yields.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOCPU_LOOPBUILDER_H
#define ATTN_CONVERSION_ATTNTOCPU_LOOPBUILDER_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

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

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOCPU_LOOPBUILDER_H
