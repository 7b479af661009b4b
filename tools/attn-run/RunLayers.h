//===- RunLayers.h - attn-run on a layer spec -------------------*- C++ -*-===//
#ifndef ATTN_TOOLS_ATTNRUN_RUNLAYERS_H
#define ATTN_TOOLS_ATTNRUN_RUNLAYERS_H

#include "attn/Compiler/HostCompiler.h"
#include "attn/Compiler/Transformer.h"
#include "llvm/Support/SourceMgr.h"
#include <cstdint>
#include <optional>
#include <string>

namespace attnrt {

/// A synthetic serving trace (attn-run --serve): sequences arrive by a
/// Poisson process, prompts and outputs of lengths drawn uniformly from
/// 1 to twice their means, at most `maxLive` live at once, each step at
/// most `stepTokens` tokens (decode tokens first, then prompt chunks).
struct ServeTrace {
  int64_t sequences = 0;
  double arrivalRate = 0; ///< per second; 0: all arrive at the start
  int64_t promptMean = 32, outputMean = 16;
  int64_t maxLive = 16, stepTokens = 256;
  bool pagedCache = true; ///< off: each sequence keeps its own rows
};

/// Reads --serve's "N,key=value,..." into `trace` ("" leaves it off): ""
/// or what is wrong.
std::string parseServeTrace(llvm::StringRef text, ServeTrace &trace);

struct LayerRunOptions {
  std::string weights;            ///< --weights
  std::string writeRandomWeights; ///< --write-random-weights
  std::string input, memory;      ///< --input [x=]FILE, --memory FILE
  std::string output;
  int64_t batch = 1, length = 128, memoryLength = 0; ///< generated inputs
  int64_t decodeSteps = 0;
  uint64_t seed = 0;
  bool check = false, progress = false;
  double tolerance = 1e-5;
  /// --tolerance was given: it also bounds 16-bit layers (whose bar is
  /// otherwise twice the naive layer's error).
  bool toleranceGiven = false;
  /// --perturb-output (tests of --check itself): NaN, or a relative amount
  /// added to the first output element before it is checked.
  std::optional<double> perturb;
  unsigned repeat = 0, numThreads = 0;
  /// --device=vulkan|cuda: the GPU target attention compiles for (the
  /// rest of each layer stays on the host); empty for the CPU.
  std::string gpuTarget;
  /// The --gpu-* flags: TF32 / 3xTF32 products, emulated mma, workgroup
  /// rows (TransformerOptions::gpuCompile).
  attnrt::GpuCompileOptions gpuCompile;
  /// --context-parallel: under mpirun, each rank runs its contiguous share
  /// of the tokens, self-attention ring or ulysses across the ranks.
  std::string contextParallel;
  /// --tensor-parallel: under mpirun, each rank holds a slice of the heads
  /// and feed-forward units and every token.
  bool tensorParallel = false;
  /// --linear=attn (default) | openblas: TransformerOptions::compiledLinears.
  bool compiledLinears = true;
  /// --linear=device (the default on a GPU): TransformerOptions::gpuLinears.
  bool gpuLinears = false;
  /// --gpu-chains: TransformerOptions::gpuChains.
  bool gpuChains = true;
  /// --linear=openblas given: refused for 16-bit layers (OpenBLAS takes f32
  /// weights; they run on attn's GEMM).
  bool openblasAsked = false;
  /// --bf16-products: how a bf16 layer's products run
  /// (TransformerOptions::bf16Products).
  Bf16Products bf16Products = Bf16Products::Auto;
  /// --allow-nonfinite: NaN and infinite weights and inputs run instead of
  /// being refused.
  bool allowNonFinite = false;
  /// --allow-unused-weights: tensors of --weights the layer does not read
  /// are a warning, not an error.
  bool allowUnusedWeights = false;
  /// --lengths: sequences of these lengths packed in one input [1, total,
  /// d_model] (TransformerStack::forwardPacked).
  std::vector<int64_t> lengths;
  /// --padded: the --lengths sequences also run padded ([B, longest,
  /// d_model], NaN in the padding; TransformerStack::forwardPadded), their
  /// rows compared in place of the packed call's.
  bool padded = false;
  /// --serve N,...: replay a synthetic continuous-batching trace of N
  /// sequences (RunServing.cpp); 0 sequences: off.
  ServeTrace serve;
};

/// Runs the layer spec in `sourceMgr`'s main buffer; the exit status.
int runLayerSpec(llvm::SourceMgr &sourceMgr, const LayerRunOptions &options);

/// --serve: replays options.serve's trace through `stack`'s continuous
/// batching (LayerStack::step), reports tokens/s and latency percentiles,
/// and compares every sequence's outputs with decoding it alone (and, with
/// --check, with its f64 reference); the exit status.
/// With a layer's products on a GPU (--linear=device): what they ran and
/// moved (TransformerStack::deviceProducts); nothing otherwise.
void printDeviceProducts(const TransformerStack &stack);

int runServing(const attnspec::LayerSpec &spec, const SafetensorsFile &weights,
               TransformerStack &stack, const LayerRunOptions &options,
               const ReferenceAttention &reference);

/// max |a - b| / max |b|; infinity when either side holds a NaN or an
/// infinity: a layer's output is finite, and two NaN outputs agreeing
/// (poisoned weights or inputs on both sides) is no pass.
double scaledLayerError(const std::vector<float> &a,
                        const std::vector<double> &b);
double scaledLayerError(const std::vector<float> &a,
                        const std::vector<float> &b);

} // namespace attnrt

#endif // ATTN_TOOLS_ATTNRUN_RUNLAYERS_H
