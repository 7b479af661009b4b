//===- AttnPlugin.cpp - attn as a plugin of a stock mlir-opt --------------===//
//
// libAttnPlugin.so lets an mlir-opt built elsewhere (Debian's mlir-opt-22,
// or any tool on MlirOptMain that links libMLIR.so) read and write the attn
// dialect and run attn's passes and pipelines, without rebuilding it:
//
//   mlir-opt-22 --load-dialect-plugin=libAttnPlugin.so \
//               --load-pass-plugin=libAttnPlugin.so \
//               --pass-pipeline='builtin.module(attn-cpu-pipeline)' in.mlir
//
// One file serves both flags: it exports both entry points. The plugin also
// registers test-attn-patterns (TestPatterns.cpp), attn's patterns applied
// without its pipeline builders.
//
//===----------------------------------------------------------------------===//
#include "TestPatterns.h"
#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/Patterns.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

using namespace mlir;

extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Attn", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            registry->insert<attn::AttnDialect>();
            attn::registerAttnTilingInterfaceModels(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "AttnPasses", LLVM_VERSION_STRING, [] {
            attn::registerAttnPasses();
            attn::registerAttnConversionPasses();
            attn::registerAttnPipelines();
            attnplugin::registerTestPatternsPass();
          }};
}
