//===- AttnToGpuKernels.cpp - functions of one attention to GPU kernels ---===//
//
// The pass: each function whose body is one attention in the tiled form
// (TiledForm.h), planned for a GPU target (KernelPlan.h, planGpuKernel),
// becomes a gpu.func kernel in the module's `attn_kernels` gpu.module (a
// function of one attn.attention_grad: two, GpuBackwardKernel.h) and
// the host function goes away: the runtime launches the kernel from the
// descriptor its attributes carry (docs/Gpu.md). A function of one
// linalg.matmul (a layer's product) becomes a GEMM kernel
// (GpuLinearKernel.h), a function that returns its argument in another
// layout a gather kernel (GpuLayoutKernel.h), a function of one
// element-wise linalg.generic an element kernel (GpuElementwiseKernel.h),
// a function of row reductions (a norm, a softmax) a row kernel
// (GpuRowReductionKernel.h), a function that inserts an argument into
// another in place an insertion kernel (GpuInsertKernel.h). Anything else in a
// module for a GPU target is an error at its location. The pattern of
// populateAttnToGpuKernelsPatterns does the same per function.
//
//===----------------------------------------------------------------------===//
#include "GpuBackwardKernel.h"
#include "GpuElementwiseKernel.h"
#include "GpuFlashKernel.h"
#include "GpuInsertKernel.h"
#include "GpuLayoutKernel.h"
#include "GpuLinearKernel.h"
#include "GpuRowReductionKernel.h"
#include "attn/Conversion/GpuTargetInfo.h"
#include "attn/Conversion/Passes.h"
#include "attn/Conversion/Patterns.h"
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
    // The forall's destination, the arithmetic of its tile counts, and
    // paged K and V (read in place: matchPagedKeys).
    if (!(isPure(&op) && op.getNumRegions() == 0 &&
          (isa<arith::ArithDialect, tensor::TensorDialect>(op.getDialect()) ||
           isa<PagedKvOp>(op))))
      return std::nullopt;
  }
  return found;
}

/// What lowerToGpuKernels did with a host function.
enum class Lowering { Done, NotAttention, Failed };

/// Builds the kernels of `host` (one attention, one attention_grad, one
/// product of its arguments, one change of layout, one element-wise
/// generic, row reductions or one insertion) into `kernels`; the caller
/// erases `host` when Done. Failed: an error at what is not supported.
Lowering lowerToGpuKernels(func::FuncOp host, const TargetDescription &target,
                           gpu::GPUModuleOp kernels,
                           const GpuKernelOptions &options) {
  if (AttentionGradOp grad = matchAttentionGradFunction(host)) {
    if (failed(checkGpuBackwardSupported(host, grad, target)))
      return Lowering::Failed;
    bool ok = true;
    for (gpu::GPUFuncOp kernel :
         buildGpuBackwardKernels(host, grad, target, kernels))
      ok &= succeeded(finishGpuKernel(kernel, target));
    return ok ? Lowering::Done : Lowering::Failed;
  }
  if (linalg::MatmulOp product = matchLinearFunction(host)) {
    if (failed(checkGpuLinearSupported(host, product, target)))
      return Lowering::Failed;
    return succeeded(finishGpuKernel(
               buildGpuLinearKernel(host, product, target, kernels), target))
               ? Lowering::Done
               : Lowering::Failed;
  }
  SmallVector<Operation *> layout = matchLayoutFunction(host);
  if (!layout.empty()) {
    if (failed(checkGpuLayoutSupported(host, layout, target)))
      return Lowering::Failed;
    return succeeded(finishGpuKernel(
               buildGpuLayoutKernel(host, layout, target, kernels), target))
               ? Lowering::Done
               : Lowering::Failed;
  }
  SmallVector<linalg::GenericOp> rowGenerics = matchRowReductionFunction(host);
  if (!rowGenerics.empty()) {
    if (failed(checkGpuRowReductionSupported(host, rowGenerics, target)))
      return Lowering::Failed;
    return succeeded(finishGpuKernel(
               buildGpuRowReductionKernel(host, rowGenerics, target, kernels),
               target))
               ? Lowering::Done
               : Lowering::Failed;
  }
  if (linalg::GenericOp generic = matchElementwiseFunction(host)) {
    if (failed(checkGpuElementwiseSupported(host, generic, target)))
      return Lowering::Failed;
    return succeeded(finishGpuKernel(
               buildGpuElementwiseKernel(host, generic, target, kernels),
               target))
               ? Lowering::Done
               : Lowering::Failed;
  }
  if (tensor::InsertSliceOp insert = matchInsertFunction(host)) {
    if (failed(checkGpuInsertSupported(host, insert, target)))
      return Lowering::Failed;
    return succeeded(finishGpuKernel(
               buildGpuInsertKernel(host, insert, target, kernels), target))
               ? Lowering::Done
               : Lowering::Failed;
  }
  std::optional<TiledAttention> attention = matchAttentionFunction(host);
  if (!attention)
    return Lowering::NotAttention;
  KernelPlan plan = planGpuKernel(AttentionFacts::of(attention->tile), target);
  if (failed(checkGpuSupported(host, *attention, plan, target)))
    return Lowering::Failed;
  gpu::GPUFuncOp kernel =
      buildGpuFlashKernel(host, *attention, plan, target, kernels, options);
  return succeeded(finishGpuKernel(kernel, target)) ? Lowering::Done
                                                    : Lowering::Failed;
}

/// The module's `attn_kernels` gpu.module, created (and the module made a
/// container) on first use.
gpu::GPUModuleOp getOrCreateKernelModule(ModuleOp module,
                                         const TargetDescription &target,
                                         OpBuilder &b) {
  if (auto existing = module.lookupSymbol<gpu::GPUModuleOp>("attn_kernels"))
    return existing;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());
  auto kernels = gpu::GPUModuleOp::create(b, module.getLoc(), "attn_kernels");
  GpuTargetInfo::get(target)->prepareModule(kernels);
  return kernels;
}

/// The same for pattern drivers: a function of one attention (or its
/// backward) in a module for a GPU target.
struct FunctionToGpuKernels : OpRewritePattern<func::FuncOp> {
  FunctionToGpuKernels(MLIRContext *context, GpuKernelOptions options)
      : OpRewritePattern(context), options(options) {}

  LogicalResult matchAndRewrite(func::FuncOp host,
                                PatternRewriter &rewriter) const override {
    auto module = host->getParentOfType<ModuleOp>();
    std::optional<TargetDescription> target =
        module ? TargetDescription::of(module) : std::nullopt;
    if (host.isExternal() || !target || target->isCpu() ||
        (!matchAttentionGradFunction(host) && !matchAttentionFunction(host) &&
         !matchLinearFunction(host) && matchLayoutFunction(host).empty() &&
         !matchElementwiseFunction(host) &&
         matchRowReductionFunction(host).empty() && !matchInsertFunction(host)))
      return failure();
    gpu::GPUModuleOp kernels =
        getOrCreateKernelModule(module, *target, rewriter);
    if (lowerToGpuKernels(host, *target, kernels, options) != Lowering::Done)
      return failure();
    rewriter.eraseOp(host);
    return success();
  }

  GpuKernelOptions options;
};

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
    gpu::GPUModuleOp kernels = getOrCreateKernelModule(module, *description, b);
    GpuKernelOptions options;
    options.countTiles = countTiles;
    options.emulateMma = emulateMma || emulateWgmma;
    options.emulateWgmma = emulateWgmma;
    options.f32Mma = tf32x3 ? F32Mma::Tf32x3
                     : tf32 ? F32Mma::Tf32
                            : F32Mma::None;
    options.maxKeySplits = maxKeySplits;
    bool anyFailed = false;
    for (auto host : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (host.isExternal())
        continue;
      switch (lowerToGpuKernels(host, *description, kernels, options)) {
      case Lowering::Done:
        host.erase();
        break;
      case Lowering::NotAttention:
        host.emitError() << "attn-to-gpu-kernels: '" << host.getName()
                         << "' is not one attention, one linalg.matmul, one "
                            "change of layout, one element-wise generic, row "
                            "reductions or one insertion of its arguments; "
                            "target '"
                         << description->name
                         << "' runs such functions only (the families and "
                            "other ops stay on the CPU for now; layer specs "
                            "run their attention and products here and the "
                            "rest on the host)";
        anyFailed = true;
        break;
      case Lowering::Failed:
        anyFailed = true;
        break;
      }
    }
    if (anyFailed)
      signalPassFailure();
  }
};

} // namespace

void mlir::attn::populateAttnToGpuKernelsPatterns(RewritePatternSet &patterns,
                                                  bool countTiles,
                                                  bool emulateMma) {
  patterns.add<FunctionToGpuKernels>(patterns.getContext(),
                                     GpuKernelOptions{countTiles, emulateMma});
}
