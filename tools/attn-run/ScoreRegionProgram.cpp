//===- ScoreRegionProgram.cpp - a score region for the reference ----------===//
#include "ScoreRegionProgram.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include <cmath>
#include <limits>

using namespace mlir;

namespace attnrt {

namespace {

/// What one evaluation works on.
struct Machine {
  std::vector<double> slots;
  const reference::ScoreFunction *self;
  int64_t shiftRead;
  double shift;
  std::vector<reference::ScoreFunction::Read> *reads;
  int64_t readCount = 0;
};

using Step = std::function<void(Machine &)>;

bool compareFloats(arith::CmpFPredicate p, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (p) {
  case arith::CmpFPredicate::AlwaysFalse:
    return false;
  case arith::CmpFPredicate::AlwaysTrue:
    return true;
  case arith::CmpFPredicate::OEQ:
    return !unordered && a == b;
  case arith::CmpFPredicate::OGT:
    return !unordered && a > b;
  case arith::CmpFPredicate::OGE:
    return !unordered && a >= b;
  case arith::CmpFPredicate::OLT:
    return !unordered && a < b;
  case arith::CmpFPredicate::OLE:
    return !unordered && a <= b;
  case arith::CmpFPredicate::ONE:
    return !unordered && a != b;
  case arith::CmpFPredicate::ORD:
    return !unordered;
  case arith::CmpFPredicate::UEQ:
    return unordered || a == b;
  case arith::CmpFPredicate::UGT:
    return unordered || a > b;
  case arith::CmpFPredicate::UGE:
    return unordered || a >= b;
  case arith::CmpFPredicate::ULT:
    return unordered || a < b;
  case arith::CmpFPredicate::ULE:
    return unordered || a <= b;
  case arith::CmpFPredicate::UNE:
    return unordered || a != b;
  case arith::CmpFPredicate::UNO:
    return unordered;
  }
  return false;
}

bool compareInts(arith::CmpIPredicate p, double a, double b) {
  // Index and integer values are exact in a double up to 2^53; unsigned
  // predicates compare the same non-negative positions.
  switch (p) {
  case arith::CmpIPredicate::eq:
    return a == b;
  case arith::CmpIPredicate::ne:
    return a != b;
  case arith::CmpIPredicate::slt:
  case arith::CmpIPredicate::ult:
    return a < b;
  case arith::CmpIPredicate::sle:
  case arith::CmpIPredicate::ule:
    return a <= b;
  case arith::CmpIPredicate::sgt:
  case arith::CmpIPredicate::ugt:
    return a > b;
  case arith::CmpIPredicate::sge:
  case arith::CmpIPredicate::uge:
    return a >= b;
  }
  return false;
}

/// The scalar function of a one-operand op, or null.
std::function<double(double)> unaryOf(Operation *op) {
  if (isa<arith::NegFOp>(op))
    return [](double a) { return -a; };
  if (isa<arith::ExtFOp, arith::TruncFOp, arith::IndexCastOp,
          arith::IndexCastUIOp, arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp,
          arith::SIToFPOp, arith::UIToFPOp>(op))
    return [](double a) { return a; };
  if (isa<arith::FPToSIOp, arith::FPToUIOp>(op))
    return [](double a) { return std::trunc(a); };
  if (isa<math::ExpOp>(op))
    return [](double a) { return std::exp(a); };
  if (isa<math::LogOp>(op))
    return [](double a) { return std::log(a); };
  if (isa<math::TanhOp>(op))
    return [](double a) { return std::tanh(a); };
  if (isa<math::SqrtOp>(op))
    return [](double a) { return std::sqrt(a); };
  if (isa<math::RsqrtOp>(op))
    return [](double a) { return 1 / std::sqrt(a); };
  if (isa<math::AbsFOp>(op))
    return [](double a) { return std::abs(a); };
  if (isa<math::ErfOp>(op))
    return [](double a) { return std::erf(a); };
  return {};
}

/// The scalar function of a two-operand op, or null.
std::function<double(double, double)> binaryOf(Operation *op) {
  if (isa<arith::AddFOp, arith::AddIOp>(op))
    return [](double a, double b) { return a + b; };
  if (isa<arith::SubFOp, arith::SubIOp>(op))
    return [](double a, double b) { return a - b; };
  if (isa<arith::MulFOp, arith::MulIOp>(op))
    return [](double a, double b) { return a * b; };
  if (isa<arith::DivFOp>(op))
    return [](double a, double b) { return a / b; };
  if (isa<arith::DivSIOp, arith::DivUIOp>(op))
    return [](double a, double b) { return b ? std::trunc(a / b) : NAN; };
  if (isa<arith::RemSIOp, arith::RemUIOp>(op))
    return [](double a, double b) { return b ? std::fmod(a, b) : NAN; };
  if (isa<arith::MaximumFOp, arith::MaxSIOp, arith::MaxUIOp>(op))
    return [](double a, double b) {
      return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    };
  if (isa<arith::MinimumFOp, arith::MinSIOp, arith::MinUIOp>(op))
    return [](double a, double b) {
      return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    };
  if (isa<arith::MaxNumFOp>(op))
    return [](double a, double b) { return std::fmax(a, b); };
  if (isa<arith::MinNumFOp>(op))
    return [](double a, double b) { return std::fmin(a, b); };
  if (isa<math::PowFOp>(op))
    return [](double a, double b) { return std::pow(a, b); };
  return {};
}

} // namespace

std::string capturedRole(size_t n) { return "captured" + std::to_string(n); }

FailureOr<reference::ScoreFunction> scoreFunctionOf(Region &score) {
  reference::ScoreFunction function;
  SmallVector<Value> captured = attn::capturedFloatTensors(score);
  SmallVector<SmallVector<int64_t>> shapes;
  for (Value tensor : captured) {
    auto type = cast<RankedTensorType>(tensor.getType());
    if (!type.hasStaticShape())
      return emitError(tensor.getLoc(),
                       "--check needs the score region's captured tensors "
                       "to have static shapes");
    shapes.emplace_back(type.getShape());
    function.capturedSizes.push_back(type.getNumElements());
    function.captured.push_back(nullptr);
    std::vector<float> values;
    DenseElementsAttr constant;
    if (matchPattern(tensor, m_Constant(&constant)))
      for (APFloat v : constant.getValues<APFloat>())
        values.push_back(float(v.convertToDouble()));
    function.constantData.push_back(std::move(values));
  }

  Block &body = score.front();
  llvm::DenseMap<Value, unsigned> slot;
  auto slotOf = [&](Value v) {
    auto [it, inserted] = slot.try_emplace(v, slot.size());
    return it->second;
  };
  for (BlockArgument arg : body.getArguments())
    slotOf(arg);
  std::vector<Step> steps;
  for (Operation &op : body.without_terminator()) {
    if (op.getNumResults() != 1 || op.getNumRegions())
      return op.emitOpError("cannot be evaluated by --check's reference in a "
                            "score region");
    // Scalars from above: constants.
    for (Value operand : op.getOperands()) {
      double value;
      FloatAttr f;
      IntegerAttr i;
      if (slot.count(operand) || isa<ShapedType>(operand.getType()))
        continue;
      if (matchPattern(operand, m_Constant(&f)))
        value = f.getValueAsDouble();
      else if (matchPattern(operand, m_Constant(&i)))
        value = double(i.getValue().getSExtValue());
      else
        return op.emitOpError("reads a value from outside the score region "
                              "that --check's reference does not have");
      unsigned at = slotOf(operand);
      steps.push_back([=](Machine &m) { m.slots[at] = value; });
    }
    unsigned out = slotOf(op.getResult(0));
    SmallVector<unsigned> in;
    for (Value operand : op.getOperands())
      if (slot.count(operand))
        in.push_back(slot.lookup(operand));
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      double value;
      if (auto f = dyn_cast<FloatAttr>(constant.getValue()))
        value = f.getValueAsDouble();
      else if (auto i = dyn_cast<IntegerAttr>(constant.getValue()))
        value = double(i.getValue().getSExtValue());
      else
        continue; // a dense tensor: read through tensor.extract
      steps.push_back([=](Machine &m) { m.slots[out] = value; });
    } else if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
      const Value *at = llvm::find(captured, extract.getTensor());
      if (at == captured.end() || in.size() != extract.getIndices().size())
        return op.emitOpError("reads a tensor --check's reference does not "
                              "have in a score region");
      int64_t tensor = at - captured.begin();
      SmallVector<int64_t> shape = shapes[tensor];
      steps.push_back([=](Machine &m) {
        int64_t flat = 0;
        for (auto [n, extent] : llvm::enumerate(shape)) {
          double index = m.slots[in[n]];
          if (index < 0 || index >= double(extent)) {
            m.slots[out] = NAN; // out of bounds: undefined
            return;
          }
          flat = flat * extent + int64_t(index);
        }
        double value = m.self->data(tensor)[flat];
        if (m.readCount++ == m.shiftRead)
          value += m.shift;
        if (m.reads)
          m.reads->push_back({tensor, flat});
        m.slots[out] = value;
      });
    } else if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
      arith::CmpFPredicate p = cmp.getPredicate();
      steps.push_back([=](Machine &m) {
        m.slots[out] = compareFloats(p, m.slots[in[0]], m.slots[in[1]]);
      });
    } else if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
      arith::CmpIPredicate p = cmp.getPredicate();
      steps.push_back([=](Machine &m) {
        m.slots[out] = compareInts(p, m.slots[in[0]], m.slots[in[1]]);
      });
    } else if (isa<arith::SelectOp>(op) && in.size() == 3) {
      steps.push_back([=](Machine &m) {
        m.slots[out] = m.slots[in[0]] != 0 ? m.slots[in[1]] : m.slots[in[2]];
      });
    } else if (auto f = unaryOf(&op); f && in.size() == 1) {
      steps.push_back([=](Machine &m) { m.slots[out] = f(m.slots[in[0]]); });
    } else if (auto f = binaryOf(&op); f && in.size() == 2) {
      steps.push_back([=](Machine &m) {
        m.slots[out] = f(m.slots[in[0]], m.slots[in[1]]);
      });
    } else {
      return op.emitOpError("cannot be evaluated by --check's reference in a "
                            "score region");
    }
  }
  Value yielded = cast<attn::YieldOp>(body.getTerminator()).getValues()[0];
  if (!slot.count(yielded))
    return score.getParentOp()->emitOpError(
        "yields a value --check's reference cannot evaluate");
  unsigned result = slot.lookup(yielded);
  size_t numSlots = slot.size();
  function.evaluate = [steps, result, numSlots](
                          const reference::ScoreFunction &self, double x,
                          int64_t b, int64_t h, int64_t i, int64_t j,
                          int64_t shiftRead, double shift,
                          std::vector<reference::ScoreFunction::Read> *reads) {
    Machine m{std::vector<double>(numSlots), &self, shiftRead, shift, reads};
    m.slots[0] = x;
    m.slots[1] = double(b);
    m.slots[2] = double(h);
    m.slots[3] = double(i);
    m.slots[4] = double(j);
    for (const Step &step : steps)
      step(m);
    return m.slots[result];
  };
  return function;
}

} // namespace attnrt
