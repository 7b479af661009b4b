//===- RunOptions.cpp - attn-run's command-line options -------------------===//
#include "RunOptions.h"
#include <cmath>

namespace attnrun {

cl::OptionCategory runCategory("attn-run options");
cl::opt<std::string> inputFile(cl::Positional,
                               cl::desc("<input.mlir | spec.yaml>"),
                               cl::Required, cl::cat(runCategory));
cl::opt<std::string> entryName("entry",
                               cl::desc("function to run (default: "
                                        "the first public function)"),
                               cl::cat(runCategory));
cl::list<std::string> inputArrays("input",
                                  cl::desc("ROLE=FILE.npy: read an operand"),
                                  cl::cat(runCategory));
cl::opt<bool> randomInputs(
    "random-inputs",
    cl::desc("generate operands that --input does not give from the seed "
             "(without it, every operand must be given once one is)"),
    cl::cat(runCategory));
cl::opt<std::string> outputFile("output", cl::desc("write the result (.npy)"),
                                cl::cat(runCategory));
cl::opt<bool> gaussianOmega(
    "gaussian-omega",
    cl::desc("draw a generated omega (attn.kernelized) i.i.d. N(0, 1) "
             "instead of as orthogonal random features (tests; --help-hidden)"),
    cl::cat(runCategory), cl::Hidden);
cl::opt<uint64_t> seed("seed", cl::desc("seed of generated inputs"),
                       cl::init(0), cl::cat(runCategory));
cl::opt<bool> check("check", cl::desc("compare with the f64 reference"),
                    cl::cat(runCategory));
cl::opt<bool>
    backward("backward",
             cl::desc("run the attention's backward on a seeded dO: dQ, dK, dV "
                      "(--check: against the f64 reference's gradients)"),
             cl::cat(runCategory));
cl::opt<bool> operandGrads(
    "backward-operand-grads",
    cl::desc("--backward: also the gradients of the bias and rel_table "
             "operands and of a score region's captured tensors (default "
             "true; false: dQ, dK, dV only, as when no operand requires grad; "
             "tests; --help-hidden)"),
    cl::init(true), cl::cat(runCategory), cl::Hidden);
cl::opt<double> tolerance(
    "tolerance",
    cl::desc("largest accepted max |out - ref| / max |ref| for --check"),
    cl::init(1e-5), cl::cat(runCategory));
cl::opt<std::string> perturbOutput(
    "perturb-output", cl::Hidden,
    cl::desc("before --check, make the first output element NaN ('nan') or "
             "move it by this fraction of the output's largest magnitude "
             "(tests of --check itself)"),
    cl::cat(runCategory));
/// --perturb-output as a number (NaN for 'nan'), if given.
std::optional<double> perturbAmount() {
  if (perturbOutput.empty())
    return std::nullopt;
  if (perturbOutput == "nan")
    return NAN;
  double amount;
  if (llvm::StringRef(perturbOutput).getAsDouble(amount))
    return std::nullopt;
  return amount;
}
cl::opt<unsigned> repeat("repeat", cl::desc("time N runs, print the median"),
                         cl::init(0), cl::cat(runCategory));
cl::opt<unsigned> threads("num-threads",
                          cl::desc("threads to run on (default: all "
                                   "cores)"),
                          cl::init(0), cl::cat(runCategory));
cl::opt<std::string> linearBackend(
    "linear",
    cl::desc("layer specs: the projections' and feed-forward's GEMM, attn "
             "(the default on the CPU: compiled by attn, weights packed "
             "once, bias, activation and residual fused) | openblas (f32 "
             "layers only: OpenBLAS sgemm, the other steps in passes of "
             "their own) | device (the default with --device=vulkan or "
             "cuda: attn's GPU GEMM, weights kept on the device)"),
    cl::value_desc("backend"), cl::init(""), cl::cat(runCategory));
cl::opt<bool> gpuChains(
    "gpu-chains",
    cl::desc("layer specs on a GPU: keep Q, K and V on the device where the "
             "stack can (an encoder's self-attention as one chain with its "
             "products, cross-attention's memory keys and values copied "
             "once); --gpu-chains=false sends them to the host and back "
             "per call (default: true)"),
    cl::init(true), cl::cat(runCategory));
cl::opt<std::string> contextParallel(
    "context-parallel",
    cl::desc("under mpirun: split the sequence over the ranks, ring | "
             "zigzag (ring, causal-balanced layout) | ulysses "
             "(docs/Distributed.md); rank 0 checks and compares with a "
             "single-process run"),
    cl::value_desc("scheme"), cl::cat(runCategory));
cl::opt<bool> tensorParallel(
    "tensor-parallel",
    cl::desc("layer specs under mpirun: each rank holds a slice of every "
             "layer's heads and feed-forward units; rank 0 checks and "
             "compares with a single-process run"),
    cl::cat(runCategory));
cl::opt<std::string> loadLibrary(
    "load",
    cl::desc("run this shared library from attn-compile --emit=so instead of "
             "JIT-compiling the input (which still names the operands and "
             "the reference)"),
    cl::value_desc("lib.so"), cl::cat(runCategory));
cl::opt<bool>
    generic("generic",
            cl::desc("compile with the generic path only (no vectorized "
                     "CPU kernels)"),
            cl::cat(runCategory));
cl::opt<std::string> device(
    "device",
    cl::desc("where the kernel runs: cpu (compiled for this host; the "
             "default), vulkan (SPIR-V on the Vulkan device "
             "$ATTN_VULKAN_DEVICE, else the first GPU, else lavapipe) or "
             "cuda (PTX on CUDA device $ATTN_CUDA_DEVICE, default 0)"),
    cl::init("cpu"), cl::cat(runCategory));
cl::opt<std::string>
    gpuTarget("gpu-target",
              cl::desc("the target a GPU device compiles for: vulkan (= "
                       "vulkan-lavapipe, the default of --device=vulkan) or "
                       "vulkan-generic; cuda (= cuda-sm80, the default of "
                       "--device=cuda; newer GPUs JIT its PTX), cuda-sm90 or "
                       "cuda-sm90a (Hopper's warpgroup mma)"),
              cl::cat(runCategory));

/// --gpu-target, or the default of --device.
std::string effectiveGpuTarget() {
  if (!gpuTarget.empty())
    return gpuTarget;
  return device == "cuda" ? "cuda" : "vulkan";
}
cl::opt<bool> emulateMma(
    "gpu-emulate-mma",
    cl::desc("--device=vulkan: run f16 / bf16 attention on the tensor-core "
             "kernel of the CUDA target, each mma emulated in workgroup "
             "memory (a test of that kernel; slow)"),
    cl::cat(runCategory));

cl::opt<bool> emulateWgmma(
    "gpu-emulate-wgmma",
    cl::desc("--device=vulkan: run f16 / bf16 attention on the warpgroup "
             "kernel of cuda-sm90a, each wgmma emulated in workgroup memory "
             "from its descriptors (a test of that kernel; slow)"),
    cl::cat(runCategory));

cl::opt<int64_t> gpuWorkgroupRows(
    "gpu-workgroup-rows",
    cl::desc("--device=vulkan|cuda: query rows per workgroup, a multiple of "
             "16 up to 256 (default: the target's; cuda-sm90a's 128 are two "
             "warpgroups)"),
    cl::init(0), cl::cat(runCategory));

cl::opt<bool> tf32(
    "gpu-tf32",
    cl::desc("--device=cuda (or vulkan with --gpu-emulate-mma): f32 "
             "attention on the tensor-core kernel with TF32 products (Q, K, "
             "V and P rounded to 10-bit mantissas; --check then holds it to "
             "the TF32 bar)"),
    cl::cat(runCategory));

cl::opt<bool> tf32x3(
    "gpu-3xtf32",
    cl::desc("as --gpu-tf32 with 3xTF32 products (each operand split into "
             "high and low TF32 parts, three mma per product): about f32's "
             "error, held to the f32 bar"),
    cl::cat(runCategory));

/// Why --device, --gpu-target and --gpu-emulate-mma do not go together, or
/// "".
std::string checkDeviceOptions() {
  if (device != "cpu" && device != "vulkan" && device != "cuda")
    return "--device must be cpu, vulkan or cuda";
  if (device != "cpu" &&
      !llvm::StringRef(effectiveGpuTarget()).starts_with(device.getValue()))
    return device == "vulkan" ? "--gpu-target of --device=vulkan must be "
                                "vulkan, vulkan-lavapipe or vulkan-generic"
                              : "--gpu-target of --device=cuda must be cuda, "
                                "cuda-sm80, cuda-sm90 or cuda-sm90a";
  if (gpuWorkgroupRows.getNumOccurrences() && device == "cpu")
    return "--gpu-workgroup-rows applies to --device=vulkan or cuda";
  if ((emulateMma || emulateWgmma) && device != "vulkan")
    return std::string(emulateMma ? "--gpu-emulate-mma"
                                  : "--gpu-emulate-wgmma") +
           " applies to --device=vulkan";
  if (tf32 && tf32x3)
    return "--gpu-tf32 and --gpu-3xtf32 exclude each other";
  if ((tf32 || tf32x3) && device != "cuda" &&
      !(device == "vulkan" && emulateMma))
    return std::string(tf32 ? "--gpu-tf32" : "--gpu-3xtf32") +
           " applies to --device=cuda (or --device=vulkan with "
           "--gpu-emulate-mma)";
  if (cpuTarget.getNumOccurrences() && device != "cpu")
    return "--target names the CPU target; --device=" + device.getValue() +
           " takes --gpu-target";
  return "";
}
/// The kernel when --device=vulkan or cuda (timed by the device).
attnrt::GpuKernel *gpuKernel = nullptr;
cl::opt<std::string> cpuTarget(
    "target",
    cl::desc("the CPU the kernels are for: cpu-avx2, cpu-avx512, "
             "cpu-avx512-bf16, cpu-amx or host (default: this CPU's; the "
             "target may use no feature this CPU lacks)"),
    cl::init(""), cl::cat(runCategory));
cl::opt<attnrt::Bf16Products> bf16Products(
    "bf16-products",
    cl::desc("how bf16 attention products, and the products of dtype bf16 "
             "layers, run on the CPU"),
    cl::values(clEnumValN(attnrt::Bf16Products::Auto, "auto",
                          "AMX tiles, else vdpbf16ps, else widened (default)"),
               clEnumValN(attnrt::Bf16Products::Amx, "amx", "AMX tiles"),
               clEnumValN(attnrt::Bf16Products::Dot, "dot",
                          "vdpbf16ps (AVX-512 BF16)"),
               clEnumValN(attnrt::Bf16Products::Widen, "widen",
                          "widened to f32 vectors")),
    cl::init(attnrt::Bf16Products::Auto), cl::cat(runCategory));
// LLVM itself registers --stats (its statistics, empty in release builds);
// attn-run reads the same flag: --stats prints the key tiles the vectorized
// kernels visited and how many the pattern keeps something of.
cl::extrahelp statsHelp(
    "\n--stats: print the key tiles the vectorized kernels visited and how "
    "many tiles the pattern keeps something of (by the reference)\n");
bool stats = false;
cl::opt<int64_t> queryTile("q-tile", cl::desc("query rows per tile"),
                           cl::init(64), cl::cat(runCategory));
cl::opt<int64_t> keyTile("kv-tile",
                         cl::desc("key rows per tile (generic path)"),
                         cl::init(128), cl::cat(runCategory));
cl::opt<int64_t>
    cpuKeyTile("cpu-kv-tile",
               cl::desc("key rows per tile (vectorized CPU path; 0: chosen per "
                        "pattern)"),
               cl::init(0), cl::cat(runCategory));

// Layer specs (RunLayers.h).
cl::OptionCategory layerCategory("Layer specs");
cl::opt<std::string>
    weightsFile("weights", cl::desc("the layer stack's weights (.safetensors)"),
                cl::cat(layerCategory));
cl::opt<std::string> writeWeights(
    "write-random-weights",
    cl::desc("write seeded random weights for the layer spec and exit"),
    cl::value_desc("FILE.safetensors"), cl::cat(layerCategory));
cl::opt<std::string>
    memoryFile("memory",
               cl::desc("encoder output [B, M, d_model] for cross-attention"),
               cl::value_desc("FILE.npy"), cl::cat(layerCategory));
cl::opt<int64_t> decodeSteps(
    "decode-steps",
    cl::desc("decode the last N input tokens one at a time through the KV "
             "cache and compare with the whole-sequence pass"),
    cl::init(0), cl::cat(layerCategory));
cl::opt<int64_t>
    genLength("length",
              cl::desc("tokens of a generated input (and the length random "
                       "Linformer projections are made for)"),
              cl::init(128), cl::cat(layerCategory));
cl::opt<int64_t> genBatch("batch", cl::desc("batch of a generated input"),
                          cl::init(1), cl::cat(layerCategory));
cl::opt<int64_t> genMemory(
    "memory-length",
    cl::desc("rows of a generated memory (default: the input's length)"),
    cl::init(0), cl::cat(layerCategory));
cl::list<int64_t> packedLengths(
    "lengths",
    cl::desc("run sequences of these lengths packed in one input [1, total, "
             "d_model] and compare each with running it alone"),
    cl::CommaSeparated, cl::cat(layerCategory));
cl::opt<bool> paddedLengths(
    "padded",
    cl::desc("with --lengths: run the sequences padded to the longest, NaN "
             "in the padding, and compare their rows"),
    cl::cat(layerCategory));
cl::opt<std::string> serve(
    "serve",
    cl::desc("replay a synthetic continuous-batching trace of N sequences "
             "(decoders), each compared with decoding it alone; then "
             "key=value: rate (Poisson arrivals per second, 0: all at "
             "once), prompt and output (mean lengths, uniform 1..2x), live "
             "(most live sequences), step (most tokens per step), paged (0: "
             "rows per sequence)"),
    cl::value_desc("N[,key=value...]"), cl::cat(layerCategory));
cl::opt<bool> allowNonFinite(
    "allow-nonfinite",
    cl::desc("run NaN or infinite weights and inputs (refused by default: "
             "every output would be NaN, and so would the reference)"),
    cl::cat(layerCategory));
cl::opt<bool> allowUnusedWeights(
    "allow-unused-weights",
    cl::desc("warn about tensors of --weights the layer does not read "
             "(refused by default: weights of another layer spec)"),
    cl::cat(layerCategory));
cl::opt<bool> progress("progress",
                       cl::desc("print each layer and decoding step"),
                       cl::cat(layerCategory));

} // namespace attnrun
