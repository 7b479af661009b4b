//===- Decomposition.h - one decomposition, as a pass and as a pattern ----===//
//
// Each family's decomposition is one function from its op to the value
// that replaces it (an error at the op when it cannot). The passes apply
// it to every op of the family (decomposeAll); the patterns of
// populateAttnDecompositionPatterns (Patterns.h) wrap the same function
// for other compilers' pipelines.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_DECOMPOSITION_H
#define ATTN_TRANSFORMS_DECOMPOSITION_H

#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {

FailureOr<Value> decomposeLinformer(LinformerOp op);
FailureOr<Value> decomposeRope(RopeOp op);
FailureOr<Value> decomposeNystrom(NystromOp op);
FailureOr<Value> decomposeKernelized(KernelizedOp op);
FailureOr<Value> decomposeLsh(LshOp op);
FailureOr<Value> decomposeRouting(RoutingOp op);

/// Replaces every OpTy under `root` by its decomposition, in program
/// order; failure after the first op that could not be decomposed.
template <typename OpTy>
LogicalResult decomposeAll(Operation *root,
                           FailureOr<Value> (*decompose)(OpTy)) {
  SmallVector<OpTy> ops;
  root->walk([&](OpTy op) { ops.push_back(op); });
  for (OpTy op : ops) {
    FailureOr<Value> replacement = decompose(op);
    if (failed(replacement))
      return failure();
    op.replaceAllUsesWith(*replacement);
    op.erase();
  }
  return success();
}

/// The same decomposition as a rewrite pattern.
template <typename OpTy> struct DecompositionPattern : OpRewritePattern<OpTy> {
  DecompositionPattern(MLIRContext *context,
                       FailureOr<Value> (*decompose)(OpTy))
      : OpRewritePattern<OpTy>(context), decompose(decompose) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    FailureOr<Value> replacement = decompose(op);
    if (failed(replacement))
      return failure();
    rewriter.replaceOp(op, *replacement);
    return success();
  }

  FailureOr<Value> (*decompose)(OpTy);
};

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_DECOMPOSITION_H
