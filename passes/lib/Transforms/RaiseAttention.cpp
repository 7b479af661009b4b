//===- RaiseAttention.cpp - softmax(Q K^T) V in linalg to attn.attention --===//
//
// Front ends (torch-mlir, StableHLO / TOSA to linalg) emit attention as
//
//   S = contract(Q, K)        over the head dim: linalg.matmul,
//                             batch_matmul or a linalg.generic contraction,
//                             K transposed by the maps or by linalg.transpose
//   S = S * c  |  S / c       scale (any number of such steps)
//   S = S + M                 additive mask / bias (broadcast allowed)
//   S = select(j > i, -inf, S) causal mask from linalg.index comparisons
//   P = softmax(S) over keys  linalg.softmax, or max / exp(x - max) / sum /
//                             div as linalg.generic ops
//   O = contract(P, V)
//
// attn-raise matches that chain backwards from each contraction and
// replaces it by one attn.attention (operands reshaped to [B, H, L, D]).
// Intermediate values must have no other users; anything else is left as
// it was.
//
//===----------------------------------------------------------------------===//
#include "RaiseForms.h"
#include "RaiseScoreMask.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNRAISE
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

using namespace mlir::attn::raise;

namespace {

class Raiser {
public:
  Raiser(RewriterBase &rewriter, llvm::DenseSet<Operation *> &erased)
      : rewriter(rewriter), erased(erased) {}

  /// Raises the attention ending in `pv`, if it is one.
  LogicalResult raise(Operation *pv);

private:
  Value materialize(const Operand &operand, bool unflatten, Location loc);
  Value matchSoftmax(Value p, unsigned scoreUses);
  Value matchRowGuard(Value p, Value &guardedScore);
  Value matchScoreSteps(Value s, AttentionMatch &m);
  bool matchQueryKey(Value s, AttentionMatch &m);
  Value toAttentionLayout(Value x, int64_t batchDims);
  Value scoreOperand(const AttentionMatch::Broadcast &operand,
                     ArrayRef<ReassociationIndices> scoreGroups, Location loc,
                     bool isBias);

  /// Records a matched op, and the fill / empty ops of its init.
  void visit(Operation *op);
  /// Erases the recorded ops left without users.
  void eraseDeadChain();

  RewriterBase &rewriter;
  /// Every op this raiser erased (the pass skips them).
  llvm::DenseSet<Operation *> &erased;
  llvm::SetVector<Operation *> chain;
};

void Raiser::visit(Operation *op) {
  if (!op)
    return;
  chain.insert(op);
  if (auto dps = dyn_cast<DestinationStyleOpInterface>(op))
    for (Value init : dps.getDpsInits())
      if (Operation *def = init.getDefiningOp()) {
        chain.insert(def);
        if (auto fill = dyn_cast<linalg::FillOp>(def))
          if (Operation *empty = fill.getOutputs()[0].getDefiningOp())
            chain.insert(empty);
      }
}

void Raiser::eraseDeadChain() {
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation *op : llvm::make_early_inc_range(chain))
      if (op->use_empty()) {
        // Ops of its body (score steps read inside a generic) go with it:
        // they must leave the chain before they are freed.
        op->walk([&](Operation *nested) {
          chain.remove(nested);
          erased.insert(nested);
        });
        rewriter.eraseOp(op);
        changed = true;
        break; // the iteration range may have lost later entries
      }
  }
}

/// The score S of P = softmax(S) over the last dimension, or null.
Value Raiser::matchSoftmax(Value p, unsigned scoreUses) {
  if (auto softmax = p.getDefiningOp<linalg::SoftmaxOp>()) {
    auto type = cast<RankedTensorType>(softmax.getInput().getType());
    if (!p.hasOneUse() || scoreUses != 2 ||
        !softmax.getInput().hasOneUse() ||
        int64_t(softmax.getDimension()) != type.getRank() - 1)
      return {};
    visit(softmax);
    return softmax.getInput();
  }
  // P = e / sum (or e * (1 / sum), as TOSA writes it), sum = reduce_add(e),
  // e = exp(S - max), max = reduce_max(S); the reductions may keep a unit
  // dimension (expand_shape) and be linalg.reduce ops.
  auto div = dyn_cast_or_null<linalg::GenericOp>(producer(p).getOperation());
  if (!div || div.getNumDpsInputs() != 2 || scoreInputIndex(div) != 0)
    return {};
  Value e = div.getDpsInputs()[0], sum = div.getDpsInputs()[1];
  if (yieldsOf<arith::MulFOp>(div, 0, 1) || yieldsOf<arith::MulFOp>(div, 1, 0)) {
    auto reciprocal = sum.getDefiningOp<linalg::GenericOp>();
    auto one = reciprocal && reciprocal.getNumDpsInputs() == 1 &&
                       allParallel(reciprocal) && sum.hasOneUse()
                   ? dyn_cast_or_null<arith::DivFOp>(yieldedOp(reciprocal))
                   : nullptr;
    std::optional<double> numerator =
        one ? constantIn(reciprocal, one.getLhs()) : std::nullopt;
    if (!numerator || *numerator != 1.0 ||
        one.getRhs() != reciprocal.getBlock()->getArgument(0))
      return {};
    visit(reciprocal);
    sum = reciprocal.getDpsInputs()[0];
  } else if (!yieldsOf<arith::DivFOp>(div, 0, 1)) {
    return {};
  }
  // e feeds the division and the sum.
  if (!llvm::hasNItems(e.getUses(), 2) || !sum.hasOneUse())
    return {};
  if (Value unexpanded = throughUnitExpand(sum); unexpanded != sum) {
    visit(sum.getDefiningOp());
    sum = unexpanded;
  }
  linalg::LinalgOp sumOp = lastDimReduction<arith::AddFOp>(sum);
  if (!sumOp || !sum.hasOneUse() || sumOp.getDpsInputs()[0] != e)
    return {};
  auto expOp = e.getDefiningOp<linalg::GenericOp>();
  if (!expOp || !allParallel(expOp))
    return {};
  Value s, max;
  Operation *body = yieldedOp(expOp);
  if (auto exp = dyn_cast_or_null<math::ExpOp>(body)) {
    auto sub = exp.getOperand().getDefiningOp<arith::SubFOp>();
    if (sub && expOp.getNumDpsInputs() == 2 && scoreInputIndex(expOp) == 0 &&
        sub.getLhs() == expOp.getBody()->getArgument(0) &&
        sub.getRhs() == expOp.getBody()->getArgument(1)) {
      s = expOp.getDpsInputs()[0];
      max = expOp.getDpsInputs()[1];
    } else if (expOp.getNumDpsInputs() == 1 &&
               exp.getOperand() == expOp.getBody()->getArgument(0)) {
      // exp and the subtraction as two generics.
      auto subOp = producer(expOp.getDpsInputs()[0]);
      auto subGeneric = dyn_cast_or_null<linalg::GenericOp>(
          subOp ? subOp.getOperation() : nullptr);
      if (!subGeneric || subGeneric.getNumDpsInputs() != 2 ||
          scoreInputIndex(subGeneric) != 0 ||
          !isa_and_nonnull<arith::SubFOp>(yieldedOp(subGeneric)))
        return {};
      s = subGeneric.getDpsInputs()[0];
      max = subGeneric.getDpsInputs()[1];
    }
  }
  if (!s || !max || !max.hasOneUse())
    return {};
  Value maxSource = throughUnitExpand(max);
  if (maxSource != max)
    visit(max.getDefiningOp());
  max = maxSource;
  linalg::LinalgOp maxOp =
      lastDimReduction<arith::MaximumFOp, arith::MaxNumFOp>(max);
  if (!maxOp || !max.hasOneUse() || maxOp.getDpsInputs()[0] != s)
    return {};
  // Both reductions run over the last dimension of S (their last loop).
  unsigned last = cast<RankedTensorType>(s.getType()).getRank() - 1;
  for (linalg::LinalgOp reduction : {maxOp, sumOp})
    if (reduction.getNumLoops() != last + 1)
      return {};
  // S feeds the max and the exponent (and a row guard): `scoreUses` uses.
  if (!llvm::hasNItems(s.getUses(), scoreUses))
    return {};
  for (Operation *op : {div.getOperation(), sumOp.getOperation(),
                        expOp.getOperation(), maxOp.getOperation(),
                        expOp.getDpsInputs()[0].getDefiningOp()})
    visit(op);
  return s;
}

/// torch-mlir's guard after the softmax: P' = select(all_j(S == -inf), 0,
/// P) per row, which is what attn.attention does for rows that keep
/// nothing. Returns P and sets `guardedScore` to S, or null.
Value Raiser::matchRowGuard(Value p, Value &guardedScore) {
  auto guard = dyn_cast_or_null<linalg::GenericOp>(producer(p).getOperation());
  if (!guard || guard.getNumDpsInputs() != 3 || !allParallel(guard))
    return {};
  auto select = dyn_cast_or_null<arith::SelectOp>(yieldedOp(guard));
  Block *body = guard.getBody();
  if (!select || select.getCondition() != body->getArgument(0) ||
      select.getTrueValue() != body->getArgument(1) ||
      select.getFalseValue() != body->getArgument(2) ||
      !guard.getMatchingIndexingMap(guard.getDpsInputOperand(2)).isIdentity())
    return {};
  // The true value: zeros.
  DenseElementsAttr zeros;
  if (!matchPattern(guard.getDpsInputs()[1], m_Constant(&zeros)) ||
      !zeros.isSplat() || !zeros.getSplatValue<APFloat>().isZero())
    return {};
  // The flag: an and-reduction over the last dimension of S == -inf.
  Value flag = guard.getDpsInputs()[0];
  auto all = flag.getDefiningOp<linalg::GenericOp>();
  if (!all || !flag.hasOneUse() || all.getNumDpsInputs() != 1 ||
      all.getNumReductionLoops() != 1 ||
      !isa_and_nonnull<arith::AndIOp>(yieldedOp(all)))
    return {};
  Value isNegInf = all.getDpsInputs()[0];
  auto compare = isNegInf.getDefiningOp<linalg::GenericOp>();
  if (!compare || !isNegInf.hasOneUse() || compare.getNumDpsInputs() != 1 ||
      scoreInputIndex(compare) != 0)
    return {};
  auto cmp = dyn_cast_or_null<arith::CmpFOp>(yieldedOp(compare));
  if (!cmp || cmp.getPredicate() != arith::CmpFPredicate::OEQ)
    return {};
  Value lhs = cmp.getLhs();
  if (auto ext = lhs.getDefiningOp<arith::ExtFOp>())
    lhs = ext.getIn();
  std::optional<double> bound = constantOf(cmp.getRhs());
  if (lhs != compare.getBody()->getArgument(0) || !bound ||
      !std::isinf(*bound) || *bound > 0)
    return {};
  for (Operation *op : {guard.getOperation(), all.getOperation(),
                        compare.getOperation()})
    visit(op);
  guardedScore = compare.getDpsInputs()[0];
  return guard.getDpsInputs()[2];
}

bool isNegInf(std::optional<double> v) { return v && std::isinf(*v) && *v < 0; }

RankedTensorType scoreTypeOf(linalg::GenericOp step) {
  return cast<RankedTensorType>(step->getResult(0).getType());
}

/// Adds what a mask step keeps to the match; false when it cannot be
/// expressed (a second dense mask).
bool addMask(const ScoreMask &mask, linalg::GenericOp step,
             AttentionMatch &m) {
  switch (mask.kind) {
  case ScoreMask::Kind::All:
    return true;
  case ScoreMask::Kind::Causal:
    m.causal = true;
    return true;
  case ScoreMask::Kind::Dense:
    if (m.mask.source)
      return false;
    m.mask = {mask.tensor, mask.map, scoreTypeOf(step), mask.negated};
    return true;
  }
  return false;
}

/// Walks scale, bias and causal steps back from the score; returns the
/// contraction's result Q K^T.
Value Raiser::matchScoreSteps(Value s, AttentionMatch &m) {
  unsigned rank = cast<RankedTensorType>(s.getType()).getRank();
  while (auto op = s.getDefiningOp<linalg::GenericOp>()) {
    int scoreIndex = scoreInputIndex(op);
    Operation *body = yieldedOp(op);
    // The step's input must feed nothing else (the softmax input itself may
    // have two uses in the decomposed form: checked by matchSoftmax).
    if (scoreIndex < 0 || !body ||
        !op.getDpsInputs()[scoreIndex].hasOneUse())
      break;
    Block *block = op.getBody();
    Value x = block->getArgument(scoreIndex);
    // Operands of the body other than x: a constant or the second input.
    auto other = [&](Operation *bin) -> Value {
      return bin->getOperand(0) == x ? bin->getOperand(1) : bin->getOperand(0);
    };
    std::optional<double> c;
    if (isa<arith::MulFOp, arith::DivFOp>(body) &&
        llvm::is_contained(body->getOperands(), x) &&
        (c = constantIn(op, other(body)))) {
      bool divides = isa<arith::DivFOp>(body);
      // A positive factor keeps -inf (masked scores) at -inf.
      if (!c || (divides && body->getOperand(0) != x) || *c <= 0)
        break;
      m.scale *= divides ? 1.0 / *c : *c;
      m.scaled = true;
    } else if (isa<arith::AddFOp>(body) && op.getNumDpsInputs() == 2) {
      // S + M, M broadcast by its indexing map: a mask when M only holds 0
      // and -inf, a bias otherwise.
      OpOperand *term = op.getDpsInputOperand(1 - scoreIndex);
      AffineMap map = op.getMatchingIndexingMap(term);
      if (other(body) != block->getArgument(1 - scoreIndex) ||
          !map.isProjectedPermutation(/*allowZeroInResults=*/true))
        break;
      if (FailureOr<ScoreMask> mask = additiveMask(term->get(), map, rank);
          succeeded(mask)) {
        if (!addMask(*mask, op, m))
          break;
      } else if (!m.bias.source && !m.scaled) {
        // Scaling after the addition would scale M too, which
        // attn.attention does not: stop there.
        m.bias = {term->get(), map, scoreTypeOf(op)};
      } else {
        break;
      }
    } else if (auto select = dyn_cast<arith::SelectOp>(body)) {
      // select(c, x, -inf) keeps where c holds, select(c, -inf, x) where it
      // does not (masked_fill).
      bool keepsWhenTrue = select.getTrueValue() == x;
      Value filler =
          keepsWhenTrue ? select.getFalseValue() : select.getTrueValue();
      if ((select.getFalseValue() == x) == keepsWhenTrue ||
          !isNegInf(uniformValue(op, filler)))
        break;
      FailureOr<ScoreMask> mask =
          keptWhere(op, select.getCondition(), keepsWhenTrue);
      if (failed(mask) || !addMask(*mask, op, m))
        break;
    } else {
      break;
    }
    visit(op);
    s = op.getDpsInputs()[scoreIndex];
  }
  return s;
}

/// S = contract(Q, K) over the head dim.
bool Raiser::matchQueryKey(Value s, AttentionMatch &m) {
  std::optional<Contraction> qk = asContraction(s.getDefiningOp());
  if (!qk)
    return false;
  const linalg::ContractionDimensions &d = qk->dims;
  SmallVector<unsigned> qDims = loopDims(d.batch, d.m[0], d.k[0]),
                        kDims = loopDims(d.batch, d.n[0], d.k[0]),
                        // The output must be [batch..., i, j] in loop order.
                        outDims = loopDims(d.batch, d.m[0], d.n[0]);
  AffineMap out = qk->op.getIndexingMapsArray().back();
  for (auto [r, loop] : llvm::enumerate(outDims))
    if (out.getResult(r) != rewriter.getAffineDimExpr(loop))
      return false;
  std::optional<Operand> query =
                             operandIn(*qk, 0, qDims, &m.scale, m.lookedThrough),
                         key = operandIn(*qk, 1, kDims, &m.scale, m.lookedThrough);
  if (!query || !key)
    return false;
  m.query = *query;
  m.key = *key;
  visit(qk->op);
  return true;
}

Value Raiser::materialize(const Operand &operand, bool unflatten,
                          Location loc) {
  Value source = operand.source;
  SmallVector<int64_t> permutation = operand.permutation;
  if (unflatten && !permutation.empty()) {
    // The [B*H, ..] permutation on [B, H, ..].
    permutation = {0, 1};
    for (int64_t p : ArrayRef(operand.permutation).drop_front())
      permutation.push_back(p + 1);
  }
  if (!operand.collapse.empty() && !unflatten)
    source = tensor::CollapseShapeOp::create(rewriter, loc, source,
                                             operand.collapse);
  if (permutation.empty())
    return source;
  auto type = cast<RankedTensorType>(source.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : permutation)
    shape.push_back(type.getDimSize(p));
  Value init =
      tensor::EmptyOp::create(rewriter, loc, shape, type.getElementType());
  return linalg::TransposeOp::create(rewriter, loc, source, init, permutation)
      .getResult()[0];
}

/// torch-mlir runs Q K^T and P V as batch_matmuls on [B*H, L, D] views of
/// [B, H, L, D] tensors. When every operand was read through that view
/// (and the masks were added on [B, H, L, L]), attention runs on the 4-D
/// tensors themselves: the operands stay the function's own and grouped
/// K / V heads keep their batch.
bool unflattensBatch(const AttentionMatch &m, int64_t batchDims) {
  SmallVector<ReassociationIndices> view = {{0, 1}, {2}, {3}};
  if (batchDims != 1 ||
      ((m.bias.source || m.mask.source) && m.scoreGroups != view))
    return false;
  std::optional<int64_t> batch;
  for (const Operand *o : {&m.query, &m.key, &m.value}) {
    if (o->collapse != view ||
        (!o->permutation.empty() && o->permutation.front() != 0))
      return false;
    int64_t b = cast<RankedTensorType>(o->source.getType()).getDimSize(0);
    if (batch && *batch != b)
      return false;
    batch = b;
  }
  return true;
}

/// [batch..., L, D] as [B, H, L, D]: 2-D gets [1, 1], 3-D gets [1, N].
Value Raiser::toAttentionLayout(Value x, int64_t batchDims) {
  auto type = cast<RankedTensorType>(x.getType());
  if (batchDims == 2)
    return x;
  SmallVector<int64_t> shape(2 - batchDims, 1);
  llvm::append_range(shape, type.getShape());
  SmallVector<ReassociationIndices> groups =
      batchDims == 0 ? SmallVector<ReassociationIndices>{{0, 1, 2}, {3}}
                     : SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}};
  return tensor::ExpandShapeOp::create(
      rewriter, x.getLoc(), RankedTensorType::get(shape, type.getElementType()),
      x, groups);
}

/// A bias or mask as attn.attention takes it: [B|1, H|1, Lq, Lk], size 1
/// where the source does not vary (an [L, L] mask is not copied per batch
/// and head; a bias that does not vary with the query, like a padding mask
/// [B, 1, 1, Lk], stays per key), negated for a mask that keeps where
/// false, and folded like the scores.
Value Raiser::scoreOperand(const AttentionMatch::Broadcast &operand,
                           ArrayRef<ReassociationIndices> scoreGroups,
                           Location loc, bool isBias) {
  Value result = operand.source;
  if (!result)
    return {};
  // Batch loops the map does not read stay 1; with folded scores, only
  // whole groups can (a [B, 1] -> [B] fold is not [B*H] or 1).
  SmallVector<int64_t> shape(operand.scoreType.getShape());
  unsigned rank = shape.size();
  SmallVector<bool> reduced(rank, false);
  for (unsigned d = 0; d + 2 < rank; ++d)
    reduced[d] = !operand.map.isFunctionOfDim(d);
  if (isBias)
    reduced[rank - 2] = !operand.map.isFunctionOfDim(rank - 2);
  for (const ReassociationIndices &group : scoreGroups)
    if (!llvm::all_of(group, [&](int64_t d) { return reduced[d]; }))
      for (int64_t d : group)
        reduced[d] = false;
  for (unsigned d = 0; d < rank; ++d)
    if (reduced[d])
      shape[d] = 1;
  if (!operand.map.isIdentity() || operand.negated) {
    Type element = getElementTypeOrSelf(result.getType());
    Value init = tensor::EmptyOp::create(rewriter, loc, shape, element);
    bool negate = operand.negated;
    result = linalg::GenericOp::create(
                 rewriter, loc, init.getType(), result, init,
                 ArrayRef<AffineMap>{operand.map,
                                     rewriter.getMultiDimIdentityMap(rank)},
                 SmallVector<utils::IteratorType>(
                     rank, utils::IteratorType::parallel),
                 [negate](OpBuilder &b, Location l, ValueRange a) {
                   Value x = a[0];
                   if (negate)
                     x = arith::XOrIOp::create(
                         b, l, x, arith::ConstantIntOp::create(b, l, 1, 1));
                   linalg::YieldOp::create(b, l, x);
                 })
                 .getResult(0);
  }
  if (!scoreGroups.empty())
    result =
        tensor::CollapseShapeOp::create(rewriter, loc, result, scoreGroups);
  return result;
}

LogicalResult Raiser::raise(Operation *root) {
  std::optional<Contraction> pv = asContraction(root);
  if (!pv || pv->dims.batch.size() > 2)
    return failure();
  AttentionMatch m;
  Value p = pv->op.getDpsInputs()[0];
  // torch-mlir computes the softmax on [B, H, L, L] and P V on [B*H, L, L].
  if (auto [source, groups] = throughBatchReshape(p); source && p.hasOneUse()) {
    visit(p.getDefiningOp());
    p = source;
  }
  Value guardedScore;
  if (Value unguarded = matchRowGuard(p, guardedScore))
    p = unguarded;
  Value s = matchSoftmax(p, guardedScore ? 3 : 2);
  if (!s || (guardedScore && guardedScore != s))
    return failure();
  // P [batch..., i, j] x V [batch..., j, d] -> O [batch..., i, d].
  const linalg::ContractionDimensions &d = pv->dims;
  SmallVector<unsigned> pDims = loopDims(d.batch, d.m[0], d.k[0]),
                        vDims = loopDims(d.batch, d.k[0], d.n[0]),
                        oDims = loopDims(d.batch, d.m[0], d.n[0]);
  AffineMap out = pv->op.getIndexingMapsArray().back();
  AffineMap pMap =
      pv->op.getMatchingIndexingMap(pv->op.getDpsInputOperand(0));
  for (auto [r, loop] : llvm::enumerate(oDims))
    if (out.getResult(r) != rewriter.getAffineDimExpr(loop))
      return failure();
  for (auto [r, loop] : llvm::enumerate(pDims))
    if (pMap.getResult(r) != rewriter.getAffineDimExpr(loop))
      return failure();
  Value qkScores = matchScoreSteps(s, m);
  // Uses of the softmax input itself were checked by matchSoftmax; any
  // value before it must feed only the next step.
  auto onlyFeedsChain = [&](Value v) { return v == s || v.hasOneUse(); };
  if (auto [source, groups] = throughBatchReshape(qkScores);
      source && onlyFeedsChain(qkScores) && source.hasOneUse() &&
      qkScores.getDefiningOp<tensor::ExpandShapeOp>()) {
    visit(qkScores.getDefiningOp());
    m.scoreGroups = groups;
    qkScores = source;
  } else if (!onlyFeedsChain(qkScores)) {
    return failure();
  }
  if (!matchQueryKey(qkScores, m))
    return failure();
  std::optional<Operand> value =
      operandIn(*pv, 1, vDims, /*scale=*/nullptr, m.lookedThrough);
  if (!value)
    return failure();
  m.value = *value;
  auto elementType = [](const Operand &o) {
    return cast<RankedTensorType>(o.source.getType()).getElementType();
  };
  if (!elementType(m.query).isF32() || !elementType(m.key).isF32() ||
      !elementType(m.value).isF32() ||
      (m.bias.source && !cast<RankedTensorType>(m.bias.source.getType())
                              .getElementType()
                              .isF32()))
    return failure();

  // Temporaries (a transposed operand, a broadcast bias or mask) are built
  // with static shapes only.
  auto staticTemporaries = [&] {
    for (const Operand *o : {&m.query, &m.key, &m.value})
      if (!o->permutation.empty() &&
          !cast<RankedTensorType>(o->source.getType()).hasStaticShape())
        return false;
    for (const AttentionMatch::Broadcast *b : {&m.bias, &m.mask})
      if (b->source && (!b->map.isIdentity() || b->negated) &&
          !b->scoreType.hasStaticShape())
        return false;
    return true;
  };
  if (!staticTemporaries())
    return failure();

  // Matched: build.
  rewriter.setInsertionPoint(root);
  int64_t batchDims = pv->dims.batch.size();
  bool unflatten = unflattensBatch(m, batchDims);
  if (unflatten) {
    batchDims = 2;
    m.scoreGroups.clear();
  }
  Location loc = root->getLoc();
  Value query = materialize(m.query, unflatten, loc),
        key = materialize(m.key, unflatten, loc);
  Value bias = scoreOperand(m.bias, m.scoreGroups, loc, /*isBias=*/true),
        mask = scoreOperand(m.mask, m.scoreGroups, loc, /*isBias=*/false);
  for (Operation *op : m.lookedThrough)
    visit(op);
  Value q = toAttentionLayout(query, batchDims),
        k = toAttentionLayout(key, batchDims),
        v = toAttentionLayout(materialize(m.value, unflatten, loc), batchDims);
  if (bias)
    bias = toAttentionLayout(bias, batchDims);
  if (mask)
    mask = toAttentionLayout(mask, batchDims);
  auto qType = cast<RankedTensorType>(q.getType());
  auto resultType = RankedTensorType::get(
      {qType.getDimSize(0), qType.getDimSize(1), qType.getDimSize(2),
       cast<RankedTensorType>(v.getType()).getDimSize(3)},
      qType.getElementType());
  auto attention = AttentionOp::create(
      rewriter, loc, resultType, /*lse=*/Type(), q, k, v, mask, bias, Value(),
      Value(), Value(),
      m.causal ? cast<MaskAttrInterface>(CausalAttr::get(rewriter.getContext()))
               : MaskAttrInterface(),
      rewriter.getF32FloatAttr(float(m.scale)), AlignmentAttr(), ArrayAttr(),
      IntegerAttr(), IntegerAttr());
  Value result = attention.getOutput();
  auto rootType = cast<RankedTensorType>(root->getResult(0).getType());
  if (unflatten)
    result = tensor::CollapseShapeOp::create(
        rewriter, loc, rootType, result,
        SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
  else if (batchDims != 2)
    result = tensor::CollapseShapeOp::create(
        rewriter, loc, rootType, result,
        batchDims == 0 ? SmallVector<ReassociationIndices>{{0, 1, 2}, {3}}
                       : SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
  visit(root); // for its init
  chain.remove(root);
  erased.insert(root);
  rewriter.replaceOp(root, result);
  eraseDeadChain();
  return success();
}

struct AttnRaisePass : attn::impl::AttnRaiseBase<AttnRaisePass> {
  void runOnOperation() override {
    SmallVector<Operation *> candidates;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (asContraction(op))
        candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    llvm::DenseSet<Operation *> erased;
    // Later contractions first: P V ends the chain Q K^T starts.
    for (Operation *op : llvm::reverse(candidates))
      if (!erased.contains(op))
        (void)Raiser(rewriter, erased).raise(op);
  }
};

} // namespace
