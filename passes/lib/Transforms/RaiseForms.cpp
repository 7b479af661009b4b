//===- RaiseForms.cpp - readers of the linalg forms attn-raise matches ----===//
#include "RaiseForms.h"
#include "RaiseScoreMask.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace mlir::attn::raise {

linalg::LinalgOp producer(Value v) {
  auto op = v.getDefiningOp<linalg::LinalgOp>();
  if (!op || op->getNumResults() != 1 || !v.hasOneUse())
    return {};
  return op;
}

std::optional<double> constantOf(Value v) {
  while (isa_and_nonnull<arith::TruncFOp, arith::ExtFOp>(v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  FloatAttr attr;
  if (matchPattern(v, m_Constant(&attr)))
    return attr.getValueAsDouble();
  return std::nullopt;
}

std::optional<double> constantIn(linalg::LinalgOp op, Value v) {
  if (std::optional<double> c = constantOf(v))
    return c;
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
    return uniformValue(generic, v);
  return std::nullopt;
}

Operation *yieldedOp(linalg::LinalgOp op) {
  for (OpResult extra : op->getResults().drop_front())
    if (!extra.use_empty())
      return nullptr;
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  return yield.getOperand(0).getDefiningOp();
}

std::pair<Value, SmallVector<ReassociationIndices>>
throughBatchReshape(Value v) {
  auto leadingOnly = [](ArrayRef<ReassociationIndices> groups) {
    return groups.size() >= 2 && groups[groups.size() - 1].size() == 1 &&
           groups[groups.size() - 2].size() == 1;
  };
  if (auto expand = v.getDefiningOp<tensor::ExpandShapeOp>())
    if (leadingOnly(expand.getReassociationIndices()))
      return {expand.getSrc(), expand.getReassociationIndices()};
  if (auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>())
    if (leadingOnly(collapse.getReassociationIndices()))
      return {collapse.getSrc(), collapse.getReassociationIndices()};
  return {Value(), {}};
}

Value throughUnitExpand(Value v) {
  if (auto expand = v.getDefiningOp<tensor::ExpandShapeOp>())
    if (v.hasOneUse() &&
        llvm::all_of(expand.getResultType().getShape().drop_front(
                         expand.getSrcType().getRank()),
                     [](int64_t d) { return d == 1; }))
      return expand.getSrc();
  return v;
}

bool allParallel(linalg::LinalgOp op) { return op.getNumReductionLoops() == 0; }

int scoreInputIndex(linalg::GenericOp op) {
  if (!allParallel(op) || op.getNumDpsInits() != 1 ||
      !op.getIndexingMapsArray().back().isIdentity())
    return -1;
  for (OpOperand *in : op.getDpsInputOperands())
    if (op.getMatchingIndexingMap(in).isIdentity())
      return in->getOperandNumber();
  return -1;
}

std::optional<Contraction> asContraction(Operation *op) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  if (!linalgOp || linalgOp.getNumDpsInputs() != 2 ||
      linalgOp.getNumDpsInits() != 1 || !linalgOp.hasPureTensorSemantics() ||
      !linalg::isaContractionOpInterface(linalgOp))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(linalgOp);
  if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 ||
      dims->k.size() != 1)
    return std::nullopt;
  // The init must be zero: a fill of 0.
  auto fill = linalgOp.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  std::optional<double> init =
      fill ? constantOf(fill.getInputs()[0]) : std::nullopt;
  if (!init || *init != 0.0)
    return std::nullopt;
  return Contraction{linalgOp, *dims};
}

SmallVector<unsigned> loopDims(ArrayRef<unsigned> batch, unsigned a,
                               unsigned b) {
  SmallVector<unsigned> dims(batch.begin(), batch.end());
  dims.append({a, b});
  return dims;
}

std::optional<std::pair<double, Value>> scaleStep(Value v) {
  auto op = v.getDefiningOp<linalg::GenericOp>();
  if (!op || !v.hasOneUse() || op->getNumResults() != 1 ||
      op.getNumDpsInputs() > 2 || scoreInputIndex(op) != 0)
    return std::nullopt;
  Operation *body = yieldedOp(op);
  Value x = op.getBody()->getArgument(0);
  if (!isa_and_nonnull<arith::MulFOp, arith::DivFOp>(body) ||
      !llvm::is_contained(body->getOperands(), x))
    return std::nullopt;
  bool divides = isa<arith::DivFOp>(body);
  Value other =
      body->getOperand(0) == x ? body->getOperand(1) : body->getOperand(0);
  std::optional<double> c = constantIn(op, other);
  if (!c || *c <= 0 || (divides && body->getOperand(0) != x))
    return std::nullopt;
  return std::make_pair(divides ? 1.0 / *c : *c, op.getDpsInputs()[0]);
}

std::optional<HeadRepeat> throughHeadRepeat(Value v) {
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || !v.hasOneUse())
    return std::nullopt;
  auto copy = collapse.getSrc().getDefiningOp<linalg::GenericOp>();
  if (!copy || !collapse.getSrc().hasOneUse() || copy.getNumDpsInputs() != 1 ||
      copy.getNumDpsInits() != 1 || !allParallel(copy))
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(copy.getBody()->getTerminator());
  if (yield.getOperand(0) != copy.getBody()->getArgument(0) ||
      !copy.getIndexingMapsArray().back().isIdentity())
    return std::nullopt;
  // The input map drops exactly the repeat dim r = rank - 3.
  unsigned rank = copy.getNumLoops();
  if (rank < 4)
    return std::nullopt;
  unsigned repeat = rank - 3;
  AffineMap in = copy.getIndexingMapsArray().front();
  SmallVector<AffineExpr> kept;
  for (unsigned d = 0; d < rank; ++d)
    if (d != repeat)
      kept.push_back(getAffineDimExpr(d, v.getContext()));
  if (in != AffineMap::get(rank, 0, kept, v.getContext()))
    return std::nullopt;
  // r must be the last of a group that merges it into the dim before; L
  // and D stay as they are.
  SmallVector<ReassociationIndices> groups;
  // A copy: getReassociationIndices() returns a temporary.
  SmallVector<ReassociationIndices> original =
      collapse.getReassociationIndices();
  if (original.size() < 3 || original.back().size() != 1 ||
      original[original.size() - 2].size() != 1)
    return std::nullopt;
  bool merged = false;
  for (const ReassociationIndices &group : collapse.getReassociationIndices()) {
    ReassociationIndices reduced;
    for (int64_t d : group)
      if (d != int64_t(repeat))
        reduced.push_back(d > int64_t(repeat) ? d - 1 : d);
    if (llvm::is_contained(group, int64_t(repeat)))
      merged = group.size() >= 2 && group.back() == int64_t(repeat);
    groups.push_back(reduced);
  }
  if (!merged)
    return std::nullopt;
  if (llvm::all_of(groups,
                   [](const ReassociationIndices &g) { return g.size() == 1; }))
    groups.clear();
  return HeadRepeat{copy.getDpsInputs()[0], groups, {collapse, copy}};
}

bool swapsLastTwo(ArrayRef<int64_t> p) {
  int64_t n = p.size();
  return n >= 2 && p[n - 1] == n - 2 && p[n - 2] == n - 1 &&
         llvm::equal(p.drop_back(2), llvm::seq<int64_t>(0, n - 2));
}

std::optional<Operand> operandIn(Contraction &c, unsigned input,
                                 ArrayRef<unsigned> wantedDims, double *scale,
                                 SmallVector<Operation *> &lookedThrough) {
  AffineMap map = c.op.getMatchingIndexingMap(c.op.getDpsInputOperand(input));
  if (!map.isProjectedPermutation() || map.getNumResults() != wantedDims.size())
    return std::nullopt;
  // permutation[r] = operand dimension holding wanted loop r.
  SmallVector<int64_t> permutation;
  for (unsigned loop : wantedDims) {
    std::optional<unsigned> pos =
        map.getResultPosition(getAffineDimExpr(loop, c.op->getContext()));
    if (!pos)
      return std::nullopt;
    permutation.push_back(*pos);
  }
  bool identity =
      llvm::equal(permutation, llvm::seq<int64_t>(0, permutation.size()));
  Value operand = c.op.getDpsInputs()[input];
  Operand result{operand, identity ? SmallVector<int64_t>() : permutation};
  Value inner = operand;
  SmallVector<Operation *> passed;
  if (std::optional<HeadRepeat> repeat = throughHeadRepeat(operand)) {
    inner = repeat->source;
    result.collapse = repeat->collapse;
    llvm::append_range(passed, repeat->ops);
  } else if (operand.getDefiningOp<tensor::CollapseShapeOp>() &&
             operand.hasOneUse())
    if (auto [source, groups] = throughBatchReshape(operand); source) {
      passed.push_back(operand.getDefiningOp());
      inner = source;
      result.collapse = groups;
    }
  while (scale)
    if (std::optional<std::pair<double, Value>> step = scaleStep(inner)) {
      *scale *= step->first;
      passed.push_back(inner.getDefiningOp());
      inner = step->second;
    } else {
      break;
    }
  if (auto transpose = inner.getDefiningOp<linalg::TransposeOp>();
      transpose && !identity) {
    // transpose: result dim d = input dim perm[d].
    ArrayRef<int64_t> perm = transpose.getPermutation();
    bool undoes;
    if (result.collapse.empty()) {
      SmallVector<int64_t> composed;
      for (int64_t p : permutation)
        composed.push_back(perm[p]);
      undoes = llvm::equal(composed, llvm::seq<int64_t>(0, composed.size()));
    } else {
      undoes = swapsLastTwo(perm) && swapsLastTwo(permutation);
    }
    if (undoes) {
      passed.push_back(transpose);
      inner = transpose.getInput();
      result.permutation.clear();
    }
  }
  // A head repeat under the transpose keeps the rank: nothing to collapse.
  if (std::optional<HeadRepeat> repeat = throughHeadRepeat(inner);
      repeat && repeat->collapse.empty()) {
    inner = repeat->source;
    llvm::append_range(passed, repeat->ops);
  }
  if (passed.size() == (result.collapse.empty() ? 0u : 1u)) {
    // Only a collapse passed: keep the operand as it is.
    result.collapse.clear();
    return result;
  }
  result.source = inner;
  llvm::append_range(lookedThrough, passed);
  return result;
}

} // namespace mlir::attn::raise
