//===- LoopBuilder.h - scf.for and scf.if from callbacks ---------*- C++ -*-===//
//
// The control-flow helpers the CPU emitters share: a loop body builds its
// ops at the start of the loop and returns what the iteration yields; a
// choice builds one branch, or only the one a constant condition picks;
// the OpenMP thread count their run-time work splits ask for.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOCPU_LOOPBUILDER_H
#define ATTN_CONVERSION_ATTNTOCPU_LOOPBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
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

/// body(start, rows) over [0, total) in blocks of `block` rows, then the
/// rest in blocks of 4 and 2 (at most one each) and single rows: a row
/// alone carries only one row of dependent accumulator chains, too few to
/// keep both FMA pipes busy, so e.g. the 4 rows left of 64 by blocks of 6
/// would cost a third of the product one by one.
inline void buildRowBlocks(ImplicitLocOpBuilder &b, Value total, int64_t block,
                           function_ref<void(Value, int64_t)> body) {
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
  SmallVector<int64_t, 3> sizes = {block};
  for (int64_t size : {4, 2})
    if (size < block)
      sizes.push_back(size);
  Value start = index(0);
  auto rowLoop = [&](Value end, int64_t size) {
    buildLoop(b, start, end, index(size), {}, [&](Value r0, ValueRange) {
      body(r0, size);
      return SmallVector<Value>{};
    });
  };
  for (int64_t size : sizes) {
    Value rest = arith::SubIOp::create(b, total, start);
    Value whole = arith::MulIOp::create(
        b, arith::DivUIOp::create(b, rest, index(size)), index(size));
    Value end = arith::AddIOp::create(b, start, whole);
    rowLoop(end, size);
    start = end;
  }
  rowLoop(total, 1);
}

/// The OpenMP runtime's thread count as an index, asked at run time (the
/// kernels link the runtime anyway); omp_get_max_threads is declared in
/// `module` on first use.
inline Value buildOmpMaxThreads(ImplicitLocOpBuilder &b, ModuleOp module) {
  if (!module.lookupSymbol("omp_get_max_threads")) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    func::FuncOp::create(b, "omp_get_max_threads",
                         b.getFunctionType({}, {b.getI32Type()}))
        .setPrivate();
  }
  return arith::IndexCastUIOp::create(
      b, b.getIndexType(),
      func::CallOp::create(b, "omp_get_max_threads", TypeRange{b.getI32Type()},
                           ValueRange{})
          .getResult(0));
}

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOCPU_LOOPBUILDER_H
