//===- attn-opt.cpp - mlir-opt with the attn dialect and passes -----------===//
//
// Behaves like mlir-opt: every upstream dialect, extension and pass is
// registered next to ours, so attn IR can be mixed with and lowered through
// any upstream pipeline. Two differences: an input file with nothing in it is
// an error (usually a wrong path or a failed generator), not an empty module;
// and input nesting deeper than 256 brackets is an error before MLIR's
// recursive parser overflows the stack on it.
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Runtime/InputLimits.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/Patterns.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;

/// Reports `file:line:col: error: ...` when the input file holds only
/// whitespace or nests deeper than the parser can recurse. Standard input
/// is left alone: reading it here would consume it.
static bool isRejectedInput(StringRef inputFilename) {
  if (inputFilename == "-")
    return false;
  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFilename, &message);
  if (!file)
    return false; // MlirOptMain reports unreadable files itself
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  StringRef text = sourceMgr.getMemoryBuffer(1)->getBuffer();
  constexpr unsigned kMaxNesting = 256;
  size_t deep = attnrt::findExcessNesting(
      {text.data(), text.size()}, kMaxNesting, attnrt::NestingSyntax::Json);
  if (deep != std::string_view::npos) {
    sourceMgr.PrintMessage(llvm::SMLoc::getFromPointer(text.data() + deep),
                           llvm::SourceMgr::DK_Error,
                           "nesting deeper than 256 levels");
    return true;
  }
  if (!text.trim().empty())
    return false;
  sourceMgr.PrintMessage(llvm::SMLoc::getFromPointer(text.data()),
                         llvm::SourceMgr::DK_Error,
                         "input is empty; expected MLIR operations");
  return true;
}

int main(int argc, char **argv) {
  registerAllPasses();
  attn::registerAttnPasses();
  attn::registerAttnConversionPasses();
  attn::registerAttnPipelines();
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  // gpu-module-to-binary translates kernels to LLVM IR.
  registerAllToLLVMIRTranslations(registry);
  registry.insert<attn::AttnDialect>();
  // Upstream's tiling drivers (transform.structured.tile_using_forall) tile
  // attn.attention into the tiled form.
  attn::registerAttnTilingInterfaceModels(registry);

  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "attn optimizer driver\n", registry);
  if (isRejectedInput(inputFilename))
    return EXIT_FAILURE;
  return asMainReturnCode(
      MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
}
