//===- GpuPipeline.cpp - attn IR to Vulkan or CUDA kernels ----------------===//
//
// Two halves, so that tools can read the kernels' launch descriptors
// (attributes of each gpu.func) between them: attn IR to gpu.func kernels,
// then those kernels to SPIR-V (Vulkan) or to PTX in a gpu.binary (CUDA).
//
//===----------------------------------------------------------------------===//
#include "attn/Analysis/TargetDescription.h"
#include "attn/Conversion/Passes.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Transforms/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::buildGpuKernelPipeline(OpPassManager &pm,
                                        const GpuPipelineOptions &options) {
  buildSharedFront(pm, options.target);
  pm.addPass(createAttnTile());
  // The GPU kernels read dense K and V: paged caches are gathered first.
  pm.addPass(createAttnDecomposePagedKv());
  AttnToGpuKernelsOptions kernels;
  kernels.countTiles = options.countTiles;
  kernels.emulateMma = options.emulateMma;
  pm.addPass(createAttnToGpuKernels(kernels));
  OpPassManager &kernelPm = pm.nest<gpu::GPUModuleOp>();
  kernelPm.addPass(createCanonicalizerPass());
  kernelPm.addPass(createCSEPass());
}

void mlir::attn::buildGpuLoweringPipeline(OpPassManager &pm,
                                          const GpuPipelineOptions &options) {
  std::optional<TargetDescription> target =
      TargetDescription::lookup(options.target);
  if (target && target->api == TargetDescription::Api::Cuda) {
    // NVVM wants unstructured control flow; static memrefs are passed as
    // bare pointers (one kernel parameter per buffer).
    OpPassManager &kernelPm = pm.nest<gpu::GPUModuleOp>();
    kernelPm.addPass(createSCFToControlFlowPass());
    ConvertGpuOpsToNVVMOpsOptions nvvm;
    nvvm.useBarePtrCallConv = true;
    kernelPm.addPass(createConvertGpuOpsToNVVMOps(nvvm));
    kernelPm.addPass(createCanonicalizerPass());
    kernelPm.addPass(createReconcileUnrealizedCastsPass());
    GpuNVVMAttachTargetOptions attach;
    attach.chip = target->chip;
    attach.features = "+ptx80";
    attach.optLevel = 3;
    pm.addPass(createGpuNVVMAttachTarget(attach));
    GpuModuleToBinaryPassOptions binary;
    binary.compilationTarget = "isa";
    pm.addPass(createGpuModuleToBinaryPass(binary));
    return;
  }
  // Vulkan: bf16 conversions as integer operations (SPIR-V has no bf16);
  // math.exp has no pattern in convert-gpu-to-spirv itself.
  OpPassManager &kernelPm = pm.nest<gpu::GPUModuleOp>();
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  kernelPm.addPass(arith::createArithExpandOpsPass(expand));
  kernelPm.addPass(createCanonicalizerPass());
  kernelPm.addPass(createConvertMathToSPIRVPass());
  // 32-bit indices (the pass's default): every buffer is under 2^31 words.
  pm.addPass(createConvertGPUToSPIRVPass(/*mapMemorySpace=*/true));
  OpPassManager &spirvPm = pm.nest<spirv::ModuleOp>();
  spirvPm.addPass(spirv::createSPIRVLowerABIAttributesPass());
  spirvPm.addPass(spirv::createSPIRVUpdateVCEPass());
  spirvPm.addPass(createCanonicalizerPass());
}
