//===- VerifyTarget.cpp - refuse what the target cannot lower yet ---------===//
//
// Element types reach the dialect before every target lowers them: a
// located error naming the type and the target here is better than one
// from a lowering step (or a tool) that merely expected f32.
//
//===----------------------------------------------------------------------===//
#include "attn/Analysis/TargetDescription.h"
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNVERIFYTARGET
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {
struct AttnVerifyTargetPass
    : attn::impl::AttnVerifyTargetBase<AttnVerifyTargetPass> {
  using AttnVerifyTargetBase::AttnVerifyTargetBase;

  void runOnOperation() override {
    std::optional<attn::TargetDescription> description =
        attn::TargetDescription::of(getOperation());
    if (!description)
      description = attn::TargetDescription::cpuAvx2();
    StringRef target = description->name;
    bool ok = true;
    getOperation()->walk([&](Operation *op) {
      if (!isa<attn::AttnDialect>(op->getDialect()) ||
          op->getNumOperands() == 0)
        return;
      // The GPU kernels write output rows only (docs/Gpu.md).
      if (auto attention = dyn_cast<attn::AttentionOp>(op);
          attention && attention.getLse() && !description->isCpu()) {
        op->emitError() << "the lse result of attn.attention is not supported "
                           "by target '"
                        << target << "' yet (CPU targets only)";
        ok = false;
        return;
      }
      // The first operand (Q, or the input) carries the element type.
      auto type = dyn_cast<ShapedType>(op->getOperand(0).getType());
      if (!type || description->supportsElementType(type.getElementType()))
        return;
      op->emitError() << "element type " << type.getElementType()
                      << " is not supported by target '" << target
                      << "' yet (its lowerings take "
                      << llvm::join(description->elementTypes, ", ") << ")";
      ok = false;
    });
    if (!ok)
      signalPassFailure();
  }
};
} // namespace
