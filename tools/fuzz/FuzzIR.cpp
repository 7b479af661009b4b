//===- FuzzIR.cpp - libFuzzer target: parse, verify, lower attn IR --------===//
//
// Any bytes as an .mlir module. Modules that parse, verify and hold only
// what attn owns (func.func / func.return around attn ops and their
// attributes), with operands of at most 2^16 elements, go through the CPU
// pipeline (vectorized or generic, by the input's length) up to the LLVM
// dialect: verified attn IR must never crash a pass. (Other dialects' ops are
// upstream's to fuzz.) Parse nesting is screened first, as the tools do.
//
//===----------------------------------------------------------------------===//
#include "FuzzContext.h"
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Runtime/InputLimits.h"
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
  // MLIR's lexer reads up to a NUL terminator, which the tools' file
  // buffers have and libFuzzer's input does not: parse a terminated copy.
  std::string source(text);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, context);
  if (!module)
    return 0;
  bool attnOnly = true, hasAttn = false, small = true;
  module->walk([&](mlir::Operation *op) {
    llvm::StringRef ns =
        op->getDialect() ? op->getDialect()->getNamespace() : llvm::StringRef();
    hasAttn |= ns == "attn";
    attnOnly &=
        ns == "attn" ||
        mlir::isa<mlir::ModuleOp, mlir::func::FuncOp, mlir::func::ReturnOp>(op);
    // Lowering cost grows with static sizes (unrolled tile tables): keep
    // executions fast; the verifier already saw the large ones.
    for (mlir::Type type : op->getOperandTypes())
      if (auto shaped = mlir::dyn_cast<mlir::ShapedType>(type))
        small &= !shaped.hasStaticShape() ||
                 shaped.getNumElements() <= (int64_t(1) << 16);
  });
  if (!attnOnly || !hasAttn || !small)
    return 0;
  // One of the two CPU paths per input (chosen by its last byte), so that
  // each execution runs one pipeline.
  mlir::PassManager pm(context);
  mlir::attn::CpuPipelineOptions options;
  options.cpuKernels = size % 2 == 0;
  mlir::attn::buildCpuPipeline(pm, options);
  (void)pm.run(*module);
  return 0;
}
