//===- FuzzIR.cpp - libFuzzer target: parse, verify, lower attn IR --------===//
//
// Any bytes as an .mlir module. Modules that parse, verify and hold only
// what attn owns (func.func / func.return around attn ops and their
// attributes) go through the CPU pipeline up to the LLVM dialect: verified
// attn IR must never crash a pass. (Other dialects' ops are upstream's to
// fuzz.) Parse nesting is screened first, as the tools do.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Runtime/InputLimits.h"
#include "FuzzContext.h"
#include "attn/Spec/Spec.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext *context = &attnfuzz::context();
  std::string_view text(reinterpret_cast<const char *>(data), size);
  if (attnrt::findExcessNesting(text, attnrt::kMaxNestingDepth,
                                attnrt::NestingSyntax::Json) !=
      std::string_view::npos)
    return 0;
  mlir::ScopedDiagnosticHandler quiet(
      context, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(
          llvm::StringRef(text.data(), text.size()), context);
  if (!module)
    return 0;
  bool attnOnly = true, hasAttn = false;
  module->walk([&](mlir::Operation *op) {
    llvm::StringRef ns = op->getDialect() ? op->getDialect()->getNamespace()
                                          : llvm::StringRef();
    hasAttn |= ns == "attn";
    attnOnly &= ns == "attn" || mlir::isa<mlir::ModuleOp, mlir::func::FuncOp,
                                          mlir::func::ReturnOp>(op);
  });
  if (!attnOnly || !hasAttn)
    return 0;
  for (bool cpuKernels : {true, false}) {
    mlir::OwningOpRef<mlir::ModuleOp> copy = module->clone();
    mlir::PassManager pm(context);
    mlir::attn::CpuPipelineOptions options;
    options.cpuKernels = cpuKernels;
    mlir::attn::buildCpuPipeline(pm, options);
    (void)pm.run(*copy);
  }
  return 0;
}
