//===- AttnCanonicalize.cpp - canonicalization of attn ops ----------------===//
//
// attn.attention canonicalizes its pattern with the mask algebra (flattened
// or/and, no duplicates, nothing that keeps every element) and drops empty
// mod lists, so later passes see one spelling of each mask.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/IR/MaskAlgebra.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::attn;

namespace {
struct SimplifyAttentionPattern : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    MaskAttrInterface pattern = op.getPatternAttr();
    if (!pattern)
      return failure();
    MaskAttrInterface simple =
        simplifyMask(pattern, op.getMaskShape(), op.getAlignment());
    if (simple == pattern)
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      if (simple)
        op.setPatternAttr(simple);
      else
        op.removePatternAttr();
    });
    return success();
  }
};

struct DropEmptyMods : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<ArrayAttr> mods = op.getMods();
    if (!mods || !mods->empty())
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.removeModsAttr(); });
    return success();
  }
};
} // namespace

void AttentionOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<SimplifyAttentionPattern, DropEmptyMods>(context);
}
