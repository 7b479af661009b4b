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
    if (target.empty() && module->hasAttr(TargetAttr::getAttrName()) &&
        !workgroupRows)
      return;
    std::optional<TargetDescription> description =
        target.empty() && module->hasAttr(TargetAttr::getAttrName())
            ? TargetDescription::of(module)
            : TargetDescription::lookup(target.empty() ? StringRef("cpu-avx2")
                                                       : StringRef(target));
    if (!description) {
      module.emitError() << "attn-set-target: unknown target '" << target
                         << "' (" << TargetDescription::knownNames() << ")";
      return signalPassFailure();
    }
    if (workgroupRows) {
      // One warp per 16 rows in the tensor-core kernels; 256 rows are 16
      // warps, and 512 invocations where the scalar kernel gives a row two.
      if (description->isCpu() || workgroupRows < 0 ||
          workgroupRows % 16 != 0 || workgroupRows > 256) {
        module.emitError()
            << "attn-set-target: workgroup-rows must be a multiple of 16 up "
               "to 256 on a GPU target, got "
            << int64_t(workgroupRows) << " for '" << description->name << "'";
        return signalPassFailure();
      }
      description->workgroupRows = workgroupRows;
    }
    module->setAttr(TargetAttr::getAttrName(),
                    description->toAttr(&getContext()));
  }
};
} // namespace
