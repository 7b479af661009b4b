//===- AttentionGradToCpu.cpp - the backward as a vectorized CPU kernel ---===//
//
// attn-attention-grad-to-cpu: each attn.attention_grad it covers becomes
// FlashAttention-2's backward in one fused pass over key tiles, written as
// register-blocked vector products (the forward kernels' technique):
//
//   forall (batch, key/value head, split s of S)                -- OpenMP
//     for key tiles j0 = s, s + S, ... (64 keys each)
//       pack K^T, V^T and the K rows of the tile; dK, dV sums = 0
//       for each 64-row query tile the pattern keeps something of (listed
//       at compile time, the forward's TileSchedule transposed, or else
//       classified at run time by emitTileClass), each query head of the
//       group:
//         pack the Q and dO rows; D = rowsum(dO o O); the rows' lse
//         S = Q K^T       -> P = exp(x - lse)  (x: scaled, capped, modded,
//                                                masked in partial tiles)
//         dP = dO V^T     -> dS = scale P (dP - D) (1 - tanh^2)
//         dV += P^T dO,  dK += dS^T Q           (sums of this key tile)
//         dQ_s[rows] += dS K                    (this split's dQ)
//       store the tile's dK, dV
//   forall (batch, query head): dQ = sum over s of dQ_s
//
// Each dK, dV row has one writer (its key tile's), each dQ_s one writer
// (its split's), so nothing races and 5 products are computed per tile,
// not the 7 of two passes. Splits exist to feed the threads when batch x
// key/value heads is small; key tiles are dealt round-robin so that causal
// ranges cost the splits alike. A product C[M][N] (+)= sum_k A(m, k) B[k][N]
// keeps a block of 6 rows x (4 or 2) vectors of C in registers: per k one
// load per vector of B's row and one broadcast per row of A. All of them
// read B as rows of contiguous lanes, which the packing arranges:
// S reads K^T, dP reads V^T, dV / dK read dO / Q rows, dQ reads K rows.
//
// Dropped keys: P = 0 and dS = 0 exactly (selects, not products), and dQ
// reads K rows whose non-finite values are zeroed (a kept key's NaN reaches
// dQ through its dS instead), so a dropped key's NaN K or V never reaches
// a gradient.
//
// Covered: f32, f16 and bf16 (widened as they are packed, f32 sums), static
// head dims up to 256, the positional mask patterns, segment ids (document
// masks, tested per tile from id ranges and per lane), bias and boolean
// mask operands (without their gradients), soft-cap and the lane-wise mods
// (ALiBi, adaptive span). The rest (table patterns, Shaw / T5 tables,
// operand gradients, score regions) is left to attn-lower-attention-grad.
//
//===----------------------------------------------------------------------===//
#include "CpuBackwardKernel.h"
#include "attn/Analysis/KernelPlan.h"
#include "attn/Conversion/Passes.h"
#include "attn/Transforms/MaskCodegen.h"
#include "attn/Transforms/ScoreModCodegen.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNATTENTIONGRADTOCPU
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Whether the kernel covers `op` (else attn-lower-attention-grad does).
bool isCovered(AttentionGradOp op) {
  auto queryType = cast<RankedTensorType>(op.getQuery().getType());
  Type element = queryType.getElementType();
  if (!element.isF32() && !element.isF16() && !element.isBF16())
    return false;
  if (!op.getScore().empty() || op.getRelTable() ||
      !op.getOperandGrads().empty())
    return false;
  // The scratch of a call (about 10 x 64 x D floats) lives on the worker
  // thread's stack: head dims up to 256 (under 1 MiB of libomp's 4 MiB).
  int64_t valueDim =
      cast<RankedTensorType>(op.getValue().getType()).getDimSize(3);
  if (queryType.isDynamicDim(3) || ShapedType::isDynamic(valueDim) ||
      queryType.getDimSize(3) > 256 || valueDim > 256)
    return false;
  if (ArrayAttr mods = op.getModsAttr())
    for (Attribute mod : mods)
      if (isa<DistanceWeightAttr>(mod))
        return false;
  std::string reason;
  if (!areScoreModsVectorizable(op.getModsAttr(), /*withGathers=*/false) ||
      !isScoreModCodegenSupported(op.getModsAttr(), queryType.getDimSize(1),
                                  reason))
    return false;
  // Segment ids alone or AND-ed at the top (document masks) are tested
  // per tile and lane at run time; the rest of the pattern is positional.
  MaskAttrInterface pattern = op.getPatternAttr();
  if (!pattern)
    return true;
  auto [runtimeSegments, positional] = splitRuntimeSegments(pattern);
  if (pattern.usesSegments() &&
      (!runtimeSegments || (positional && positional.usesSegments())))
    return false;
  return !positional || isMaskCodegenSupported(positional, op.getMaskShape(),
                                               /*withTensors=*/false, reason);
}

struct AttnAttentionGradToCpuPass
    : attn::impl::AttnAttentionGradToCpuBase<AttnAttentionGradToCpuPass> {
  using AttnAttentionGradToCpuBase::AttnAttentionGradToCpuBase;

  void runOnOperation() override {
    std::optional<TargetDescription> target =
        TargetDescription::cpuOf(getOperation());
    if (!target)
      return;
    SmallVector<AttentionGradOp> ops;
    getOperation()->walk([&](AttentionGradOp op) {
      if (isCovered(op))
        ops.push_back(op);
    });
    for (AttentionGradOp op : ops) {
      SmallVector<Value> grads =
          CpuBackwardKernel(op, *target, countTiles).build(getOperation());
      op.replaceAllUsesWith(grads);
      op.erase();
    }
  }
};

} // namespace
