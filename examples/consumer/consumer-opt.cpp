//===- consumer-opt.cpp - a downstream tool with attn registered ----------===//
//
// What an ML-compiler project does to use attn: register the attn dialect
// and passes in its own mlir-opt-like driver, next to upstream's dialects.
//
//   consumer-opt --attn-decompose-linformer in.mlir
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<mlir::attn::AttnDialect>();
  mlir::attn::registerAttnPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "attn consumer\n", registry));
}
