//===- DecomposeLinformer.cpp - attn.linformer to projections + attention -===//
//
//   K'[b,h,t,:] = sum_j E[h?,t,j] K[b,h,j,:]      (linalg.generic, O(Lk k D))
//   V'[b,h,t,:] = sum_j F[h?,t,j] V[b,h,j,:]
//   O = attn.attention(Q, K', V')                  (the attention kernels)
//
// The projections nest their loops (b, h, t, j, d): the innermost loop runs
// along contiguous rows of K and K'.
//
//===----------------------------------------------------------------------===//
#include "Decomposition.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/EinsumBuilder.h"
#include "attn/Transforms/Passes.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNDECOMPOSELINFORMER
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Projects `x` [B, Hkv, Lk, D] along the sequence with `proj` [k, Lk] or
/// [Hkv, k, Lk].
Value projectSequence(EinsumBuilder &eb, Value proj, Value x) {
  bool perHead = cast<RankedTensorType>(proj.getType()).getRank() == 3;
  return eb.contract(perHead ? "htj,bhjd->bhtd" : "tj,bhjd->bhtd", {proj, x},
                     "bhtjd");
}

struct AttnDecomposeLinformerPass
    : attn::impl::AttnDecomposeLinformerBase<AttnDecomposeLinformerPass> {
  void runOnOperation() override {
    if (failed(decomposeAll<LinformerOp>(getOperation(), decomposeLinformer)))
      signalPassFailure();
  }
};

} // namespace

FailureOr<Value> mlir::attn::decomposeLinformer(LinformerOp op) {
  Type element = cast<RankedTensorType>(op.getType()).getElementType();
  if (!element.isF32()) {
    op.emitOpError("attn-decompose-linformer handles f32 only for now, got ")
        << element;
    return failure();
  }
  OpBuilder b(op);
  EinsumBuilder eb(b, op.getLoc());
  Value key = projectSequence(eb, op.getEProj(), op.getKey());
  Value value = projectSequence(eb, op.getFProj(), op.getValue());
  return createSoftmaxAttention(b, op.getLoc(), op.getType(), op.getQuery(),
                                key, value, op.getScaleAttr());
}
