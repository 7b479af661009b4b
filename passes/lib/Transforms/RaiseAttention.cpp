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
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"
#include "RaiseScoreMask.h"
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

namespace {

/// An operand as the attention op needs it: `source` permuted by
/// `permutation` (result dim r = source dim permutation[r]; empty: as is).
struct Operand {
  Value source;
  SmallVector<int64_t> permutation;
  /// When set, `source` is collapsed with these groups first (what was
  /// looked through sat under a batch reshape).
  SmallVector<ReassociationIndices> collapse;
};

/// What the match found. Nothing is created until all of it matched.
struct AttentionMatch {
  Operand query, key, value; // [batch..., L, D]
  /// An additive bias and an i1 mask (keeps where true), each read from
  /// the score type where it was met by an indexing map.
  struct Broadcast {
    Value source;
    AffineMap map;
    RankedTensorType scoreType;
    bool negated = false; // mask: keeps where `source` is false
  } bias, mask;
  /// Set when the scores are reshaped between Q K^T and the steps (the
  /// steps' side has more batch dimensions): how to fold them back.
  SmallVector<ReassociationIndices> scoreGroups;
  /// Reshapes, scale steps and transposes the operands were read through.
  SmallVector<Operation *> lookedThrough;
  double scale = 1.0;
  bool scaled = false;       // a scale step was seen (walking backwards)
  bool causal = false;
};

/// The linalg op defining `v` when it has one result and `v` one user.
linalg::LinalgOp producer(Value v) {
  auto op = v.getDefiningOp<linalg::LinalgOp>();
  if (!op || op->getNumResults() != 1 || !v.hasOneUse())
    return {};
  return op;
}

/// The scalar f32/f64 constant `v`, if it is one (through float casts, as
/// torch-mlir writes f64 constants truncated to f32).
std::optional<double> constantOf(Value v) {
  while (isa_and_nonnull<arith::TruncFOp, arith::ExtFOp>(v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  FloatAttr attr;
  if (matchPattern(v, m_Constant(&attr)))
    return attr.getValueAsDouble();
  return std::nullopt;
}

/// constantOf(v), also when `v` is uniform in the body of `op` (a block
/// argument reading a splat constant or a fill).
std::optional<double> constantIn(linalg::LinalgOp op, Value v) {
  if (std::optional<double> c = constantOf(v))
    return c;
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
    return uniformValue(generic, v);
  return std::nullopt;
}

/// The operation computing a linalg op's result 0 (a generic or
/// linalg.reduce), when its other results (e.g. the argmax torch-mlir's
/// max reduction also returns) are unused.
Operation *yieldedOp(linalg::LinalgOp op) {
  for (OpResult extra : op->getResults().drop_front())
    if (!extra.use_empty())
      return nullptr;
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  return yield.getOperand(0).getDefiningOp();
}

/// Whether `op`'s body yields `Op(arg a, arg b)`, in that order.
template <typename Op>
bool yieldsOf(linalg::LinalgOp op, unsigned a, unsigned b) {
  auto body = dyn_cast_or_null<Op>(yieldedOp(op));
  return body && body->getOperand(0) == op.getBlock()->getArgument(a) &&
         body->getOperand(1) == op.getBlock()->getArgument(b);
}

/// A reduction over the last loop of one input, yielding `Op` of the
/// element and the accumulator (a generic or linalg.reduce).
template <typename... Ops>
linalg::LinalgOp lastDimReduction(Value v) {
  auto op = v.getDefiningOp<linalg::LinalgOp>();
  if (!op || op.getNumDpsInputs() != 1 || op.getNumReductionLoops() != 1 ||
      op.getIteratorTypesArray().back() != utils::IteratorType::reduction ||
      !op.getMatchingIndexingMap(op.getDpsInputOperand(0)).isIdentity() ||
      !isa_and_nonnull<Ops...>(yieldedOp(op)))
    return {};
  return op;
}

/// The source of a reshape that only splits or merges leading (batch)
/// dimensions, e.g. [B*H, L, L] <-> [B, H, L, L], with its reassociation
/// (grouping the higher-rank side); null when `v` is not one.
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

/// `v` without an expand_shape that appends unit dimensions (a keepdim
/// reduction result reshaped by the front end).
Value throughUnitExpand(Value v) {
  if (auto expand = v.getDefiningOp<tensor::ExpandShapeOp>())
    if (v.hasOneUse() && llvm::all_of(expand.getResultType().getShape().drop_front(
                             expand.getSrcType().getRank()),
                         [](int64_t d) { return d == 1; }))
      return expand.getSrc();
  return v;
}

bool allParallel(linalg::LinalgOp op) {
  return op.getNumReductionLoops() == 0;
}

/// An elementwise generic on the score: its identity-mapped input is the
/// score, returns that input's index (or -1).
int scoreInputIndex(linalg::GenericOp op) {
  if (!allParallel(op) || op.getNumDpsInits() != 1 ||
      !op.getIndexingMapsArray().back().isIdentity())
    return -1;
  for (OpOperand *in : op.getDpsInputOperands())
    if (op.getMatchingIndexingMap(in).isIdentity())
      return in->getOperandNumber();
  return -1;
}

/// Q K^T, P V: a contraction with two inputs and a zero-filled init, and
/// its loop classification.
struct Contraction {
  linalg::LinalgOp op;
  linalg::ContractionDimensions dims;
};

std::optional<Contraction> asContraction(Operation *op) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  if (!linalgOp || linalgOp.getNumDpsInputs() != 2 ||
      linalgOp.getNumDpsInits() != 1 ||
      !linalgOp.hasPureTensorSemantics() ||
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

/// Loop dims `batch..., a, b`.
SmallVector<unsigned> loopDims(ArrayRef<unsigned> batch, unsigned a,
                               unsigned b) {
  SmallVector<unsigned> dims(batch.begin(), batch.end());
  dims.append({a, b});
  return dims;
}

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
                     ArrayRef<ReassociationIndices> scoreGroups, Location loc);

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

/// When `v` is an elementwise multiply or divide by a positive constant
/// with no other user: the factor and the unscaled input.
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
  Value other = body->getOperand(0) == x ? body->getOperand(1)
                                         : body->getOperand(0);
  std::optional<double> c = constantIn(op, other);
  if (!c || *c <= 0 || (divides && body->getOperand(0) != x))
    return std::nullopt;
  return std::make_pair(divides ? 1.0 / *c : *c, op.getDpsInputs()[0]);
}

/// K or V with its heads repeated for grouped-query attention, as
/// `repeat_interleave(G, dim=heads)` is lowered: a generic copying
/// [.., Hkv, L, D] into [.., Hkv, G, L, D] (broadcast along G), collapsed
/// so that G merges into the dimension before it. Head h then reads kv
/// head h / G, as attn.attention does for Hq = G * Hkv. Returns the
/// unrepeated tensor and the collapse left to apply to it (empty: none).
struct HeadRepeat {
  Value source;
  SmallVector<ReassociationIndices> collapse;
  SmallVector<Operation *> ops; // the collapse and the copy
};

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
  if (llvm::all_of(groups, [](const ReassociationIndices &g) {
        return g.size() == 1;
      }))
    groups.clear();
  return HeadRepeat{copy.getDpsInputs()[0], groups, {collapse, copy}};
}

bool swapsLastTwo(ArrayRef<int64_t> p) {
  int64_t n = p.size();
  return n >= 2 && p[n - 1] == n - 2 && p[n - 2] == n - 1 &&
         llvm::equal(p.drop_back(2), llvm::seq<int64_t>(0, n - 2));
}

/// Input `input` of the contraction as [dims in the loop order
/// `wantedDims`]. Looks through, in this order: a batch collapse
/// (torch-mlir's [B*H, ..] view), scale steps when `scale` is given (their
/// factors multiply it; torch-mlir scales Q and K^T by sqrt(scale) each),
/// and a linalg.transpose that undoes the permutation the contraction reads
/// the operand with. `lookedThrough` collects the ops passed.
std::optional<Operand> operandIn(Contraction &c, unsigned input,
                                 ArrayRef<unsigned> wantedDims, double *scale,
                                 SmallVector<Operation *> &lookedThrough) {
  AffineMap map =
      c.op.getMatchingIndexingMap(c.op.getDpsInputOperand(input));
  if (!map.isProjectedPermutation() || map.getNumResults() != wantedDims.size())
    return std::nullopt;
  // permutation[r] = operand dimension holding wanted loop r.
  SmallVector<int64_t> permutation;
  for (unsigned loop : wantedDims) {
    std::optional<unsigned> pos = map.getResultPosition(
        getAffineDimExpr(loop, c.op->getContext()));
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
/// and head), negated for a mask that keeps where false, and folded like
/// the scores.
Value Raiser::scoreOperand(const AttentionMatch::Broadcast &operand,
                           ArrayRef<ReassociationIndices> scoreGroups,
                           Location loc) {
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
  Value bias = scoreOperand(m.bias, m.scoreGroups, loc),
        mask = scoreOperand(m.mask, m.scoreGroups, loc);
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
      rewriter, loc, resultType, q, k, v, mask, bias, Value(), Value(), Value(),
      m.causal ? cast<MaskAttrInterface>(CausalAttr::get(rewriter.getContext()))
               : MaskAttrInterface(),
      rewriter.getF32FloatAttr(float(m.scale)), AlignmentAttr(), ArrayAttr());
  Value result = attention.getResult();
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
