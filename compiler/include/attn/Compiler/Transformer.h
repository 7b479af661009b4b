//===- Transformer.h - run stacks of Transformer layers ---------*- C++ -*-===//
//
// The C++ API of the layer runtime (docs/Transformer.md): a stack of encoder
// or decoder layers described by a layer spec, weights from a safetensors
// file, attention compiled by attn for this CPU (one kernel per attention
// block kind), projections and feed-forward on attn's own GEMM (OpenBLAS
// as a baseline), and a KV cache for incremental decoding and
// Transformer-XL memory.
//
//   attnspec::LayerSpec spec = ...;              // attnspec::readLayerSpec
//   auto weights = attnrt::SafetensorsFile::open("w.safetensors");
//   auto stack = attnrt::TransformerStack::create(spec, *weights, {});
//   attnrt::Activations x(1, 128, spec.layer.dModel);  // fill x.data
//   auto y = (*stack)->forward(x);               // [1, 128, d_model]
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_COMPILER_TRANSFORMER_H
#define ATTN_COMPILER_TRANSFORMER_H

#include "attn/Compiler/GpuCompiler.h"
#include "attn/Compiler/HostCompiler.h"
#include "attn/Runtime/Communicator.h"
#include "attn/Runtime/LayerStack.h"
#include "attn/Spec/LayerSpec.h"
#include "attn/Tooling/Safetensors.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnrt {

struct TransformerOptions {
  unsigned numThreads = 0; ///< compiled attention's OpenMP threads; 0: all
  /// A GPU target (vulkan..., cuda...): attention runs on that device, and
  /// with `gpuLinears` the projections and feed-forward products too (the
  /// norms and residual sums of blocks not chained, and the final norm,
  /// stay on the host). Empty: CPU.
  std::string gpuTarget;
  /// On a GPU: the products on the device (compiler/lib/Transformer/
  /// GpuLinear.h: weights uploaded once and kept there, each product's rows
  /// copied in and out). Off: on the host (compiledLinears).
  bool gpuLinears = true;
  /// On a GPU: Q, K and V kept on the device where the stack can (self-
  /// and cross-attention as chains with their products there, a decoder's
  /// KV cache appended there, GpuAttentionChains.cpp; cross-attention's
  /// memory keys and values copied once per memory; each chained block's
  /// norm and residual sum there, GpuBlockNorms.cpp). Off: they cross to
  /// the host and back per call (the baseline bench/gpu_chain.sh compares
  /// with).
  bool gpuChains = true;
  /// How the GPU kernels compile besides their target (gpuTarget's): f32
  /// products on tensor cores (tf32, tf32x3), emulated mma on Vulkan,
  /// query rows per workgroup.
  GpuCompileOptions gpuCompile;
  /// Sequence parallelism (docs/Distributed.md): this process holds a
  /// contiguous share of a sequence of `contextTokens` tokens split over
  /// the ranks of `contextRanks` (start it with reset(first position));
  /// norms, projections and feed-forward run on its tokens, self-attention
  /// (kind softmax) runs context-parallel by `contextScheme` (ring or
  /// ulysses). Null: one process.
  Communicator *contextRanks = nullptr;
  std::string contextScheme = "ring";
  int64_t contextTokens = 0;
  /// Tensor parallelism (Megatron-style): rank r of `tensorRanks` holds
  /// query / key / value heads and feed-forward hidden units [r n / P,
  /// (r + 1) n / P) of every layer (column slices of q/k/v_proj and
  /// linear1, row slices of o_proj and linear2), sees every token, and the
  /// partial outputs of each block are summed across the ranks. P must
  /// divide the heads, key/value heads and ffn_hidden. Null: one process.
  Communicator *tensorRanks = nullptr;
  /// Projections and feed-forward on attn's own GEMM (LinearKernels.h:
  /// weights packed once at creation on huge pages, one kernel per product
  /// shape and epilogue: biases, activations, SwiGLU's gate and residual
  /// sums fused). Off: OpenBLAS sgemm with those steps in passes of their
  /// own, a baseline for f32 layers (bench/RESULTS.md, "Fused epilogues");
  /// bf16 / f16 layers (weights kept in that type) always run on attn's.
  bool compiledLinears = true;
  /// How a bf16 layer's products run: Auto / Amx on AMX tiles where the
  /// host allows them (x rounded to bf16, f32 sums), else (and with Widen
  /// or Dot) bf16 weights widened to f32 in registers.
  Bf16Products bf16Products = Bf16Products::Auto;
  /// Weights that are NaN or infinite (or that a 16-bit layer rounds to
  /// infinity) load instead of being refused (LayerStack::create).
  bool allowNonFiniteWeights = false;
  /// Tensors of the weights file that the stack does not read are a
  /// warning through `warn` instead of an error.
  bool allowUnusedWeights = false;
  /// Continuous batching keeps its KV cache in pages of one pool, read in
  /// place by the kernels (LayerStack::step); off: each sequence keeps its
  /// own rows (the baseline of bench/serve.sh).
  bool pagedKvCache = true;
  std::function<void(const std::string &)> warn;
  /// Called after each layer with (layer index, layers, seconds): progress
  /// output for long runs.
  std::function<void(int64_t, int64_t, double)> onLayer;
};

/// What the executor (LayerStack.h) and ahead-of-time layer artifacts need
/// of `spec`.
LayerConfig layerConfig(const attnspec::LayerSpec &spec);

/// Whether `role`'s attention kernel takes any batch and length (kind
/// softmax, and every cross-attention); the others are compiled per size.
bool attentionTakesAnyLength(const attnspec::LayerSpec &spec,
                             attnspec::AttentionRole role);

/// The attention spec of a decoder's per-KV-head kernel
/// (AttentionBlock::SelfOneKvHead: the query heads of one KV head over its
/// keys, q [B, H / Hkv, Lq, D], k and v [B, 1, Lk, D]), or nothing when the
/// layer has no such kernel: not a decoder, not kind softmax, or terms
/// that depend on the head other than through a table (ALiBi's slopes; any
/// score modifier but soft-capping). T5's table [H, buckets] is handed
/// over per KV head: its group's rows, [H / Hkv, buckets].
std::optional<attnspec::Spec>
oneKvHeadAttentionSpec(const attnspec::LayerSpec &spec, int64_t batch,
                       int64_t queryLen, int64_t keyLen);

/// Rewrites the attention function of `module` (buildLayerAttention's,
/// batch 1 with dynamic lengths) into the SelfPaged kernel (LayerStack.h):
/// its k and v arguments become pools `k_pages` and `v_pages` [pages, Hkv,
/// kKvPageRows, D] read through attn.paged_kv with a `page_table` [1,
/// pages] (i32) and a `kv_length` [1] (i32) appended. `operands` (the
/// function's operand names) is updated; false when the function has no k
/// and v of that form. `poolPages` and `tablePages`, when not -1, make the
/// pools' and the table's page counts static, and `pageRows` and `batch`
/// set the rows of a page and the sequences (GPU kernels, compiled per
/// size: k and v then have that batch).
bool pageKeysAndValues(mlir::ModuleOp module,
                       std::vector<std::string> &operands,
                       int64_t poolPages = -1, int64_t tablePages = -1,
                       int64_t pageRows = kKvPageRows, int64_t batch = 1);

/// The attention kernel module of `attention` (one of a layer's specs), in
/// bf16 when `bf16` is set (q, k, v and the result in bf16: the stack
/// rounds and widens them, LayerStack.h) and its operands are q, k and v
/// alone; otherwise, and for variant operands, in f32. `bf16` tells which
/// it became; `operands` gets the kernel's operand names. Null (reported
/// to `sourceMgr`) when the spec does not build.
mlir::OwningOpRef<mlir::ModuleOp>
buildLayerAttention(attnspec::Spec attention, bool &bf16,
                    llvm::SourceMgr &sourceMgr, mlir::MLIRContext *context,
                    std::vector<std::string> &operands);

/// The tensors a stack reads, with their shapes (docs/Transformer.md,
/// "Weights"): what a weights file must hold for `spec`. Extra operands of
/// the attention variant (e_proj, omega, ...) are listed with the shape they
/// have for sequences of `length` tokens.
std::vector<std::pair<std::string, std::vector<int64_t>>>
expectedWeights(const attnspec::LayerSpec &spec, int64_t length);

/// FLOPs of one forward call (2 per multiply-add): projections, attention
/// as dense softmax attention (halved when causal) and feed-forward, over
/// `length` new tokens attending to `keyLength` keys (self) and
/// `memoryLength` memory rows (cross).
double layerStackFlops(const attnspec::LayerSpec &spec, int64_t batch,
                       int64_t length, int64_t keyLength, int64_t memoryLength);

class TransformerStack {
public:
  /// Reads and checks every weight `spec` needs from `weights` (missing
  /// tensors and wrong shapes are errors naming them). Kernels are compiled
  /// on first use.
  static llvm::Expected<std::unique_ptr<TransformerStack>>
  create(const attnspec::LayerSpec &spec, const SafetensorsFile &weights,
         TransformerOptions options);
  ~TransformerStack();

  /// Runs the stack on `x` [B, L, d_model]. Encoders see `x` alone. A
  /// decoder continues its sequence: `x` is appended to the KV cache and
  /// its queries attend causally to everything cached (positions continue
  /// after the tokens seen since reset()), so calling forward() token by
  /// token decodes incrementally. `memory` [B, M, d_model] is the encoder
  /// output for cross-attention; given once, it is kept until reset().
  llvm::Expected<Activations> forward(const Activations &x,
                                      const Activations *memory = nullptr);
  /// Sequences of `lengths` packed one after the other in `x` [1, total,
  /// d_model] (LayerStack::forwardPacked).
  llvm::Expected<Activations>
  forwardPacked(const Activations &x, const std::vector<int64_t> &lengths);

  /// Sequences of `lengths` padded in `x` [B, L, d_model]
  /// (LayerStack::forwardPadded).
  llvm::Expected<Activations>
  forwardPadded(const Activations &x, const std::vector<int64_t> &lengths);
  /// Continuous batching (LayerStack::addSequence, removeSequence, step):
  /// live sequences with their own KV caches, and steps that run the new
  /// tokens of any of them at once.
  llvm::Expected<int64_t> addSequence();
  llvm::Error removeSequence(int64_t id);
  llvm::Expected<Activations> step(const std::vector<int64_t> &ids,
                                   const Activations &x,
                                   const std::vector<int64_t> &lengths);
  /// The executor (serving limits, sequence lengths, cache bytes).
  LayerStack &layerStack();

  /// Starts a new sequence: empties the KV cache and the cross-attention
  /// memory. `firstPosition`: where this process's tokens start (sequence
  /// parallelism).
  void reset(int64_t firstPosition = 0);

  /// Tokens seen since reset() (the position of the next token).
  int64_t position() const;

  const attnspec::LayerSpec &getSpec() const;

  /// Bytes of weights this stack holds (a tensor-parallel rank: its slice).
  int64_t weightBytes() const;
  /// The time spent in attention kernels and in the rest since creation.
  double attentionSeconds() const;
  /// The attention kernels compiled since creation: one per block kind
  /// (and, where kernels have static sizes, per size: on a GPU per
  /// capacity, and the paged kernel of a decoder's cache per query
  /// capacity and page size).
  int64_t attentionKernels() const;
  /// On a GPU with a paged KV cache (serving), what went to the device's
  /// copy of the page pools (GpuPagedAttention.h): pools copied whole (new
  /// or grown), and rows of one KV head appended; nothing elsewhere.
  struct DevicePoolCopies {
    int64_t wholePools = 0, rows = 0;
    uint64_t wholeBytes = 0, rowBytes = 0;
  };
  std::optional<DevicePoolCopies> devicePoolCopies() const;
  /// With the products on a GPU (TransformerOptions::gpuLinears): products
  /// run, kernels compiled and submissions to the device, bytes of weights kept
  /// on the device, of product operands copied in and of their results copied
  /// back, and of results read on the device by the next product (feed-forward
  /// hidden units); nothing elsewhere.
  /// Attention blocks chained on the device (Q, K and V kept there)
  /// count their products, submission and bytes here too, their blocks
  /// (self- and cross-attention) and layout, RoPE and insertion kernels
  /// apart, and the blocks' norms run there (`norms`: with the
  /// residual added there too).
  struct DeviceProducts {
    int64_t products = 0, kernels = 0, submissions = 0;
    uint64_t weightBytes = 0, inputBytes = 0, outputBytes = 0, keptBytes = 0;
    int64_t attentionBlocks = 0, crossBlocks = 0, layoutKernels = 0;
    int64_t norms = 0;
  };
  std::optional<DeviceProducts> deviceProducts() const;

private:
  struct Impl;
  explicit TransformerStack(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// The plain double-precision forward pass over a whole sequence (no cache),
/// written from docs/Transformer.md. Attention itself is delegated to
/// `attention`, given the block role, the sizes and the operands by name
/// (q, k, v [B, H, L, D] as float, plus the variant's extra operands); the
/// caller binds it to the attention reference (tooling/lib/Reference.cpp).
using ReferenceAttention = std::function<llvm::Expected<std::vector<double>>(
    attnspec::AttentionRole role, int64_t queryLen, int64_t keyLen,
    const std::map<std::string, const float *> &operands)>;

/// A bf16 / f16 layer's matrix weights are rounded to that type (what the
/// layer holds); `naive` also rounds every matrix product's input and
/// output to it: the layer computed in that type, whose error sets the
/// bar of a 16-bit layer's --check.
llvm::Expected<std::vector<double>>
referenceForward(const attnspec::LayerSpec &spec,
                 const SafetensorsFile &weights, const Activations &x,
                 const Activations *memory, const ReferenceAttention &attention,
                 bool naive = false);

} // namespace attnrt

#endif // ATTN_COMPILER_TRANSFORMER_H
