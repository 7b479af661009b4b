//===- RaiseScoreMask.cpp - What a mask built in linalg keeps ------------===//
//
// A small symbolic evaluator: the value of a tensor element, or of a scalar
// in a generic body, as a function of the score loops (b..., i, j). It
// knows three kinds of values, enough for the masks front ends build:
//
//   Linear     integers c0 + sum c_d * loop_d (iota, index arithmetic)
//   Predicate  booleans: a constant, the half-plane j - i <= bound (from
//              comparing Linears, or a constant triangular tensor), or an
//              opaque i1 tensor read by an indexing map
//   Real       floats: onTrue where a Predicate holds, else onFalse
//
// Anything else fails, and the caller keeps the value as it was.
//
//===----------------------------------------------------------------------===//
#include "RaiseScoreMask.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include <cmath>
#include <variant>

using namespace mlir;
using namespace mlir::attn;

namespace {

struct Linear {
  SmallVector<int64_t> coeff; // per score loop
  int64_t constant = 0;

  static Linear of(unsigned rank, int64_t c) {
    return {SmallVector<int64_t>(rank, 0), c};
  }
  bool isConstant() const {
    return llvm::all_of(coeff, [](int64_t c) { return c == 0; });
  }
  /// Every value it takes is >= 0 (loops count from 0).
  bool nonNegative() const {
    return constant >= 0 &&
           llvm::all_of(coeff, [](int64_t c) { return c >= 0; });
  }
  Linear scaled(int64_t f) const {
    Linear r = *this;
    for (int64_t &c : r.coeff)
      c *= f;
    r.constant *= f;
    return r;
  }
  Linear plus(const Linear &o) const {
    Linear r = *this;
    for (auto [a, b] : llvm::zip(r.coeff, o.coeff))
      a += b;
    r.constant += o.constant;
    return r;
  }
};

struct Predicate {
  enum class Kind { Constant, HalfPlane, Read };
  Kind kind = Kind::Constant;
  bool value = true;    // Constant
  int64_t bound = 0;    // HalfPlane: j - i <= bound
  Value tensor;         // Read: tensor[map(loops)]
  AffineMap map;
  bool negated = false; // HalfPlane, Read

  static Predicate constant(bool v) {
    Predicate p;
    p.value = v;
    return p;
  }
  static Predicate halfPlane(int64_t bound, bool negated) {
    Predicate p;
    p.kind = Kind::HalfPlane;
    p.bound = bound;
    p.negated = negated;
    return p;
  }
  Predicate negate() const {
    Predicate r = *this;
    if (kind == Kind::Constant)
      r.value = !value;
    else
      r.negated = !negated;
    return r;
  }
  bool operator==(const Predicate &o) const {
    return kind == o.kind && value == o.value && bound == o.bound &&
           tensor == o.tensor && map == o.map && negated == o.negated;
  }
};

struct Real {
  Predicate cond;
  double onTrue = 0, onFalse = 0;

  static Real constant(double v) { return {Predicate::constant(true), v, v}; }
  bool isConstant() const { return cond.kind == Predicate::Kind::Constant; }
  double constantValue() const { return cond.value ? onTrue : onFalse; }
};

using Symbol = std::variant<Linear, Predicate, Real>;

/// a AND b, when the result is again one Predicate.
std::optional<Predicate> conjunction(const Predicate &a, const Predicate &b) {
  using K = Predicate::Kind;
  if (a.kind == K::Constant)
    return a.value ? b : a;
  if (b.kind == K::Constant)
    return b.value ? a : b;
  if (a == b)
    return a;
  // (j - i <= x) and (j - i <= y); not(..<= x) and not(..<= y).
  if (a.kind == K::HalfPlane && b.kind == K::HalfPlane &&
      a.negated == b.negated)
    return Predicate::halfPlane(
        a.negated ? std::max(a.bound, b.bound) : std::min(a.bound, b.bound),
        a.negated);
  return std::nullopt;
}

bool compareFloats(arith::CmpFPredicate p, double a, double b) {
  using P = arith::CmpFPredicate;
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (p) {
  case P::AlwaysFalse: return false;
  case P::AlwaysTrue: return true;
  case P::OEQ: return !unordered && a == b;
  case P::OGT: return !unordered && a > b;
  case P::OGE: return !unordered && a >= b;
  case P::OLT: return !unordered && a < b;
  case P::OLE: return !unordered && a <= b;
  case P::ONE: return !unordered && a != b;
  case P::ORD: return !unordered;
  case P::UEQ: return unordered || a == b;
  case P::UGT: return unordered || a > b;
  case P::UGE: return unordered || a >= b;
  case P::ULT: return unordered || a < b;
  case P::ULE: return unordered || a <= b;
  case P::UNE: return unordered || a != b;
  case P::UNO: return unordered;
  }
  return false;
}

class Evaluator {
public:
  explicit Evaluator(unsigned rank, MLIRContext *ctx) : rank(rank), ctx(ctx) {}

  /// The score loops as Linears.
  SmallVector<Linear> loops() const {
    SmallVector<Linear> result;
    for (unsigned d = 0; d < rank; ++d) {
      Linear l = Linear::of(rank, 0);
      l.coeff[d] = 1;
      result.push_back(l);
    }
    return result;
  }

  FailureOr<Symbol> element(Value tensor, ArrayRef<Linear> index);
  FailureOr<Symbol> scalar(Value v, linalg::GenericOp op,
                           ArrayRef<Linear> loops);

  SmallVector<Linear> apply(AffineMap map, ArrayRef<Linear> loops) const;
  std::optional<Predicate> compare(arith::CmpIPredicate p, Linear lhs,
                                   Linear rhs) const;

private:
  FailureOr<Symbol> constantElement(Attribute attr, RankedTensorType type,
                                    ArrayRef<Linear> index);
  FailureOr<Symbol> scalarOp(Operation *op, linalg::GenericOp generic,
                             ArrayRef<Linear> loops);

  unsigned rank;
  MLIRContext *ctx;
  /// Values visited before giving up (masks are short chains).
  unsigned budget = 512;
};

SmallVector<Linear> Evaluator::apply(AffineMap map,
                                     ArrayRef<Linear> loops) const {
  SmallVector<Linear> result;
  for (AffineExpr e : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(e))
      result.push_back(loops[dim.getPosition()]);
    else if (auto c = dyn_cast<AffineConstantExpr>(e))
      result.push_back(Linear::of(rank, c.getValue()));
    else
      return {};
  }
  return result;
}

std::optional<Predicate> Evaluator::compare(arith::CmpIPredicate p,
                                            Linear lhs, Linear rhs) const {
  using P = arith::CmpIPredicate;
  // Unsigned orders agree with signed ones on non-negative values.
  switch (p) {
  case P::ult: case P::ule: case P::ugt: case P::uge:
    if (!lhs.nonNegative() || !rhs.nonNegative())
      return std::nullopt;
    p = p == P::ult ? P::slt : p == P::ule ? P::sle : p == P::ugt ? P::sgt
                                                                  : P::sge;
    break;
  default:
    break;
  }
  Linear d = lhs.plus(rhs.scaled(-1)); // d P 0
  if (d.isConstant()) {
    int64_t c = d.constant;
    switch (p) {
    case P::eq: return Predicate::constant(c == 0);
    case P::ne: return Predicate::constant(c != 0);
    case P::slt: return Predicate::constant(c < 0);
    case P::sle: return Predicate::constant(c <= 0);
    case P::sgt: return Predicate::constant(c > 0);
    case P::sge: return Predicate::constant(c >= 0);
    default: return std::nullopt;
    }
  }
  // Only d = +-(j - i) + k is a half-plane of the score.
  unsigned row = rank - 2, col = rank - 1;
  for (unsigned l = 0; l < rank; ++l)
    if (l != row && l != col && d.coeff[l] != 0)
      return std::nullopt;
  if (d.coeff[col] != -d.coeff[row] ||
      (d.coeff[col] != 1 && d.coeff[col] != -1))
    return std::nullopt;
  if (d.coeff[col] == -1) {
    // -(j - i) - k P 0  <=>  (j - i) + k swapped(P) 0
    d = d.scaled(-1);
    p = p == P::slt ? P::sgt : p == P::sle ? P::sge : p == P::sgt ? P::slt
        : p == P::sge ? P::sle : p;
  }
  int64_t k = d.constant; // (j - i) + k P 0
  switch (p) {
  case P::sle: return Predicate::halfPlane(-k, false);
  case P::slt: return Predicate::halfPlane(-k - 1, false);
  case P::sgt: return Predicate::halfPlane(-k, true);
  case P::sge: return Predicate::halfPlane(-k - 1, true);
  default: return std::nullopt; // a diagonal is not a half-plane
  }
}

/// Element values of a constant as doubles (dense or a dense resource).
std::optional<SmallVector<double>> valuesOf(Attribute attr) {
  SmallVector<double> values;
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    Type element = dense.getElementType();
    if (isa<FloatType>(element))
      for (const APFloat &v : dense.getValues<APFloat>())
        values.push_back(v.convertToDouble());
    else if (element.isInteger(1))
      for (bool v : dense.getValues<bool>())
        values.push_back(v);
    else
      return std::nullopt;
    return values;
  }
  if (auto resource = dyn_cast<DenseF32ResourceElementsAttr>(attr))
    if (std::optional<ArrayRef<float>> data = resource.tryGetAsArrayRef()) {
      values.assign(data->begin(), data->end());
      return values;
    }
  return std::nullopt;
}

FailureOr<Symbol> Evaluator::constantElement(Attribute attr,
                                             RankedTensorType type,
                                             ArrayRef<Linear> index) {
  Type element = type.getElementType();
  auto fromDouble = [&](double v) -> FailureOr<Symbol> {
    if (element.isInteger(1))
      return Symbol(Predicate::constant(v != 0));
    if (isa<FloatType>(element))
      return Symbol(Real::constant(v));
    return failure();
  };
  if (auto dense = dyn_cast<DenseElementsAttr>(attr); dense && dense.isSplat()) {
    if (auto i = dyn_cast<IntegerType>(element); i && !i.isInteger(1))
      return Symbol(Linear::of(
          rank, dense.getSplatValue<APInt>().getSExtValue()));
    if (element.isInteger(1))
      return Symbol(Predicate::constant(dense.getSplatValue<bool>()));
    if (isa<FloatType>(element))
      return Symbol(
          Real::constant(dense.getSplatValue<APFloat>().convertToDouble()));
    return failure();
  }
  // A [1.., Lq, Lk] constant read at [.., i, j] that is a triangle: one
  // value where j <= i, another above the diagonal (a tril buffer).
  int64_t r = type.getRank();
  if (r < 2 || type.getNumElements() > (int64_t(1) << 26))
    return failure();
  for (int64_t d = 0; d < r - 2; ++d)
    if (type.getDimSize(d) != 1)
      return failure();
  SmallVector<Linear> unit = loops();
  auto same = [](const Linear &a, const Linear &b) {
    return a.coeff == b.coeff && a.constant == b.constant;
  };
  if (!same(index[r - 2], unit[rank - 2]) || !same(index[r - 1], unit[rank - 1]))
    return failure();
  std::optional<SmallVector<double>> values = valuesOf(attr);
  if (!values)
    return failure();
  int64_t rows = type.getDimSize(r - 2), cols = type.getDimSize(r - 1);
  double lower = (*values)[0], upper = cols > 1 ? (*values)[1] : lower;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double v = (*values)[i * cols + j];
      if (!(v == (j <= i ? lower : upper)))
        return failure();
    }
  if (lower == upper)
    return fromDouble(lower);
  Predicate below = Predicate::halfPlane(0, false);
  if (element.isInteger(1))
    return Symbol(lower != 0 ? below : below.negate());
  if (isa<FloatType>(element))
    return Symbol(Real{below, lower, upper});
  return failure();
}

FailureOr<Symbol> Evaluator::element(Value tensor, ArrayRef<Linear> index) {
  auto type = dyn_cast<RankedTensorType>(tensor.getType());
  if (budget-- == 0 || !type || !type.hasStaticShape() ||
      index.size() != size_t(type.getRank()))
    return failure();
  Attribute attr;
  if (matchPattern(tensor, m_Constant(&attr)))
    return constantElement(attr, type, index);
  Operation *def = tensor.getDefiningOp();
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(def))
    return scalar(fill.getInputs()[0], {}, {});
  if (auto expand = dyn_cast_or_null<tensor::ExpandShapeOp>(def)) {
    // Source index of a group: its result indices in row-major order.
    SmallVector<Linear> source;
    for (const ReassociationIndices &group : expand.getReassociationIndices()) {
      Linear sum = Linear::of(rank, 0);
      int64_t stride = 1;
      for (int64_t d : llvm::reverse(group)) {
        sum = sum.plus(index[d].scaled(stride));
        stride *= type.getDimSize(d);
      }
      source.push_back(sum);
    }
    return element(expand.getSrc(), source);
  }
  if (auto collapse = dyn_cast_or_null<tensor::CollapseShapeOp>(def)) {
    // Only groups with one non-unit dimension (no division needed).
    RankedTensorType sourceType = collapse.getSrcType();
    SmallVector<Linear> source;
    for (auto [g, group] : llvm::enumerate(collapse.getReassociationIndices())) {
      unsigned nonUnit = 0;
      for (int64_t d : group) {
        bool unit = sourceType.getDimSize(d) == 1;
        nonUnit += !unit;
        source.push_back(unit ? Linear::of(rank, 0) : index[g]);
      }
      if (nonUnit > 1)
        return failure();
    }
    return element(collapse.getSrc(), source);
  }
  if (auto slice = dyn_cast_or_null<tensor::ExtractSliceOp>(def)) {
    if (!slice.hasUnitStride() || ShapedType::isDynamicShape(slice.getStaticOffsets()))
      return failure();
    llvm::SmallBitVector dropped = slice.getDroppedDims();
    SmallVector<Linear> source;
    unsigned next = 0;
    for (auto [d, offset] : llvm::enumerate(slice.getStaticOffsets()))
      source.push_back(dropped.test(d) ? Linear::of(rank, offset)
                                       : index[next++].plus(
                                             Linear::of(rank, offset)));
    return element(slice.getSource(), source);
  }
  if (auto generic = dyn_cast_or_null<linalg::GenericOp>(def)) {
    if (generic.getNumReductionLoops() != 0)
      return failure();
    unsigned result = cast<OpResult>(tensor).getResultNumber();
    AffineMap out = generic.getIndexingMapMatchingResult(cast<OpResult>(tensor));
    if (!out.isPermutation())
      return failure();
    SmallVector<Linear> loopValues(generic.getNumLoops(), Linear::of(rank, 0));
    for (auto [r, e] : llvm::enumerate(out.getResults()))
      loopValues[cast<AffineDimExpr>(e).getPosition()] = index[r];
    auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
    return scalar(yield.getOperand(result), generic, loopValues);
  }
  // Anything else is opaque: an i1 tensor read by an indexing map.
  if (!type.getElementType().isInteger(1))
    return failure();
  SmallVector<AffineExpr> exprs;
  for (auto [d, l] : llvm::enumerate(index)) {
    if (type.getDimSize(d) == 1) {
      exprs.push_back(getAffineConstantExpr(0, ctx));
      continue;
    }
    auto loop = llvm::find(l.coeff, 1);
    if (l.constant != 0 || loop == l.coeff.end() ||
        llvm::count_if(l.coeff, [](int64_t c) { return c != 0; }) != 1)
      return failure();
    exprs.push_back(getAffineDimExpr(loop - l.coeff.begin(), ctx));
  }
  Predicate read;
  read.kind = Predicate::Kind::Read;
  read.tensor = tensor;
  read.map = AffineMap::get(rank, 0, exprs, ctx);
  return Symbol(read);
}

FailureOr<Symbol> Evaluator::scalar(Value v, linalg::GenericOp op,
                                    ArrayRef<Linear> loops) {
  if (budget-- == 0)
    return failure();
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (!op || arg.getOwner() != op.getBody() ||
        arg.getArgNumber() >= op.getNumDpsInputs())
      return failure();
    OpOperand *input = op.getDpsInputOperand(arg.getArgNumber());
    SmallVector<Linear> index = apply(op.getMatchingIndexingMap(input), loops);
    if (index.size() != op.getMatchingIndexingMap(input).getNumResults())
      return failure();
    return element(input->get(), index);
  }
  Attribute attr;
  if (matchPattern(v, m_Constant(&attr))) {
    if (auto f = dyn_cast<FloatAttr>(attr))
      return Symbol(Real::constant(f.getValueAsDouble()));
    if (auto i = dyn_cast<IntegerAttr>(attr)) {
      if (i.getType().isInteger(1))
        return Symbol(Predicate::constant(i.getValue().getBoolValue()));
      return Symbol(Linear::of(rank, i.getValue().getSExtValue()));
    }
    return failure();
  }
  Operation *def = v.getDefiningOp();
  // Only ops of this generic's body depend on its loops.
  if (!def || !op || def->getBlock() != op.getBody())
    return failure();
  return scalarOp(def, op, loops);
}

FailureOr<Symbol> Evaluator::scalarOp(Operation *def, linalg::GenericOp op,
                                      ArrayRef<Linear> loops) {
  auto operand = [&](unsigned i) { return scalar(def->getOperand(i), op, loops); };
  if (auto index = dyn_cast<linalg::IndexOp>(def))
    return Symbol(loops[index.getDim()]);
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
          arith::ExtUIOp, arith::TruncIOp>(def)) {
    FailureOr<Symbol> in = operand(0);
    if (failed(in) || !std::holds_alternative<Linear>(*in))
      return failure();
    return in;
  }
  if (isa<arith::TruncFOp, arith::ExtFOp>(def)) {
    FailureOr<Symbol> in = operand(0);
    if (failed(in) || !std::holds_alternative<Real>(*in))
      return failure();
    return in;
  }
  if (isa<arith::UIToFPOp, arith::SIToFPOp>(def)) {
    // An i1 as a float: 1 (uitofp) or -1 (sitofp) where it holds.
    FailureOr<Symbol> in = operand(0);
    if (failed(in) || !std::holds_alternative<Predicate>(*in))
      return failure();
    double one = isa<arith::UIToFPOp>(def) ? 1.0 : -1.0;
    return Symbol(Real{std::get<Predicate>(*in), one, 0.0});
  }
  if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(def)) {
    FailureOr<Symbol> a = operand(0), b = operand(1);
    if (failed(a) || failed(b) || !std::holds_alternative<Linear>(*a) ||
        !std::holds_alternative<Linear>(*b))
      return failure();
    const Linear &x = std::get<Linear>(*a), &y = std::get<Linear>(*b);
    if (isa<arith::AddIOp>(def))
      return Symbol(x.plus(y));
    if (isa<arith::SubIOp>(def))
      return Symbol(x.plus(y.scaled(-1)));
    if (y.isConstant())
      return Symbol(x.scaled(y.constant));
    if (x.isConstant())
      return Symbol(y.scaled(x.constant));
    return failure();
  }
  if (auto cmp = dyn_cast<arith::CmpIOp>(def)) {
    FailureOr<Symbol> a = operand(0), b = operand(1);
    if (failed(a) || failed(b) || !std::holds_alternative<Linear>(*a) ||
        !std::holds_alternative<Linear>(*b))
      return failure();
    if (std::optional<Predicate> p = compare(
            cmp.getPredicate(), std::get<Linear>(*a), std::get<Linear>(*b)))
      return Symbol(*p);
    return failure();
  }
  if (isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp>(def)) {
    FailureOr<Symbol> a = operand(0), b = operand(1);
    if (failed(a) || failed(b) || !std::holds_alternative<Predicate>(*a) ||
        !std::holds_alternative<Predicate>(*b))
      return failure();
    Predicate x = std::get<Predicate>(*a), y = std::get<Predicate>(*b);
    std::optional<Predicate> r;
    if (isa<arith::AndIOp>(def)) {
      r = conjunction(x, y);
    } else if (isa<arith::OrIOp>(def)) {
      if (std::optional<Predicate> n = conjunction(x.negate(), y.negate()))
        r = n->negate();
    } else if (y.kind == Predicate::Kind::Constant) {
      r = y.value ? x.negate() : x;
    } else if (x.kind == Predicate::Kind::Constant) {
      r = x.value ? y.negate() : y;
    }
    if (!r)
      return failure();
    return Symbol(*r);
  }
  if (auto select = dyn_cast<arith::SelectOp>(def)) {
    FailureOr<Symbol> c = operand(0), a = operand(1), b = operand(2);
    if (failed(c) || failed(a) || failed(b) ||
        !std::holds_alternative<Predicate>(*c))
      return failure();
    const Predicate &cond = std::get<Predicate>(*c);
    if (cond.kind == Predicate::Kind::Constant)
      return cond.value ? a : b;
    auto *x = std::get_if<Real>(&*a), *y = std::get_if<Real>(&*b);
    if (x && y && x->isConstant() && y->isConstant())
      return Symbol(Real{cond, x->constantValue(), y->constantValue()});
    auto *p = std::get_if<Predicate>(&*a), *q = std::get_if<Predicate>(&*b);
    if (p && q && p->kind == Predicate::Kind::Constant &&
        q->kind == Predicate::Kind::Constant && p->value != q->value)
      return Symbol(p->value ? cond : cond.negate());
    return failure();
  }
  // Float arithmetic and comparisons, one side constant: per branch.
  if (isa<arith::CmpFOp, arith::AddFOp, arith::SubFOp, arith::MulFOp,
          arith::DivFOp>(def)) {
    FailureOr<Symbol> a = operand(0), b = operand(1);
    if (failed(a) || failed(b) || !std::holds_alternative<Real>(*a) ||
        !std::holds_alternative<Real>(*b))
      return failure();
    Real x = std::get<Real>(*a), y = std::get<Real>(*b);
    if (!x.isConstant() && !y.isConstant())
      return failure();
    Predicate cond = x.isConstant() ? y.cond : x.cond;
    auto branch = [&](const Real &r, bool holds) {
      return r.isConstant() ? r.constantValue() : holds ? r.onTrue : r.onFalse;
    };
    auto apply = [&](bool holds) -> double {
      double l = branch(x, holds), r = branch(y, holds);
      if (isa<arith::AddFOp>(def)) return l + r;
      if (isa<arith::SubFOp>(def)) return l - r;
      if (isa<arith::MulFOp>(def)) return l * r;
      if (isa<arith::DivFOp>(def)) return l / r;
      return compareFloats(cast<arith::CmpFOp>(def).getPredicate(), l, r);
    };
    double whenTrue = apply(true), whenFalse = apply(false);
    if (!isa<arith::CmpFOp>(def))
      return Symbol(Real{cond, whenTrue, whenFalse});
    if (whenTrue == whenFalse)
      return Symbol(Predicate::constant(whenTrue != 0));
    return Symbol(whenTrue != 0 ? cond : cond.negate());
  }
  if (isa<arith::NegFOp>(def)) {
    FailureOr<Symbol> a = operand(0);
    if (failed(a) || !std::holds_alternative<Real>(*a))
      return failure();
    Real x = std::get<Real>(*a);
    return Symbol(Real{x.cond, -x.onTrue, -x.onFalse});
  }
  return failure();
}

/// The mask keeping where `keep` holds.
FailureOr<ScoreMask> maskKeeping(const Predicate &keep) {
  ScoreMask mask;
  switch (keep.kind) {
  case Predicate::Kind::Constant:
    // Keeping nothing is not a mask attn-raise expresses.
    if (!keep.value)
      return failure();
    mask.kind = ScoreMask::Kind::All;
    return mask;
  case Predicate::Kind::HalfPlane:
    // Only j <= i is #attn.causal (others stay dense).
    if (keep.bound != 0 || keep.negated)
      return failure();
    mask.kind = ScoreMask::Kind::Causal;
    return mask;
  case Predicate::Kind::Read:
    mask.kind = ScoreMask::Kind::Dense;
    mask.tensor = keep.tensor;
    mask.map = keep.map;
    mask.negated = keep.negated;
    return mask;
  }
  return failure();
}

bool isNegInf(double v) { return std::isinf(v) && v < 0; }

} // namespace

FailureOr<ScoreMask> mlir::attn::additiveMask(Value term, AffineMap map,
                                              unsigned rank) {
  Evaluator eval(rank, term.getContext());
  SmallVector<Linear> index = eval.apply(map, eval.loops());
  if (index.size() != map.getNumResults())
    return failure();
  FailureOr<Symbol> value = eval.element(term, index);
  if (failed(value) || !std::holds_alternative<Real>(*value))
    return failure();
  const Real &r = std::get<Real>(*value);
  if (r.isConstant()) {
    if (r.constantValue() != 0)
      return failure();
    return maskKeeping(Predicate::constant(true));
  }
  if (r.onTrue == 0 && isNegInf(r.onFalse))
    return maskKeeping(r.cond);
  if (isNegInf(r.onTrue) && r.onFalse == 0)
    return maskKeeping(r.cond.negate());
  return failure();
}

FailureOr<ScoreMask> mlir::attn::keptWhere(linalg::GenericOp step,
                                           Value cond, bool keepsWhenTrue) {
  Evaluator eval(step.getNumLoops(), step->getContext());
  FailureOr<Symbol> value = eval.scalar(cond, step, eval.loops());
  if (failed(value) || !std::holds_alternative<Predicate>(*value))
    return failure();
  const Predicate &p = std::get<Predicate>(*value);
  return maskKeeping(keepsWhenTrue ? p : p.negate());
}

std::optional<double> mlir::attn::uniformValue(linalg::GenericOp op,
                                               Value v) {
  Evaluator eval(op.getNumLoops(), op->getContext());
  FailureOr<Symbol> value = eval.scalar(v, op, eval.loops());
  if (failed(value) || !std::holds_alternative<Real>(*value) ||
      !std::get<Real>(*value).isConstant())
    return std::nullopt;
  return std::get<Real>(*value).constantValue();
}
