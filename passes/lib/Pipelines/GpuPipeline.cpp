//===- GpuPipeline.cpp - attn IR to Vulkan or CUDA kernels ----------------===//
//
// Two halves, so that tools can read the kernels' launch descriptors
// (attributes of each gpu.func) between them: attn IR to gpu.func kernels,
// then those kernels to SPIR-V (Vulkan) or to PTX in a gpu.binary (CUDA),
// as the target's GpuTargetInfo says.
//
//===----------------------------------------------------------------------===//
#include "attn/Analysis/TargetDescription.h"
#include "attn/Conversion/GpuTargetInfo.h"
#include "attn/Conversion/Passes.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::buildGpuKernelPipeline(OpPassManager &pm,
                                        const GpuPipelineOptions &options) {
  buildSharedFront(pm, options.target, /*targetKernels=*/{},
                   options.workgroupRows);
  // Paged K and V stay: the kernels read them through the table.
  pm.addPass(createAttnTile());
  AttnToGpuKernelsOptions kernels;
  kernels.countTiles = options.countTiles;
  kernels.emulateMma = options.emulateMma;
  kernels.emulateWgmma = options.emulateWgmma;
  kernels.tf32 = options.tf32;
  kernels.tf32x3 = options.tf32x3;
  pm.addPass(createAttnToGpuKernels(kernels));
  OpPassManager &kernelPm = pm.nest<gpu::GPUModuleOp>();
  kernelPm.addPass(createCanonicalizerPass());
  kernelPm.addPass(createCSEPass());
}

void mlir::attn::buildGpuLoweringPipeline(OpPassManager &pm,
                                          const GpuPipelineOptions &options) {
  // The API's passes (GpuTargetInfo); an unknown target was refused by
  // attn-set-target, a CPU one by attn-to-gpu-kernels.
  std::optional<TargetDescription> target =
      TargetDescription::lookup(options.target);
  if (std::shared_ptr<const GpuTargetInfo> api =
          target ? GpuTargetInfo::get(*target) : nullptr)
    api->addLoweringPasses(pm);
}
