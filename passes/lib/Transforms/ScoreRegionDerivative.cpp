//===- ScoreRegionDerivative.cpp - forward-mode tangents of a region ------===//
//
// The region's ops are cloned once (the primal values); then, per seed
// (the input x, or one read of a captured tensor), a tangent is built for
// each float value in program order by the chain rule of its op. A null
// tangent stands for 0, so values that do not depend on the seed cost
// nothing.
//
//===----------------------------------------------------------------------===//
#include "attn/Transforms/ScoreRegionDerivative.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

bool hasFloatResult(Operation *op) {
  return llvm::any_of(op->getResultTypes(),
                      [](Type t) { return isa<FloatType>(t); });
}

bool isDifferentiable(Operation *op) {
  if (!hasFloatResult(op))
    return true;
  return isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
             arith::NegFOp, arith::MaximumFOp, arith::MinimumFOp,
             arith::MaxNumFOp, arith::MinNumFOp, arith::SelectOp,
             arith::ConstantOp, arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp,
             arith::UIToFPOp, math::ExpOp, math::LogOp, math::TanhOp,
             math::SqrtOp, math::RsqrtOp, math::AbsFOp, math::PowFOp,
             tensor::ExtractOp>(op);
}

/// Tangents of one seed over the cloned region.
class TangentBuilder {
public:
  TangentBuilder(OpBuilder &b, Location loc, const IRMapping &primal)
      : b(b), loc(loc), primal(primal) {}

  /// The tangent of the region's result when `seedValue` (a region value:
  /// its block argument x or an extract's result) has tangent 1.
  Value run(Block &body, Value seedValue) {
    tangents.clear();
    tangents[seedValue] = one(seedValue.getType());
    for (Operation &op : body.without_terminator()) {
      if (op.getNumResults() != 1 || !isa<FloatType>(op.getResult(0).getType()))
        continue;
      if (tangents.count(op.getResult(0)))
        continue; // the seed
      if (Value t = tangentOf(&op))
        tangents[op.getResult(0)] = t;
    }
    Value result = cast<YieldOp>(body.getTerminator()).getValues()[0];
    Value t = tangents.lookup(result);
    return t ? t : zero(result.getType());
  }

private:
  Value one(Type t) { return constant(t, 1.0); }
  Value zero(Type t) { return constant(t, 0.0); }
  Value constant(Type t, double v) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, v));
  }
  // Values from above (constants the canonicalizer hoisted) stand as they are.
  Value p(Value regionValue) { return primal.lookupOrDefault(regionValue); }
  Value t(Value regionValue) { return tangents.lookup(regionValue); }
  Value add(Value x, Value y) {
    if (!x)
      return y;
    if (!y)
      return x;
    return arith::AddFOp::create(b, loc, x, y);
  }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  /// A tangent that is ta where `cond`, else tb (nulls as 0).
  Value choose(Value cond, Value ta, Value tb, Type type) {
    if (!ta && !tb)
      return {};
    return arith::SelectOp::create(b, loc, cond, ta ? ta : zero(type),
                                   tb ? tb : zero(type));
  }

  Value tangentOf(Operation *op) {
    Value y = p(op->getResult(0));
    Type type = y.getType();
    auto operandTangent = [&](unsigned n) { return t(op->getOperand(n)); };
    if (isa<arith::AddFOp>(op))
      return add(operandTangent(0), operandTangent(1));
    if (isa<arith::SubFOp>(op)) {
      Value tb = operandTangent(1);
      return add(operandTangent(0), tb ? neg(tb) : Value());
    }
    if (isa<arith::MulFOp>(op)) {
      Value ta = operandTangent(0), tb = operandTangent(1);
      return add(ta ? mul(ta, p(op->getOperand(1))) : Value(),
                 tb ? mul(p(op->getOperand(0)), tb) : Value());
    }
    if (isa<arith::DivFOp>(op)) {
      // d(a / b) = da / b - (a / b) db / b
      Value ta = operandTangent(0), tb = operandTangent(1);
      Value denominator = p(op->getOperand(1));
      Value sum = add(ta, tb ? neg(mul(y, tb)) : Value());
      return sum ? arith::DivFOp::create(b, loc, sum, denominator).getResult()
                 : Value();
    }
    if (isa<arith::NegFOp>(op)) {
      Value ta = operandTangent(0);
      return ta ? neg(ta) : Value();
    }
    if (isa<arith::ExtFOp, arith::TruncFOp>(op)) {
      Value ta = operandTangent(0);
      if (!ta)
        return {};
      return isa<arith::ExtFOp>(op)
                 ? arith::ExtFOp::create(b, loc, type, ta).getResult()
                 : arith::TruncFOp::create(b, loc, type, ta).getResult();
    }
    if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
            arith::MinNumFOp>(op)) {
      // The tangent of the operand the op returns.
      bool isMax = isa<arith::MaximumFOp, arith::MaxNumFOp>(op);
      Value first = arith::CmpFOp::create(
          b, loc, isMax ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OLE,
          p(op->getOperand(0)), p(op->getOperand(1)));
      return choose(first, operandTangent(0), operandTangent(1), type);
    }
    if (isa<math::PowFOp>(op)) {
      // d(a^c) = c a^(c - 1) da + a^c log(a) dc
      Value a = p(op->getOperand(0)), c = p(op->getOperand(1));
      Value ta = operandTangent(0), tc = operandTangent(1);
      Value da, dc;
      if (ta)
        da = mul(
            mul(c, math::PowFOp::create(
                       b, loc, a, arith::SubFOp::create(b, loc, c, one(type)))),
            ta);
      if (tc)
        dc = mul(mul(y, math::LogOp::create(b, loc, a)), tc);
      return add(da, dc);
    }
    if (auto select = dyn_cast<arith::SelectOp>(op))
      return choose(p(select.getCondition()), t(select.getTrueValue()),
                    t(select.getFalseValue()), type);
    Value ta = op->getNumOperands() ? operandTangent(0) : Value();
    if (!ta)
      return {}; // constants, casts of integers, extracts not seeded
    Value a = p(op->getOperand(0));
    if (isa<math::ExpOp>(op))
      return mul(y, ta);
    if (isa<math::LogOp>(op))
      return arith::DivFOp::create(b, loc, ta, a);
    if (isa<math::TanhOp>(op)) // 1 - y^2
      return mul(arith::SubFOp::create(b, loc, one(type), mul(y, y)), ta);
    if (isa<math::SqrtOp>(op)) // 1 / (2 y)
      return arith::DivFOp::create(b, loc, ta, mul(constant(type, 2.0), y));
    if (isa<math::RsqrtOp>(op)) // -y^3 / 2
      return mul(mul(constant(type, -0.5), mul(y, mul(y, y))), ta);
    if (isa<math::AbsFOp>(op)) {
      Value negative = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                             a, zero(type));
      return arith::SelectOp::create(b, loc, negative, neg(ta), ta);
    }
    return {};
  }

  OpBuilder &b;
  Location loc;
  const IRMapping &primal;
  DenseMap<Value, Value> tangents;
};

} // namespace

Operation *mlir::attn::findUndifferentiableOp(Region &score) {
  Operation *found = nullptr;
  score.walk([&](Operation *op) {
    if (!found && !isDifferentiable(op))
      found = op;
  });
  return found;
}

ScoreRegionTangents
mlir::attn::emitScoreRegionTangents(OpBuilder &b, Location loc, Region &score,
                                    ValueRange args, ArrayRef<Value> captured) {
  Block &body = score.front();
  IRMapping primal;
  for (auto [arg, value] : llvm::zip(body.getArguments(), args))
    primal.map(arg, value);
  for (Operation &inner : body.without_terminator())
    b.clone(inner, primal);
  ScoreRegionTangents out;
  out.y = primal.lookupOrDefault(
      cast<YieldOp>(body.getTerminator()).getValues()[0]);
  TangentBuilder tangents(b, loc, primal);
  out.slope = tangents.run(body, body.getArgument(0));
  for (Operation &inner : body.without_terminator()) {
    auto extract = dyn_cast<tensor::ExtractOp>(&inner);
    if (!extract)
      continue;
    const Value *at = llvm::find(captured, extract.getTensor());
    if (at == captured.end())
      continue;
    CapturedRead read;
    read.tensor = at - captured.begin();
    for (Value index : extract.getIndices())
      read.indices.push_back(primal.lookupOrDefault(index));
    read.slope = tangents.run(body, extract.getResult());
    out.reads.push_back(std::move(read));
  }
  return out;
}
