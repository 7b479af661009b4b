//===- GpuCompiler.h - compile attn IR for a GPU and run it -----*- C++ -*-===//
//
// The compiler side of GPU kernels (docs/Gpu.md): attn IR to SPIR-V or PTX
// plus the launch descriptors, and a Kernel that runs them on a Vulkan or
// CUDA device with the calling convention of the CPU kernels, so that
// attn-run and the tests check every device the same way.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_COMPILER_GPUCOMPILER_H
#define ATTN_COMPILER_GPUCOMPILER_H

#include "attn/Compiler/Jit.h"
#include "attn/Runtime/Gpu.h"

namespace attnrt {

struct GpuCompileOptions {
  /// A GPU target of TargetDescription::lookup (vulkan..., cuda...).
  std::string target = "vulkan";
  /// Kernels count the key tiles they visit (TileCounters.h).
  bool countTiles = false;
  /// Vulkan: f16 / bf16 attention on the tensor-core kernel, each mma
  /// emulated in workgroup memory (tests its fragments on lavapipe).
  bool emulateMma = false;
  /// Vulkan: f16 / bf16 attention on sm_90a's warpgroup kernel, each wgmma
  /// emulated in workgroup memory from its descriptors.
  bool emulateWgmma = false;
  /// Query rows per workgroup (0: the target's; attn-set-target's
  /// workgroup-rows).
  int64_t workgroupRows = 0;
  /// f32 attention on the tensor-core kernel with TF32 products (rounds
  /// Q, K, V and P to 10-bit mantissas: opt-in).
  bool tf32 = false;
  /// f32 attention on the tensor-core kernel with 3xTF32 products (high
  /// and low TF32 parts: about f32's error, three mma per product).
  bool tf32x3 = false;
};

/// What compiling for a GPU gives: one SPIR-V module (Vulkan) or one PTX
/// text (CUDA) holding every kernel, and how to launch each.
using GpuArtifact = GpuProgram;

/// Lowers `module` (attn IR on tensors) with attn-gpu-pipeline for
/// `options.target`. Diagnostics go to the context's handler.
llvm::Expected<GpuArtifact> compileForGpu(mlir::ModuleOp module,
                                          const GpuCompileOptions &options);

/// Runs the kernels of an artifact on a GPU: SPIR-V on a Vulkan device,
/// PTX on a CUDA device. Arguments are the inputs of the source function,
/// then its results (the calling convention of the CPU kernels); the
/// schedule and tile counters are the kernel's own.
class GpuKernel : public Kernel {
public:
  /// Takes the process's device of the kind the artifact's code runs on
  /// (sharedGpuDevice); an error (e.g. no CUDA driver on this machine) when
  /// there is none.
  static llvm::Expected<std::unique_ptr<GpuKernel>>
  create(GpuArtifact artifact);

  llvm::Error call(llvm::StringRef function,
                   llvm::ArrayRef<MemRefDescriptor *> arguments) override;
  /// The same with each operand host memory or a buffer of device().
  llvm::Error call(llvm::StringRef function,
                   const std::vector<GpuOperand> &operands);
  /// GpuFunction::launchesOn for `function` (prepared on first use).
  llvm::Error launchesOn(llvm::StringRef function,
                         const std::vector<GpuOperand> &operands,
                         std::vector<GpuLaunch> &launches);
  /// The device the kernels run on: buffers that stay there between calls.
  GpuDevice &gpuDevice() { return *device; }
  /// Bytes of host operands (inputs copied to the device, results copied
  /// back) of every GpuKernel call in this process so far.
  static uint64_t hostBytesTransferred();
  /// Counts `bytes` that a caller copied to the device for these kernels
  /// on its own (device copies of operands it keeps there).
  static void countHostBytes(uint64_t bytes);

  std::string describeDevice() const { return device->describe(); }
  /// Milliseconds of each dispatch of the last call.
  const std::vector<double> &dispatchTimes() const { return times; }
  /// Dispatches per call (timing).
  unsigned repeats = 1;

private:
  explicit GpuKernel(GpuArtifact artifact) : artifact(std::move(artifact)) {}
  GpuArtifact artifact;
  std::shared_ptr<GpuDevice> device;
  /// The functions called so far, ready for the next call.
  std::vector<std::pair<std::string, std::unique_ptr<GpuFunction>>> prepared;
  llvm::Expected<GpuFunction *> preparedFunction(llvm::StringRef function);
  std::vector<double> times;
};

} // namespace attnrt

#endif // ATTN_COMPILER_GPUCOMPILER_H
