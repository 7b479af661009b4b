//===- ExpandBf16.cpp - bf16 conversions without an instruction -----------===//
//
// Whether bf16 conversions need expanding is a fact of the target, known
// only once the module's #attn.target is read; the expansion itself is
// upstream's arith-expand, run as a dynamic pipeline.
//
//===----------------------------------------------------------------------===//
#include "attn/Analysis/TargetDescription.h"
#include "attn/Transforms/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNEXPANDBF16
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
struct AttnExpandBf16Pass : attn::impl::AttnExpandBf16Base<AttnExpandBf16Pass> {
  void runOnOperation() override {
    TargetDescription target = TargetDescription::of(getOperation())
                                   .value_or(TargetDescription::cpuAvx2());
    if (!target.isCpu() || target.hasNativeBf16Conversion())
      return;
    OpPassManager expand(ModuleOp::getOperationName());
    arith::ArithExpandOpsPassOptions options;
    options.includeBf16 = true;
    expand.addPass(arith::createArithExpandOpsPass(options));
    if (failed(runPipeline(expand, getOperation())))
      signalPassFailure();
  }
};
} // namespace
