//===- FuzzContext.h - the MLIR context fuzz targets share -----*- C++ -*-===//
#ifndef ATTN_TOOLS_FUZZ_FUZZCONTEXT_H
#define ATTN_TOOLS_FUZZ_FUZZCONTEXT_H

#include "attn/Spec/Spec.h"
#include "mlir/IR/MLIRContext.h"

namespace attnfuzz {

/// One context for the whole run (the tools' dialects, loaded once):
/// creating one per input would dominate the time per execution.
inline mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    mlir::DialectRegistry registry;
    attnspec::registerToolDialects(registry);
    auto *c = new mlir::MLIRContext(registry);
    c->loadAllAvailableDialects();
    c->disableMultithreading();
    return c;
  }();
  return *ctx;
}

} // namespace attnfuzz

#endif // ATTN_TOOLS_FUZZ_FUZZCONTEXT_H
