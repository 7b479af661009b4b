//===- DecompositionPatterns.cpp - the family decompositions as patterns --===//
#include "Decomposition.h"
#include "attn/Transforms/Patterns.h"

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::populateAttnDecompositionPatterns(
    RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  patterns.add<DecompositionPattern<LinformerOp>>(context, decomposeLinformer);
  patterns.add<DecompositionPattern<RopeOp>>(context, decomposeRope);
  patterns.add<DecompositionPattern<NystromOp>>(context, decomposeNystrom);
  patterns.add<DecompositionPattern<KernelizedOp>>(context,
                                                   decomposeKernelized);
  patterns.add<DecompositionPattern<LshOp>>(context, decomposeLsh);
  patterns.add<DecompositionPattern<RoutingOp>>(context, decomposeRouting);
}
