//===- attn-opt.cpp - mlir-opt with the attn dialect and passes -----------===//
//
// Behaves like mlir-opt: every upstream dialect, extension and pass is
// registered next to ours, so attn IR can be mixed with and lowered through
// any upstream pipeline.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<mlir::attn::AttnDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "attn optimizer driver\n", registry));
}
