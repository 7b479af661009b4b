//===- DecomposeAggregatedOps.cpp - linalg.softmax & co. to generics ------===//
//
// Named linalg ops that implement AggregatedOpInterface (linalg.softmax
// among them) have no loop lowering of their own: convert-linalg-to-loops
// leaves them, and bufferized they stop the LLVM conversion. Each is
// replaced by the ops its own decomposeOperation builds (for softmax: max
// reduction, exp(x - max), sum reduction, division), which the rest of the
// pipeline lowers like any linalg.generic. Attention is raised or tiled
// before this runs, so it only meets what the user left outside.
//
//===----------------------------------------------------------------------===//
#include "attn/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNDECOMPOSEAGGREGATEDOPS
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {
struct AttnDecomposeAggregatedOpsPass
    : attn::impl::AttnDecomposeAggregatedOpsBase<
          AttnDecomposeAggregatedOpsPass> {
  void runOnOperation() override {
    SmallVector<linalg::AggregatedOpInterface> ops;
    getOperation()->walk(
        [&](linalg::AggregatedOpInterface op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::AggregatedOpInterface op : ops) {
      rewriter.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> replacements =
          op.decomposeOperation(rewriter);
      if (failed(replacements)) {
        op->emitError("could not be decomposed into linalg.generic ops");
        return signalPassFailure();
      }
      rewriter.replaceOp(op, *replacements);
    }
  }
};
} // namespace
