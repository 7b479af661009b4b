//===- LayerArtifact.cpp - the kernels of a layer spec --------------------===//
#include "LayerArtifact.h"
#include "attn/Compiler/LinearKernels.h"
#include "attn/Compiler/Transformer.h"
#include "attn/Runtime/LayerStack.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>

using namespace mlir;
using attnspec::AttentionRole;

OwningOpRef<ModuleOp> attntools::buildLayerModule(
    const attnspec::LayerSpec &spec,
    const std::vector<std::pair<int64_t, int64_t>> &shapes,
    const attn::TargetDescription &target, llvm::SourceMgr &sourceMgr,
    MLIRContext *context, std::string &manifest) {
  auto fileStart = [&] {
    return llvm::SMLoc::getFromPointer(
        sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBufferStart());
  };
  OwningOpRef<ModuleOp> module =
      ModuleOp::create(UnknownLoc::get(context), spec.name);
  manifest = attnrt::serializeLayerConfig(attnrt::layerConfig(spec));
  // Adds one attention kernel, `name`, and its manifest line: "kernel=
  // <function> <role> <batch> <lq> <lk> <operands>[ bf16]".
  auto addKernel = [&](attnspec::Spec attention, const std::string &name,
                       const char *role, int64_t batch, int64_t length,
                       bool paged = false) {
    // A bf16 layer's softmax attention in bf16 where the products run by
    // vdpbf16ps, as the JIT's stacks do.
    bool bf16Attention = target.bf16ProductsByDot() && spec.dtype == "bf16";
    std::vector<std::string> operands;
    OwningOpRef<ModuleOp> kernel = attnrt::buildLayerAttention(
        attention, bf16Attention, sourceMgr, context, operands);
    if (!kernel)
      return false;
    if (paged && !attnrt::pageKeysAndValues(*kernel, operands))
      return true; // no k and v to page: rows kept per sequence
    for (Operation &op :
         llvm::make_early_inc_range(kernel->getBody()->getOperations())) {
      if (auto fn = dyn_cast<func::FuncOp>(op))
        if (fn.isPublic())
          fn.setSymName(name);
      op.moveBefore(module->getBody(), module->getBody()->end());
    }
    manifest += llvm::formatv("kernel={0} {1} {2} {3} {3} {4}{5}\n", name, role,
                              batch, length, llvm::join(operands, ","),
                              bf16Attention ? " bf16" : "")
                    .str();
    return true;
  };
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
      std::string name = attention.name;
      if (length >= 0)
        name += llvm::formatv("_b{0}_l{1}", batch, length).str();
      if (!addKernel(attention, name, self ? "self" : "cross", batch, length))
        return nullptr;
    }
  }
  // A decoder's steps read the KV cache in place with the kernel of one KV
  // head's query group (docs/Transformer.md, "KV cache").
  int64_t any = ShapedType::kDynamic;
  if (std::optional<attnspec::Spec> oneKvHead =
          attnrt::oneKvHeadAttentionSpec(spec, any, any, any))
    if (!addKernel(*oneKvHead, oneKvHead->name, "self-one-kv-head", -1, -1))
      return nullptr;
  // Continuous batching reads a paged KV cache, one sequence per call
  // (docs/Transformer.md, "Serving").
  if (spec.layer.isDecoder() && spec.layer.attention.kind == "softmax") {
    attnspec::Spec paged =
        attnspec::attentionSpec(spec, AttentionRole::Self, 1, any, any);
    if (!addKernel(paged, "self_attention_paged", "self-paged", 1, -1,
                   /*paged=*/true))
      return nullptr;
  }
  // The products on attn's GEMM: "linear=<function> <in> <out> <epilogue>
  // <panel width> <weight type>" per kernel. A bf16 / f16 layer keeps its
  // weights in that type: bf16 in k pairs ("bf16-pairs") where the target
  // has vdpbf16ps, else widened as the micro-kernel reads them (AMX tiles
  // would need the run-time CPU's and OS's consent: not in artifacts);
  // activations stay f32.
  attnrt::FloatFormat weightFormat = attnrt::floatFormatOf(spec.dtype);
  for (const attnrt::LinearUse &use :
       attnrt::fusedLinearUses(attnrt::layerConfig(spec))) {
    attnrt::LinearPanels panels(use.in, use.out, target, weightFormat);
    std::string epilogue = attnrt::linearEpilogueName(use.epilogue);
    std::string name =
        llvm::formatv("linear_{0}x{1}_{2}", use.in, use.out, epilogue).str();
    std::replace(name.begin(), name.end(), '+', '_');
    llvm::Expected<std::string> source = attnrt::linearKernelSource(
        name, attnrt::WeightLayout::Packed, panels, use.epilogue,
        /*onTensors=*/true);
    if (!source) {
      sourceMgr.PrintMessage(fileStart(), llvm::SourceMgr::DK_Error,
                             llvm::toString(source.takeError()));
      return nullptr;
    }
    OwningOpRef<ModuleOp> kernel =
        parseSourceString<ModuleOp>(*source, context);
    if (!kernel)
      return nullptr; // the parser reported it
    for (Operation &op :
         llvm::make_early_inc_range(kernel->getBody()->getOperations()))
      op.moveBefore(module->getBody(), module->getBody()->end());
    manifest += llvm::formatv("linear={0} {1} {2} {3} {4} {5}\n", name, use.in,
                              use.out, epilogue, panels.width(),
                              panels.pairs() ? "bf16-pairs" : spec.dtype)
                    .str();
  }
  return module;
}
