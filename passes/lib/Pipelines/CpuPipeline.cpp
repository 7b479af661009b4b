//===- CpuPipeline.cpp - attn IR to LLVM for the host CPU -----------------===//
//
// The pipeline is built in C++ from typed pass options (no pass registry
// involved): a shared front (verify the target, decompose the families)
// and the CPU tail (kernels, tiling, bufferization, OpenMP, LLVM dialect).
// `attn-opt --attn-cpu-pipeline` prints the equivalent pass list with
// --dump-pass-pipeline.
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/Passes.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Transforms/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::buildSharedFront(
    OpPassManager &pm, StringRef target,
    function_ref<void(OpPassManager &)> targetKernels, int64_t workgroupRows) {
  // The module's #attn.target, which every later pass reads; what that
  // target cannot lower yet is refused at its location, and the
  // efficient-attention ops become linalg plus attn.attention.
  pm.addPass(
      createAttnSetTarget(AttnSetTargetOptions{target.str(), workgroupRows}));
  pm.addPass(createAttnVerifyTarget());
  if (targetKernels)
    targetKernels(pm);
  pm.addPass(createAttnDecomposeLinformer());
  pm.addPass(createAttnDecomposeRope());
  pm.addPass(createAttnDecomposeNystrom());
  pm.addPass(createAttnDecomposeKernelized());
  pm.addPass(createAttnDecomposeLsh());
  pm.addPass(createAttnDecomposeRouting());
  pm.addPass(createAttnFourierMixToCall());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::attn::buildCpuPipeline(OpPassManager &pm,
                                  const CpuPipelineOptions &options) {
  // Element-wise feature-map attention has its own kernel.
  buildSharedFront(pm, options.target, [&](OpPassManager &front) {
    if (options.cpuKernels)
      front.addPass(createAttnKernelizedToCpu());
  });

  // The tiled form (docs/Design.md): per op, the tiles of the CPU kernel
  // plan for the module's target, or the generic tile sizes when the
  // kernels are off.
  if (options.cpuKernels) {
    AttnTileOptions tile;
    tile.keyTile = options.cpuKeyTile;
    pm.addPass(createAttnTile(tile));
  } else {
    pm.addPass(createAttnTile(AttnTileOptions{options.queryTile.getValue(),
                                              options.keyTile.getValue(),
                                              /*forTarget=*/false}));
  }
  // The CPU tail: the vectorized kernels lower what they cover, the generic
  // lowering the rest.
  if (options.cpuKernels) {
    AttnToCpuKernelsOptions kernels;
    kernels.countTiles = options.countTiles;
    kernels.reportTiles = options.reportTiles;
    pm.addPass(createAttnToCpuKernels(kernels));
  }
  // Paged caches the kernels did not read in place: their rows, gathered.
  pm.addPass(createAttnDecomposePagedKv());
  // The backward: the fused kernel where it covers the op, else loops of
  // linalg.
  if (options.cpuKernels) {
    AttnAttentionGradToCpuOptions gradKernel;
    gradKernel.countTiles = options.countTiles;
    pm.addPass(createAttnAttentionGradToCpu(gradKernel));
  }
  AttnLowerAttentionGradOptions grad;
  grad.countTiles = options.countTiles;
  pm.addPass(createAttnLowerAttentionGrad(grad));
  pm.addPass(createAttnLowerOnlineAttention());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // linalg.softmax left outside attention has no loop lowering.
  pm.addPass(createAttnDecomposeAggregatedOps());
  pm.addPass(createAttnApproximateMath());
  // The decompositions' linalg ops: (batch, head) loops on all cores.
  // Sums over a strided dim become contiguous vector updates.
  pm.addPass(createAttnInterchangeReductions());
  // Contractions stay whole for the GEMM (below) when the kernels are on.
  pm.addPass(createAttnParallelizeLinalg(
      AttnParallelizeLinalgOptions{options.cpuKernels.getValue()}));
  pm.addPass(createCanonicalizerPass());

  // Loop-carried tile state is re-allocated per step for now; the
  // deallocation pipeline frees it.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Destination-passing entry points (docs/Runtime.md, "Calling
  // convention"): each result becomes a trailing output argument the caller
  // owns, and the allocation the result was computed in becomes that
  // argument, so no kernel allocates its result.
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.hoistDynamicAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  bufferization::buildBufferDeallocationPipeline(pm);

  // Matrix products (layer projections) on buffers: the blocked GEMM.
  // Two forall iterations per thread when the count is known.
  if (options.cpuKernels) {
    AttnMatmulToCpuGemmOptions gemm;
    if (options.numThreads > 0)
      gemm.parallelTiles = 2 * options.numThreads;
    pm.addPass(createAttnMatmulToCpuGemm(gemm));
  }

  // Tiles of (batch, head, query block) run on all cores via OpenMP; the
  // alloca scopes scf-to-openmp adds would block scf-to-cf.
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createForallToParallelLoopPass());
  pm.addPass(createConvertSCFToOpenMPPass(
      ConvertSCFToOpenMPPassOptions{unsigned(options.numThreads.getValue())}));
  pm.addPass(createAttnInlineAllocaScopes());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createSCFToControlFlowPass());

  // bf16 conversions as integer arithmetic where the target has no
  // instruction for them.
  pm.addPass(createAttnExpandBf16());

  // To the LLVM dialect.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Heap buffers come from the runtime's allocator (KernelAllocator.h),
  // which keeps large blocks for the next call.
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  // AMX and x86vector ops appear only where the target has them.
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.amx = true;
  vectorToLLVM.x86Vector = true;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::attn::registerAttnPipelines() {
  PassPipelineRegistration<CpuPipelineOptions>(
      "attn-cpu-pipeline", "Lower attn IR to the LLVM dialect for the host CPU",
      buildCpuPipeline);
  PassPipelineRegistration<GpuPipelineOptions>(
      "attn-gpu-pipeline",
      "Lower attn IR to GPU kernels in the target's dialect (SPIR-V, or a "
      "gpu.binary of PTX)",
      [](OpPassManager &pm, const GpuPipelineOptions &options) {
        buildGpuKernelPipeline(pm, options);
        buildGpuLoweringPipeline(pm, options);
      });
}
