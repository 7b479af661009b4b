//===- RaiseForms.h - readers of the linalg forms attn-raise matches -*- C++
//-*-===//
//
// The structural readers attn-raise (RaiseAttention.cpp) builds its match
// from: producers, constants, contractions, scale steps, head repeats and
// operand layouts. They only look; Raiser creates and erases.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_RAISEFORMS_H
#define ATTN_TRANSFORMS_RAISEFORMS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include <optional>

namespace mlir::attn::raise {

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
  bool scaled = false; // a scale step was seen (walking backwards)
  bool causal = false;
};

/// Q K^T, P V: a contraction with two inputs and a zero-filled init, and
/// its loop classification.
struct Contraction {
  linalg::LinalgOp op;
  linalg::ContractionDimensions dims;
};

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

/// The linalg op defining `v` when it has one result and `v` one user.
linalg::LinalgOp producer(Value v);

/// The scalar f32/f64 constant `v`, if it is one (through float casts, as
/// torch-mlir writes f64 constants truncated to f32).
std::optional<double> constantOf(Value v);

/// constantOf(v), also when `v` is uniform in the body of `op` (a block
/// argument reading a splat constant or a fill).
std::optional<double> constantIn(linalg::LinalgOp op, Value v);

/// The operation computing a linalg op's result 0 (a generic or
/// linalg.reduce), when its other results (e.g. the argmax torch-mlir's
/// max reduction also returns) are unused.
Operation *yieldedOp(linalg::LinalgOp op);

/// Whether `op`'s body yields `Op(arg a, arg b)`, in that order.
template <typename Op>
bool yieldsOf(linalg::LinalgOp op, unsigned a, unsigned b) {
  auto body = dyn_cast_or_null<Op>(yieldedOp(op));
  return body && body->getOperand(0) == op.getBlock()->getArgument(a) &&
         body->getOperand(1) == op.getBlock()->getArgument(b);
}

/// A reduction over the last loop of one input, yielding `Op` of the
/// element and the accumulator (a generic or linalg.reduce).
template <typename... Ops> linalg::LinalgOp lastDimReduction(Value v) {
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
throughBatchReshape(Value v);

/// `v` without an expand_shape that appends unit dimensions (a keepdim
/// reduction result reshaped by the front end).
Value throughUnitExpand(Value v);

/// Whether every loop of `op` is parallel (an elementwise step).
bool allParallel(linalg::LinalgOp op);

/// An elementwise generic on the score: its identity-mapped input is the
/// score, returns that input's index (or -1).
int scoreInputIndex(linalg::GenericOp op);

/// `op` read as a two-input contraction over one reduction loop (matmul,
/// batch_matmul or an equivalent linalg.generic), if it is one.
std::optional<Contraction> asContraction(Operation *op);

/// Loop dims `batch..., a, b`.
SmallVector<unsigned> loopDims(ArrayRef<unsigned> batch, unsigned a,
                               unsigned b);

/// When `v` is an elementwise multiply or divide by a positive constant
/// with no other user: the factor and the unscaled input.
std::optional<std::pair<double, Value>> scaleStep(Value v);

/// `v` without the repeat_interleave of K / V heads (GQA) under a
/// collapse, if that is what produced it.
std::optional<HeadRepeat> throughHeadRepeat(Value v);

/// Whether permutation `p` swaps the last two dims and keeps the others.
bool swapsLastTwo(ArrayRef<int64_t> p);

/// Input `input` of the contraction as [dims in the loop order
/// `wantedDims`]. Looks through, in this order: a batch collapse
/// (torch-mlir's [B*H, ..] view), scale steps when `scale` is given (their
/// factors multiply it; torch-mlir scales Q and K^T by sqrt(scale) each),
/// and a linalg.transpose that undoes the permutation the contraction reads
/// the operand with. `lookedThrough` collects the ops passed.
std::optional<Operand> operandIn(Contraction &c, unsigned input,
                                 ArrayRef<unsigned> wantedDims, double *scale,
                                 SmallVector<Operation *> &lookedThrough);

} // namespace mlir::attn::raise

#endif // ATTN_TRANSFORMS_RAISEFORMS_H
