//===- AttnToGpuKernels.cpp - functions of one attention to GPU kernels ---===//
//
// The pass: each function whose body is one attention in the tiled form
// (TiledForm.h), planned for a GPU target (KernelPlan.h, planGpuKernel),
// becomes a gpu.func kernel in the module's `attn_kernels` gpu.module (a
// function of one attn.attention_grad: two, GpuBackwardKernel.h) and
// the host function goes away: the runtime launches the kernel from the
// descriptor its attributes carry (docs/Gpu.md). Anything else in a module
// for a GPU target is an error at its location.
//
//===----------------------------------------------------------------------===//
#include "GpuBackwardKernel.h"
#include "GpuFlashKernel.h"
#include "attn/Conversion/GpuTargetInfo.h"
#include "attn/Conversion/Passes.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNTOGPUKERNELS
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The one tiled attention `host` computes and returns, or nothing.
std::optional<TiledAttention> matchAttentionFunction(func::FuncOp host) {
  if (host.isExternal() || !host.getBody().hasOneBlock())
    return std::nullopt;
  std::optional<TiledAttention> found;
  for (Operation &op : host.getBody().front()) {
    if (auto forall = dyn_cast<scf::ForallOp>(op)) {
      if (found)
        return std::nullopt;
      found = matchTiledAttention(forall);
      if (!found)
        return std::nullopt;
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (!found || ret.getNumOperands() != 1 ||
          ret.getOperand(0) != found->forall.getResult(0))
        return std::nullopt;
      continue;
    }
    // The forall's destination and the arithmetic of its tile counts.
    if (!(isPure(&op) && op.getNumRegions() == 0 &&
          isa<arith::ArithDialect, tensor::TensorDialect>(op.getDialect())))
      return std::nullopt;
  }
  return found;
}

struct AttnToGpuKernelsPass
    : attn::impl::AttnToGpuKernelsBase<AttnToGpuKernelsPass> {
  using AttnToGpuKernelsBase::AttnToGpuKernelsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<TargetDescription> description =
        TargetDescription::of(module);
    if (!description)
      description = TargetDescription::vulkanLavapipe();
    if (description->isCpu()) {
      module.emitError() << "attn-to-gpu-kernels: the module's target '"
                         << description->name << "' is not a GPU";
      return signalPassFailure();
    }
    OpBuilder b(module.getBodyRegion());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    auto kernels = gpu::GPUModuleOp::create(b, module.getLoc(), "attn_kernels");
    GpuTargetInfo::get(*description)->prepareModule(kernels);

    bool anyFailed = false;
    for (auto host : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (host.isExternal())
        continue;
      if (AttentionGradOp grad = matchAttentionGradFunction(host)) {
        if (failed(checkGpuBackwardSupported(host, grad, *description))) {
          anyFailed = true;
          continue;
        }
        for (gpu::GPUFuncOp kernel :
             buildGpuBackwardKernels(host, grad, *description, kernels))
          anyFailed |= failed(finishGpuKernel(kernel, *description));
        host.erase();
        continue;
      }
      std::optional<TiledAttention> attention = matchAttentionFunction(host);
      if (!attention) {
        host.emitError() << "attn-to-gpu-kernels: '" << host.getName()
                         << "' is not one attention of its arguments; target '"
                         << description->name
                         << "' runs such functions only (the families and "
                            "other ops stay on the CPU for now; layer specs "
                            "run their attention here and the rest on the "
                            "host)";
        anyFailed = true;
        continue;
      }
      KernelPlan plan =
          planGpuKernel(AttentionFacts::of(attention->tile), *description);
      if (failed(checkGpuSupported(host, *attention, plan, *description))) {
        anyFailed = true;
        continue;
      }
      gpu::GPUFuncOp kernel =
          buildGpuFlashKernel(host, *attention, plan, *description, kernels,
                              countTiles, emulateMma, maxKeySplits);
      if (failed(finishGpuKernel(kernel, *description))) {
        anyFailed = true;
        continue;
      }
      host.erase();
    }
    if (anyFailed)
      signalPassFailure();
  }
};

} // namespace
