//===- Pipelines.h - named attn pipelines -----------------------*- C++ -*-===//
#ifndef ATTN_PIPELINES_PIPELINES_H
#define ATTN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::attn {

struct CpuPipelineOptions : public PassPipelineOptions<CpuPipelineOptions> {
  Option<int64_t> queryTile{*this, "q-tile",
                            llvm::cl::desc("rows of queries per tile of the "
                                           "generic path"),
                            llvm::cl::init(64)};
  Option<int64_t> keyTile{*this, "kv-tile",
                          llvm::cl::desc("rows of keys/values per tile of "
                                         "the generic path (attn-tile without "
                                         "the kernels)"),
                          llvm::cl::init(128)};
  Option<int64_t> cpuKeyTile{
      *this, "cpu-kv-tile",
      llvm::cl::desc("rows of keys/values per tile of the vectorized path "
                     "(attn-to-cpu-kernels; 0: chosen per pattern)"),
      llvm::cl::init(0)};
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("the CPU to lower for (attn-set-target): cpu-avx2, "
                     "cpu-avx512, cpu-avx512-bf16, cpu-amx or host; empty: "
                     "the module's #attn.target, else cpu-avx2"),
      llvm::cl::init("")};
  Option<bool> cpuKernels{
      *this, "cpu-kernels",
      llvm::cl::desc("use the vectorized kernels where they apply (off: "
                     "everything takes the generic lowering of the "
                     "tiled form)"),
      llvm::cl::init(true)};
  Option<bool> countTiles{
      *this, "count-tiles",
      llvm::cl::desc("the vectorized kernels report the key tiles they "
                     "visit to attn_record_tiles (attn-run --stats)"),
      llvm::cl::init(false)};
  Option<bool> reportTiles{
      *this, "report-tiles",
      llvm::cl::desc("remark per op: key tiles its schedule visits "
                     "(attn-compile --stats)"),
      llvm::cl::init(false)};
  Option<unsigned> numThreads{
      *this, "num-threads",
      llvm::cl::desc("OpenMP threads of parallel loops (0: the OpenMP "
                     "runtime's default, all cores)"),
      llvm::cl::init(0)};
};

/// The front every target shares: attn-set-target for `target` (empty: the
/// module's own), attn-verify-target, the decompositions of the
/// efficient-attention families, canonicalization. `targetKernels` adds a
/// target's own lowerings of family ops before the decompositions (which then
/// take what those leave).
void buildSharedFront(
    OpPassManager &pm, llvm::StringRef target,
    llvm::function_ref<void(OpPassManager &)> targetKernels = {},
    int64_t workgroupRows = 0);

/// attn IR (tensors) -> LLVM dialect for the host CPU: flash tiling,
/// bufferization, loops, LLVM. Functions keep their tensor signatures as
/// memref descriptors (identity layouts).
void buildCpuPipeline(OpPassManager &pm, const CpuPipelineOptions &options);

struct GpuPipelineOptions : public PassPipelineOptions<GpuPipelineOptions> {
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("GPU target: vulkan (= vulkan-lavapipe), "
                     "vulkan-generic, cuda (= cuda-sm80), cuda-sm90, "
                     "cuda-sm90a"),
      llvm::cl::init("vulkan")};
  Option<bool> countTiles{
      *this, "count-tiles",
      llvm::cl::desc("kernels count the key tiles each workgroup visits "
                     "(attn-run --stats)"),
      llvm::cl::init(false)};
  Option<bool> emulateMma{
      *this, "emulate-mma",
      llvm::cl::desc("Vulkan: f16 / bf16 attention on the tensor-core "
                     "kernel with emulated mma (testing)"),
      llvm::cl::init(false)};
  Option<int64_t> workgroupRows{
      *this, "workgroup-rows",
      llvm::cl::desc("query rows per workgroup, a multiple of 16 up to 256 "
                     "(0: the target's)"),
      llvm::cl::init(0)};
  Option<bool> emulateWgmma{
      *this, "emulate-wgmma",
      llvm::cl::desc("Vulkan: f16 / bf16 attention on sm_90a's warpgroup "
                     "kernel with emulated wgmma (testing)"),
      llvm::cl::init(false)};
  Option<bool> tf32{*this, "tf32",
                    llvm::cl::desc("f32 attention on the tensor-core kernel "
                                   "with TF32 products (changes rounding)"),
                    llvm::cl::init(false)};
  Option<bool> tf32x3{*this, "tf32x3",
                      llvm::cl::desc("f32 attention on the tensor-core kernel "
                                     "with 3xTF32 products (about f32's "
                                     "error, three mma per product)"),
                      llvm::cl::init(false)};
};

/// attn IR (tensors) -> gpu.func kernels for a GPU target (docs/Gpu.md):
/// the shared front, attn-tile for the target, attn-to-gpu-kernels.
void buildGpuKernelPipeline(OpPassManager &pm,
                            const GpuPipelineOptions &options);

/// gpu.func kernels -> the target's dialect: a spirv.module (Vulkan) or a
/// gpu.binary holding PTX (CUDA).
void buildGpuLoweringPipeline(OpPassManager &pm,
                              const GpuPipelineOptions &options);

/// Registers `--attn-cpu-pipeline` and `--attn-gpu-pipeline` (both GPU
/// steps).
void registerAttnPipelines();

} // namespace mlir::attn

#endif // ATTN_PIPELINES_PIPELINES_H
