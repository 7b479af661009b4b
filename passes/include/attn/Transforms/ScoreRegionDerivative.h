//===- ScoreRegionDerivative.h - a score region and its tangents -*- C++ -*-===//
//
// The backward of an attention with a custom score region needs, per
// logit, the region's derivative with respect to its input x (dX flows on
// to the earlier steps) and with respect to each element of a captured
// tensor it reads (the captured tensor's gradient). Both are emitted by
// forward-mode differentiation of the region's arithmetic: each value's
// tangent is built next to a clone of the op that computes it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_SCOREREGIONDERIVATIVE_H
#define ATTN_TRANSFORMS_SCOREREGIONDERIVATIVE_H

#include "mlir/IR/Builders.h"

namespace mlir::attn {

/// The first op of `score` whose result's derivative this file has no rule
/// for (null when every float value is differentiable). Rules: arith
/// add / sub / mul / div / neg / maximum / minimum / select / constants /
/// extf / truncf, math exp / log / tanh / sqrt / rsqrt / absf / powf, and
/// tensor.extract; integer and index arithmetic carries no derivative.
Operation *findUndifferentiableOp(Region &score);

/// One read of a captured tensor by the region: which tensor (its position
/// in `captured`), the element's indices and dy / d(element).
struct CapturedRead {
  unsigned tensor;
  SmallVector<Value> indices;
  Value slope;
};

/// The region's output on (x, batch, head, row, col) and its derivatives.
struct ScoreRegionTangents {
  Value y;
  Value slope; // dy / dx
  SmallVector<CapturedRead> reads;
};

/// Emits the region (as emitScoreRegion does) and dy / dx; with `captured`
/// (the op's getCapturedTensors()), also dy / d(element) of every read of
/// those tensors.
ScoreRegionTangents emitScoreRegionTangents(OpBuilder &b, Location loc,
                                            Region &score, ValueRange args,
                                            ArrayRef<Value> captured = {});

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_SCOREREGIONDERIVATIVE_H
