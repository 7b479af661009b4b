//===- LayerArtifact.cpp - the kernels of a layer spec --------------------===//
#include "LayerArtifact.h"
#include "attn/Runtime/Transformer.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using attnspec::AttentionRole;

OwningOpRef<ModuleOp> attntools::buildLayerModule(
    const attnspec::LayerSpec &spec,
    const std::vector<std::pair<int64_t, int64_t>> &shapes,
    llvm::SourceMgr &sourceMgr, MLIRContext *context, std::string &manifest) {
  auto fileStart = [&] {
    return llvm::SMLoc::getFromPointer(
        sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())
            ->getBufferStart());
  };
  if (spec.dtype != "f32") {
    // attn_stack_* keeps f32 weights and runs its products on OpenBLAS.
    sourceMgr.PrintMessage(fileStart(), llvm::SourceMgr::DK_Error,
                           "layer artifacts hold f32 layers; a " + spec.dtype +
                               " layer runs under attn-run");
    return nullptr;
  }
  OwningOpRef<ModuleOp> module =
      ModuleOp::create(UnknownLoc::get(context), spec.name);
  manifest = attnrt::serializeLayerConfig(attnrt::layerConfig(spec));
  std::vector<AttentionRole> roles = {AttentionRole::Self};
  if (spec.layer.hasCrossAttention())
    roles.push_back(AttentionRole::Cross);
  for (AttentionRole role : roles) {
    bool self = role == AttentionRole::Self;
    // (batch, length) of each kernel; -1 where it takes any.
    std::vector<std::pair<int64_t, int64_t>> sizes = shapes;
    if (attnrt::attentionTakesAnyLength(spec, role))
      sizes = {{-1, -1}};
    if (sizes.empty()) {
      sourceMgr.PrintMessage(
          fileStart(), llvm::SourceMgr::DK_Error,
          "attention kind " + spec.layer.attention.kind +
              " is compiled per sequence length: give the shapes to run "
              "with --layer-shape=BATCHxLENGTH");
      return nullptr;
    }
    for (auto [batch, length] : sizes) {
      int64_t size = length < 0 ? ShapedType::kDynamic : length;
      attnspec::Spec attention = attnspec::attentionSpec(
          spec, role, batch < 0 ? ShapedType::kDynamic : batch, size, size);
      std::vector<std::string> operands;
      OwningOpRef<ModuleOp> kernel =
          attnspec::buildModule(attention, sourceMgr, context, &operands);
      if (!kernel)
        return nullptr;
      std::string name = attention.name;
      if (length >= 0)
        name += llvm::formatv("_b{0}_l{1}", batch, length).str();
      for (Operation &op :
           llvm::make_early_inc_range(kernel->getBody()->getOperations())) {
        if (auto fn = dyn_cast<func::FuncOp>(op))
          if (fn.isPublic())
            fn.setSymName(name);
        op.moveBefore(module->getBody(), module->getBody()->end());
      }
      manifest += llvm::formatv("kernel={0} {1} {2} {3} {3} {4}\n", name,
                                self ? "self" : "cross", batch, length,
                                llvm::join(operands, ","))
                      .str();
    }
  }
  return module;
}
