//===- FuzzSpec.cpp - libFuzzer target: attention and layer spec readers
//---===//
//
// Any bytes as a spec file: screened, read (attention or layer spec) and,
// when they read, built into verified attn IR. Errors are expected; crashes,
// hangs, sanitizer reports and LLVM fatal errors are findings.
//
//===----------------------------------------------------------------------===//
#include "FuzzContext.h"
#include "attn/Spec/LayerSpec.h"
#include "attn/Spec/Spec.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext *context = &attnfuzz::context();
  llvm::SourceMgr sourceMgr;
  sourceMgr.setDiagHandler([](const llvm::SMDiagnostic &, void *) {});
  mlir::ScopedDiagnosticHandler quiet(
      context, [](mlir::Diagnostic &) { return mlir::success(); });
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.yaml"),
      llvm::SMLoc());
  if (attnspec::isLayerSpec(sourceMgr)) {
    if (std::optional<attnspec::LayerSpec> spec =
            attnspec::readLayerSpec(sourceMgr))
      (void)attnspec::buildModule(
          attnspec::attentionSpec(*spec, attnspec::AttentionRole::Self, 1, 16,
                                  16),
          sourceMgr, context);
    return 0;
  }
  if (std::optional<attnspec::Spec> spec = attnspec::readSpec(sourceMgr))
    (void)attnspec::buildModule(*spec, sourceMgr, context);
  return 0;
}
