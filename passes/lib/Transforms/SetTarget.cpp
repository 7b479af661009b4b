//===- SetTarget.cpp - attach the module's #attn.target -------------------===//
//
// A target string (a tool's --target, a pipeline's option) enters the IR
// here and nowhere else: later passes read the attribute, so a module
// carries what it was compiled for and an embedding compiler can attach
// its own description instead of passing options to each pass.
//
//===----------------------------------------------------------------------===//
#include "attn/Analysis/TargetDescription.h"
#include "attn/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNSETTARGET
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
struct AttnSetTargetPass : attn::impl::AttnSetTargetBase<AttnSetTargetPass> {
  using AttnSetTargetBase::AttnSetTargetBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (target.empty() && module->hasAttr(TargetAttr::getAttrName()))
      return;
    std::optional<TargetDescription> description = TargetDescription::lookup(
        target.empty() ? StringRef("cpu-avx2") : StringRef(target));
    if (!description) {
      module.emitError() << "attn-set-target: unknown target '" << target
                         << "' (" << TargetDescription::knownNames() << ")";
      return signalPassFailure();
    }
    module->setAttr(TargetAttr::getAttrName(),
                    description->toAttr(&getContext()));
  }
};
} // namespace
