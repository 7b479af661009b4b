//===- RaiseScoreMask.h - What a mask built in linalg keeps -----*- C++ -*-===//
//
// attn-raise meets masks as front ends build them: an additive [L, L]
// tensor of 0 / -inf, or select(cond, -inf, S) on the scores, where the
// condition comes from iota comparisons (is_causal), a constant tril
// buffer (GPT-2's registered `bias`) or a boolean argument (masked_fill).
// These helpers evaluate such values symbolically, per score element
// (b..., i, j), and say which keys they keep: all of them, the causal
// half-plane j <= i, or a boolean tensor read by an indexing map.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_RAISESCOREMASK_H
#define ATTN_TRANSFORMS_RAISESCOREMASK_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::attn {

/// The keys a mask keeps, in the loop space of the score [batch..., i, j].
struct ScoreMask {
  enum class Kind {
    All,    // adds 0 everywhere / selects nothing away
    Causal, // keeps j <= i
    Dense,  // keeps tensor[map(b..., i, j)] (negated: keeps where false)
  };
  Kind kind = Kind::All;
  Value tensor;  // Dense: an i1 tensor
  AffineMap map; // Dense: score loops -> tensor dims
  bool negated = false;
};

/// The mask an additive term is, when it only takes the values 0 (kept)
/// and -inf (masked): `term` is read with `map` from a score of rank
/// `rank`. Fails for a real bias.
FailureOr<ScoreMask> additiveMask(Value term, AffineMap map, unsigned rank);

/// The keys an i1 value `cond` in the body of `step` (an elementwise
/// generic on the score, identity-mapped output) keeps where it is
/// `keepsWhenTrue`.
FailureOr<ScoreMask> keptWhere(linalg::GenericOp step, Value cond,
                               bool keepsWhenTrue);

/// The value of the scalar `v` in the body of `op` (or outside it) when it
/// is the same for every element: a constant, or a block argument reading
/// a splat constant or a filled tensor (as TOSA's broadcast operands
/// lower).
std::optional<double> uniformValue(linalg::GenericOp op, Value v);

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_RAISESCOREMASK_H
