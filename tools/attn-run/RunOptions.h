//===- RunOptions.h - attn-run's command-line options -----------*- C++ -*-===//
//
// The options of attn-run (RunOptions.cpp defines them), shared by its
// main (attn-run.cpp) and the helpers that read them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTNRUN_RUNOPTIONS_H
#define ATTN_TOOLS_ATTNRUN_RUNOPTIONS_H

#include "attn/Compiler/GpuCompiler.h"
#include "attn/Compiler/HostCompiler.h"
#include "llvm/Support/CommandLine.h"
#include <optional>
#include <string>

namespace attnrun {
namespace cl = llvm::cl;

extern cl::OptionCategory runCategory;
extern cl::opt<std::string> inputFile;
extern cl::opt<std::string> entryName;
extern cl::list<std::string> inputArrays;
extern cl::opt<bool> randomInputs;
extern cl::opt<std::string> outputFile;
extern cl::opt<bool> gaussianOmega;
extern cl::opt<uint64_t> seed;
extern cl::opt<bool> check;
extern cl::opt<bool> backward;
extern cl::opt<bool> operandGrads;
extern cl::opt<double> tolerance;
extern cl::opt<std::string> perturbOutput;
extern cl::opt<unsigned> repeat;
extern cl::opt<unsigned> threads;
extern cl::opt<std::string> linearBackend;
extern cl::opt<bool> gpuChains;
extern cl::opt<std::string> contextParallel;
extern cl::opt<bool> tensorParallel;
extern cl::opt<std::string> loadLibrary;
extern cl::opt<bool> generic;
extern cl::opt<std::string> device;
extern cl::opt<std::string> gpuTarget;
extern cl::opt<bool> emulateMma;
extern cl::opt<bool> emulateWgmma;
extern cl::opt<int64_t> gpuWorkgroupRows;
extern cl::opt<bool> tf32;
extern cl::opt<bool> tf32x3;
extern cl::opt<std::string> cpuTarget;
extern cl::opt<attnrt::Bf16Products> bf16Products;
extern cl::opt<int64_t> queryTile;
extern cl::opt<int64_t> keyTile;
extern cl::opt<int64_t> cpuKeyTile;
extern cl::OptionCategory layerCategory;
extern cl::opt<std::string> weightsFile;
extern cl::opt<std::string> writeWeights;
extern cl::opt<std::string> memoryFile;
extern cl::opt<int64_t> decodeSteps;
extern cl::opt<int64_t> genLength;
extern cl::opt<int64_t> genBatch;
extern cl::opt<int64_t> genMemory;
extern cl::list<int64_t> packedLengths;
extern cl::opt<bool> paddedLengths;
extern cl::opt<std::string> serve;
extern cl::opt<bool> allowNonFinite;
extern cl::opt<bool> allowUnusedWeights;
extern cl::opt<bool> progress;

/// --stats (LLVM's flag, read after parsing).
extern bool stats;
/// The kernel when --device=vulkan or cuda (timed by the device).
extern attnrt::GpuKernel *gpuKernel;
/// --perturb-output as a number (NaN for 'nan'), if given.
std::optional<double> perturbAmount();
/// --gpu-target, or the default of --device.
std::string effectiveGpuTarget();
/// Why --device, --gpu-target and --gpu-emulate-mma do not go together, or
/// "".
std::string checkDeviceOptions();

} // namespace attnrun

#endif // ATTN_TOOLS_ATTNRUN_RUNOPTIONS_H
