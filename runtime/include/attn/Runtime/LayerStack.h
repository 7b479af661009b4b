//===- LayerStack.h - the layer-stack executor, free of LLVM ----*- C++ -*-===//
//
// What runs a stack of Transformer layers (docs/Transformer.md) once its
// kernels exist: norms, positions, the KV cache, residuals, a call of a
// compiled attention kernel per attention block and of a linear backend
// per product (projections, feed-forward). Where the kernels come from is
// the caller's: the JIT compiles them on first use (attnrt::TransformerStack,
// Transformer.h), an ahead-of-time artifact of `attn-compile LAYER.yaml
// --emit=so` holds them and lists them in its manifest (the C API's
// attn_stack_*). Links the OpenMP runtime, nothing of LLVM or MLIR, and no
// BLAS.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_LAYERSTACK_H
#define ATTN_RUNTIME_LAYERSTACK_H

#include "attn/Runtime/HalfFloat.h"
#include "attn/Runtime/LinearEpilogue.h"
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace attnrt {

class GpuBuffer; // Gpu.h
struct GpuLaunch;

/// Success, or what went wrong.
class Status {
public:
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status status;
    status.failure = true;
    status.text = std::move(message);
    return status;
  }
  bool failed() const { return failure; }
  const std::string &message() const { return text; }

private:
  bool failure = false;
  std::string text;
};

/// Token activations [batch, length, width], row-major f32.
struct Activations {
  Activations() = default;
  Activations(int64_t batch, int64_t length, int64_t width)
      : batch(batch), length(length), width(width),
        data(batch * length * width) {}
  int64_t batch = 0, length = 0, width = 0;
  std::vector<float> data;
};

/// What the executor needs of a layer spec (attnspec::LayerShape, fields of
/// the same names and meanings; docs/Spec.md, "Layer specs"), with the
/// defaults already applied (kvHeads, headDim set). Ahead-of-time artifacts
/// carry it as text (serializeLayerConfig).
struct LayerConfig {
  std::string name;
  std::string type = "encoder";
  int64_t dModel = 0, heads = 0, kvHeads = 0, headDim = 0, ffnHidden = 0;
  std::string activation = "gelu";
  std::string norm = "layernorm";
  std::string normPosition = "post";
  double normEps = 1e-5;
  bool bias = true;
  int64_t layers = 1;
  bool sharedWeights = false;
  bool crossAttention = true;
  bool finalNorm = false;
  std::string positions = "none";
  int64_t maxPositions = 0;
  double ropeBase = 10000;
  std::string ropeStyle = "half";
  int64_t memoryLength = 0;
  /// The attention variant's kind: softmax kernels take any length and
  /// continue a KV cache; the others see whole sequences.
  std::string attentionKind = "softmax";
  /// Queries and keys share one projection (kind lsh): no k_proj.
  bool sharesQueryKey = false;
  /// The variant's extra operands of the self-attention (e_proj, omega,
  /// rel_table, ...), weights of the layer under these names.
  std::vector<std::string> variantOperands;

  bool isDecoder() const { return type == "decoder"; }
  bool hasCrossAttention() const { return isDecoder() && crossAttention; }
};

/// The rules every layer description obeys, whether it came from a layer
/// spec (YAML, where the reader adds file:line:col) or an artifact's
/// manifest: "" when a stack can have `config`, else what is wrong.
std::string checkLayerConfig(const LayerConfig &config);

/// `config` as "key=value" lines, and back. parseLayerConfig rejects
/// unknown keys, malformed numbers and sizes a stack cannot have.
std::string serializeLayerConfig(const LayerConfig &config);
Status parseLayerConfig(const std::string &text, LayerConfig &config);

/// "[2, 37, 32]": a shape as errors print it.
std::string shapeText(const std::vector<int64_t> &shape);

/// "layers.<i>." (always "layers.0." with shared weights).
std::string layerPrefix(const LayerConfig &config, int64_t index);

/// Which attention of a layer a kernel computes. SelfOneKvHead is the
/// self-attention of one KV head and the query heads that share it
/// (q [B, H / Hkv, Lq, D], k and v [B, 1, Lk, D]): with it a decoder reads
/// its KV cache in place, one call per (sequence, KV head), where the cache
/// keeps spare rows after each head's keys. Only attention whose terms do
/// not depend on the head index has it.
///
/// SelfPaged is the self-attention of one sequence over a paged KV cache
/// (continuous batching, LayerStack::step): q [1, H, Lq, D], the keys and
/// values as pools `k_pages` and `v_pages` [pages, Hkv, kKvPageRows, D],
/// the sequence's `page_table` [1, pages] (i32) and `kv_length` [1] (i32,
/// its rows), the kernel reading the pools through the table in place
/// (attn.paged_kv, docs/Dialect.md). Decoders of kind softmax only.
///
/// SelfCacheRows is a decoder's self-attention over its KV cache
/// (forward() with a cache) read as pools: the operands of SelfPaged with
/// one page per sequence, of the cache's capacity (KvRows keeps [B, Hkv,
/// capacity, D]), and the table [B, 1] listing them. Only providers whose
/// paged kernel takes any page size have it (AttentionKernel::
/// readsAnyPages: a GPU's, which keeps the cache on the device).
enum class AttentionBlock {
  Self,
  Cross,
  SelfOneKvHead,
  SelfPaged,
  SelfCacheRows
};

/// Rows of each KV head in a page of a paged KV cache. 64: decoding 8
/// sequences of 8k-32k keys (D 128, f32) through pages of 16 rows reached
/// 0.87x the speed of rows kept contiguous, of 32 rows 0.92x, of 64 rows
/// 0.96-1.03x (bench/decode_paged.py --page-rows); a page wastes at most
/// 63 rows per sequence.
constexpr int64_t kKvPageRows = 64;

/// One operand of a kernel call: dense row-major of `shape`, f32, or bf16
/// bits (uint16_t) when the kernel takes bf16 (AttentionKernel::bf16).
struct KernelOperand {
  void *data;
  std::vector<int64_t> shape;
  /// For the pools of a SelfPaged call: what keeps the rows, and their
  /// version (newRowsVersion()), which changes whenever rows already there
  /// change other than by appending (a new allocation, a shift). A kernel
  /// that keeps a copy of a pool elsewhere (on a GPU) copies only the
  /// call's last Lq rows while owner and version are those it last saw.
  /// Cross-attention's keys and values (the encoder memory's) carry them
  /// too: while owner, version and size are those it last saw, a GPU
  /// kernel reads its copy without copying them again.
  const void *owner = nullptr;
  uint64_t version = 0;
};

/// A version no rows had before (KernelOperand::version).
uint64_t newRowsVersion();

/// A compiled attention kernel: its operands by name (q, k, v, or a variant
/// operand) and shape (-1 where dynamic), then one output [B, H, Lq, D]
/// that `call` writes into.
struct AttentionKernel {
  std::vector<std::string> argumentNames;
  std::vector<std::vector<int64_t>> argumentShapes;
  /// q, k, v and the output are bf16: the stack rounds q, keeps its KV
  /// cache in bf16 (each key rounded once, when it is appended) and widens
  /// the output.
  bool bf16 = false;
  /// SelfPaged only: the kernel takes pools of any rows per page and any
  /// batch, with a table [B, pages] (a GPU kernel, compiled per size), so
  /// that a decoder's cache (KvRows: one page per sequence, of its
  /// capacity) is read as a pool too.
  bool readsAnyPages = false;
  std::function<Status(const std::vector<KernelOperand> &inputs,
                       const KernelOperand &output)>
      call;

  /// A GPU kernel on buffers that stay on the device (Gpu.h): q [B, H,
  /// capacity, D], k and v [B, Hkv, keyCapacity, D], the per-key bias [B,
  /// 1, 1, keyCapacity] that masks the rows before a sequence's (when
  /// `takesKeyBias`), and the output [B, H, capacity, D].
  struct DeviceOperands {
    GpuBuffer *q = nullptr, *k = nullptr, *v = nullptr, *keyBias = nullptr,
              *output = nullptr;
    /// The variant operands (T5's rel_table), in argumentNames' order.
    std::vector<GpuBuffer *> extras;
  };
  /// Set for a GPU kernel of q, k and v (and the key bias of a kernel at a
  /// capacity, and variant operands): appends its launches on device
  /// operands to
  /// `launches` without running them, so that a backend that keeps Q, K
  /// and V on the device runs it between its products
  /// (LinearBackend::selfAttention, crossAttention). `capacity` and
  /// `keyCapacity` are the query and key rows it is compiled for (the same
  /// for self-attention).
  std::function<Status(const DeviceOperands &operands,
                       std::vector<GpuLaunch> &launches)>
      deviceLaunches;
  int64_t capacity = 0, keyCapacity = 0;
  bool takesKeyBias = false;
  /// Set for a GPU cross-attention kernel with deviceLaunches: the
  /// device's copy of keys or values [B, Hkv, Lk, D] that name their owner
  /// (the encoder memory's, KernelOperand), placed at the end of
  /// keyCapacity rows; made when the owner, version or size is new, and
  /// shared with the kernel's own calls.
  std::function<Status(const KernelOperand &keysOrValues, GpuBuffer *&copy)>
      deviceCopy;

  /// A decoder's cache read as pools on a GPU (SelfCacheRows): q [B, H,
  /// queryRows(Lq), D] with the call's Lq rows last, the host's pools [B,
  /// Hkv, rows, D] (owner and version as KernelOperand's), `keyLength`
  /// rows in use after the call, and the output [B, H, queryRows(Lq), D].
  struct PagedDeviceOperands {
    GpuBuffer *q = nullptr, *output = nullptr;
    KernelOperand keys{nullptr, {}}, values{nullptr, {}};
    int64_t length = 0;
    int32_t keyLength = 0;
    /// The variant operands, in argumentNames' order.
    std::vector<GpuBuffer *> extras;
  };
  /// Set for a GPU SelfCacheRows kernel of f32 q, the pools and variant
  /// operands:
  /// appends its launches on device q and output to `launches`, and sets
  /// `pools` to the device's copies of the key and value pools. These hold
  /// every row but each sequence's last Lq: the caller writes those there
  /// with launches of its own before the kernel's (a step's keys, appended
  /// where the products made them: LinearBackend::selfAttention).
  std::function<Status(const PagedDeviceOperands &operands, GpuBuffer *pools[2],
                       std::vector<GpuLaunch> &launches)>
      pagedDeviceLaunches;
  /// The query rows of a pagedDeviceLaunches call of `lq` queries: a
  /// decoding step's one, or a capacity (Transformer.cpp).
  std::function<int64_t(int64_t lq)> queryRows;
};

/// Finds (or compiles) the kernel of `block` for `batch` sequences of `lq`
/// queries over `lk` keys; the provider keeps it alive. A provider without
/// a SelfOneKvHead kernel sets `kernel` to null and returns ok.
using KernelProvider = std::function<Status(
    AttentionBlock block, int64_t batch, int64_t lq, int64_t lk,
    const AttentionKernel *&kernel)>;

/// Reads weight `name` into `data`. With `required` set, the tensor must
/// have that shape; otherwise its own shape is written to `shape`.
using WeightReader = std::function<Status(
    const std::string &name, const std::vector<int64_t> *required,
    std::vector<int64_t> &shape, std::vector<float> &data)>;

/// The matrix products of the layers (projections and feed-forward):
/// attn's own GEMM, JIT-compiled (Transformer.h, LinearKernels.h) or from
/// an artifact (the C API); OpenBLAS as the baseline (OpenBlasLinear.h).
class LinearBackend {
public:
  /// A weight in the form accumulate() reads (e.g. the GEMM's packed
  /// panels, in the layer's element type).
  class Weight {
  public:
    virtual ~Weight() = default;
    /// Bytes it holds.
    virtual int64_t bytes() const = 0;
  };
  virtual ~LinearBackend() = default;
  /// Turns `weight`, stored [out, in] in f32 as read, into its run-time
  /// form; called once per weight at creation (the stack then drops the
  /// f32 copy).
  virtual Status prepare(int64_t out, int64_t in,
                         const std::vector<float> &weight,
                         std::shared_ptr<const Weight> &prepared) = 0;
  /// y[rows, out] += x[rows, in] W^T, W as prepare() made it.
  virtual Status accumulate(const float *x, int64_t rows,
                            const Weight &weight, float *y) = 0;
  /// The format weights are kept in after prepare(): a weight an f16 or
  /// bf16 backend would round to infinity is refused as it is read.
  virtual FloatFormat weightFormat() const { return FloatFormat::F32; }
  /// Whether apply() finishes products in one pass; otherwise the stack
  /// adds biases, activations and residuals in passes of its own.
  virtual bool fusesEpilogues() const { return false; }
  /// The product and its epilogue (LinearEpilogue.h) in one pass: `bias`
  /// [out] when epilogue.bias, `other` [rows, out] when it reads one.
  virtual Status apply(const float *x, int64_t rows, const Weight &weight,
                       const LinearEpilogue &epilogue, const float *bias,
                       const float *other, float *y) {
    return Status::error("this linear backend fuses no epilogues");
  }
  /// A residual block's norm, for a chain that runs it on the device
  /// (chainsNorms): LayerNorm (`bias` may be null) or RMSNorm (`rms`) over
  /// rows of d_model, with the stack's `weight` and `bias` (their addresses
  /// name them: copied to the device once). A chain given one takes the
  /// stream h as x (not its norm) and h as its `residual`, adds h on the
  /// device, and writes the block's new h to y: pre-norm (`pre`)
  /// h + f(norm(h)), post-norm norm(h + f(h)).
  struct BlockNorm {
    const float *weight = nullptr, *bias = nullptr;
    bool rms = false, pre = true;
    double eps = 1e-5;
  };
  /// Whether feedForward(), selfAttention() and crossAttention() take a
  /// BlockNorm (their block's `norm`).
  virtual bool chainsNorms() const { return false; }
  /// A feed-forward block's products: hidden = act(x Up^T + upBias), or
  /// with SwiGLU (`gate` set) silu(x Gate^T + gateBias) * (x Up^T +
  /// upBias); y = hidden Down^T + downBias (+ residual when given). Biases
  /// may be null.
  struct FeedForward {
    const Weight *up = nullptr, *gate = nullptr, *down = nullptr;
    const float *upBias = nullptr, *gateBias = nullptr, *downBias = nullptr;
    LinearEpilogue::Activation activation = LinearEpilogue::Activation::None;
    /// The block's norm, run in the chain (chainsNorms), or null.
    const BlockNorm *norm = nullptr;
  };
  /// Whether feedForward() runs the block in one call, keeping the hidden
  /// units where the products run (a GPU's memory: they never cross to the
  /// host). Only for a backend that fuses epilogues.
  virtual bool chainsFeedForward() const { return false; }
  virtual Status feedForward(const float *x, int64_t rows,
                             const FeedForward &block, const float *residual,
                             float *y) {
    return Status::error("this linear backend chains no feed-forward");
  }
  /// Self-attention of `batch` whole sequences of `length` rows: x Qkv^T +
  /// qkvBias split into q [B, H, L, D], k and v [B, Hkv, L, D] (the weight's
  /// rows stacked q, k, v), q and k rotated by RoPE when `rope` (row l at
  /// position `position` + l, docs/Transformer.md), `kernel` on them, its
  /// heads merged back into rows, y = merged O^T + oBias. Biases may be
  /// null.
  struct SelfAttention {
    const Weight *qkv = nullptr, *o = nullptr;
    const float *qkvBias = nullptr, *oBias = nullptr;
    int64_t batch = 0, length = 0, heads = 0, kvHeads = 0, headDim = 0;
    const AttentionKernel *kernel = nullptr;
    bool rope = false, ropeInterleaved = false;
    double ropeBase = 10000.0;
    int64_t position = 0;
    /// A decoder's KV cache, for a kernel with pagedDeviceLaunches: the
    /// host's pools [B, Hkv, rows, D] with `keyLength` rows in use after
    /// this call, the last `length` of them this block's keys and values,
    /// which selfAttention appends on the device and reads back into the
    /// same rows of the host's pools (their contents on entry unused).
    KernelOperand *cacheKeys = nullptr, *cacheValues = nullptr;
    int32_t keyLength = 0;
    /// The kernel's variant operands (T5's rel_table), f32, in the order of
    /// its argumentNames.
    std::vector<KernelOperand> operands;
    /// As FeedForward's.
    const BlockNorm *norm = nullptr;
  };
  /// Whether selfAttention() runs such a block in one call, its q, k and
  /// v never leaving where the products run (a GPU's memory): only for a
  /// kernel with AttentionKernel::deviceLaunches (whole sequences) or
  /// pagedDeviceLaunches (a decoder's cache).
  virtual bool chainsSelfAttention(const AttentionKernel &kernel) const {
    return false;
  }
  virtual Status selfAttention(const float *x, const SelfAttention &block,
                               const float *residual, float *y) {
    return Status::error("this linear backend chains no attention");
  }
  /// Cross-attention of `batch` sequences of `length` rows over the
  /// encoder memory's `keys` and `values` [B, Hkv, Lk, D] (f32, with their
  /// owner and version: KernelOperand): x Q^T + qBias split into q [B, H,
  /// L, D], `kernel` on q and the memory's keys and values, its heads
  /// merged back into rows, y = merged O^T + oBias. Biases may be null.
  struct CrossAttention {
    const Weight *q = nullptr, *o = nullptr;
    const float *qBias = nullptr, *oBias = nullptr;
    int64_t batch = 0, length = 0, heads = 0, headDim = 0;
    const AttentionKernel *kernel = nullptr;
    KernelOperand keys{nullptr, {}}, values{nullptr, {}};
    /// As SelfAttention's.
    std::vector<KernelOperand> operands;
    const BlockNorm *norm = nullptr;
  };
  /// Whether crossAttention() runs such a block in one call, q and the
  /// heads never leaving where the products run and the memory's keys and
  /// values copied there once: only for a kernel with deviceLaunches and
  /// deviceCopy.
  virtual bool chainsCrossAttention(const AttentionKernel &kernel) const {
    return false;
  }
  virtual Status crossAttention(const float *x, const CrossAttention &block,
                                const float *residual, float *y) {
    return Status::error("this linear backend chains no attention");
  }
};

/// A product of a stack: x[rows, in] W^T finished by `epilogue`.
struct LinearUse {
  int64_t in = 0, out = 0;
  LinearEpilogue epilogue;
};

/// The distinct products a stack of `config` runs through
/// LinearBackend::apply when its backend fuses epilogues (and no partial
/// sums cross ranks): an ahead-of-time artifact compiles a kernel for each.
std::vector<LinearUse> fusedLinearUses(const LayerConfig &config);

class LayerStack {
public:
  /// Reads every weight `config` needs through `weights` (missing tensors
  /// and wrong shapes are errors naming them). `linear` runs the matrix
  /// products (required). A NaN or infinite weight, or one the backend's
  /// 16-bit format rounds to infinity, is an error naming the tensor and
  /// index unless `allowNonFiniteWeights`: it would make every output NaN,
  /// and a reference computed from the same weights would agree.
  static Status create(const LayerConfig &config, const WeightReader &weights,
                       KernelProvider kernels,
                       std::unique_ptr<LayerStack> &stack,
                       std::shared_ptr<LinearBackend> linear,
                       bool allowNonFiniteWeights = false);
  ~LayerStack();

  /// Runs the stack on `x` [B, L, d_model] (TransformerStack::forward has
  /// the semantics: encoders see `x` alone, decoders continue their
  /// sequence, `memory` feeds cross-attention).
  Status forward(const Activations &x, const Activations *memory,
                 Activations &result);
  /// Variable-length batches, packed: `x` [1, total, d_model] holds the
  /// tokens of sequences of `lengths` one after the other (FlashAttention's
  /// varlen layout, without padding). Products, norms and the feed-forward
  /// run on all the rows at once; positions restart at each sequence, and
  /// each sequence's self-attention sees its own keys only (one kernel call
  /// per sequence on its rows), so each output equals that sequence run
  /// alone. A whole pass: a decoder keeps no KV cache from it (and must
  /// have no sequence in progress); cross-attention and Transformer-XL
  /// memory are refused.
  Status forwardPacked(const Activations &x,
                       const std::vector<int64_t> &lengths,
                       Activations &result);
  /// Variable-length batches, padded: `x` [B, L, d_model] holds sequence
  /// b's `lengths[b]` (1..L) tokens in its first rows, padding after them.
  /// The tokens run packed (forwardPacked): padding rows take no work and
  /// never reach an output (NaN there is harmless); their output rows are
  /// 0.
  Status forwardPadded(const Activations &x,
                       const std::vector<int64_t> &lengths,
                       Activations &result);
  /// Continuous batching (docs/Transformer.md, "Serving"): a decoder keeps
  /// a set of live sequences, each with its own KV cache and position,
  /// apart from forward()'s sequence in progress. addSequence() starts one
  /// and sets `id` (ids are never reused); removeSequence() ends it and
  /// frees its cache. Kind softmax decoders without cross-attention or
  /// Transformer-XL memory only.
  Status addSequence(int64_t &id);
  Status removeSequence(int64_t id);
  /// One step over any subset of the live sequences: `x` [1, total,
  /// d_model] holds `lengths[i]` new tokens of sequence `ids[i]`, one
  /// sequence after the other (whole prompts, chunks of them and single
  /// decode tokens mixed). Products run on all the rows at once; each
  /// sequence's tokens take the positions after those it holds and attend
  /// to its cache and its earlier tokens of this step, so each output
  /// equals decoding that sequence alone. A failed step leaves every
  /// sequence as it was.
  Status step(const std::vector<int64_t> &ids, const Activations &x,
              const std::vector<int64_t> &lengths, Activations &result);
  /// Tokens sequence `id` holds, or -1 when it is not live.
  int64_t sequenceLength(int64_t id) const;
  /// Live sequences.
  int64_t liveSequences() const;
  /// Bytes the live sequences' KV caches hold (with a paged cache: their
  /// pages).
  int64_t cacheBytes() const;
  /// A paged cache's pool: pages it holds, and pages in use (0 and 0 when
  /// the kernels take no paged cache and each sequence keeps its own rows).
  int64_t poolPages() const;
  int64_t usedPages() const;
  /// Limits a step enforces (0: none): live sequences, and tokens a
  /// sequence may hold (its cache's capacity).
  void setServingLimits(int64_t maxSequences, int64_t maxSequenceTokens);
  /// Starts a new sequence: empties the KV cache and the memory.
  /// `firstPosition`: where this process's tokens start in the sequence
  /// (its share of a sequence-parallel run; positions continue from it).
  void reset(int64_t firstPosition = 0);
  /// Tokens seen since reset() (plus its first position).
  int64_t position() const;
  const LayerConfig &config() const;
  /// Seconds spent in attention kernels since creation (with the products
  /// of a block the backend chains: LinearBackend::selfAttention).
  double attentionSeconds() const;
  /// Called after each layer with (layer index, layers, seconds).
  std::function<void(int64_t, int64_t, double)> onLayer;
  /// Tensor parallelism: each rank holds a slice of the heads and of the
  /// feed-forward's hidden units, so the output of each attention and
  /// feed-forward block is a partial sum; this sums it across the ranks in
  /// place (null: one process).
  void setSumAcrossRanks(std::function<Status(std::vector<float> &)> sum);
  /// Bytes of weights this stack holds.
  int64_t weightBytes() const;
  /// "" when every name in `available` (a weights file's tensors, the
  /// weights a caller passes) is a weight this stack read; else a message
  /// naming those it did not (weights of another layer spec: more layers,
  /// a norm with biases where this one takes none, ...).
  std::string unusedWeights(const std::vector<std::string> &available) const;

private:
  struct Impl;
  explicit LayerStack(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace attnrt

#endif // ATTN_RUNTIME_LAYERSTACK_H
