//===- LayerStack.cpp - the layer-stack executor --------------------------===//
//
// One forward call: positions on the input, then per layer the attention
// blocks (projections on sgemm, RoPE, KV cache, the compiled attention
// kernel the KernelProvider hands out), residuals and norms, and the
// feed-forward block. Nothing here knows whether kernels were compiled in
// process or ahead of time.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/LayerStack.h"
#include "KvRows.h"
#include "LayerMath.h"
#include "attn/Runtime/InputLimits.h"
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

using namespace attnrt;
namespace lm = attnrt::layermath;

namespace {
struct LinearWeights {
  std::vector<float> weight, bias;
  int64_t out = 0, in = 0;
  /// The weight as the linear backend holds it (`weight` is then empty).
  std::shared_ptr<const LinearBackend::Weight> prepared;
};
struct NormWeights {
  std::vector<float> weight, bias;
};
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};
struct AttentionWeights {
  LinearWeights q, k, v, o;
  /// Self-attention's q, k and v projections as one product (their weight
  /// rows stacked; q, k and v then hold no weights).
  LinearWeights qkv;
  std::map<std::string, Tensor> extras; ///< variant operands by name
};
struct LayerWeights {
  AttentionWeights self, cross;
  NormWeights norms[3];
  LinearWeights up, gate, down;
};
/// What a decoder layer keeps between calls: its keys and values
/// (KvRows.h), and the cross-attention's over the encoder memory.
struct LayerCache {
  KvRows keys, values;
  KvRows memoryKeys, memoryValues;
};
} // namespace

/// What a fused product computes: y = act(x W^T [+ bias]) [+ residual].
static LinearEpilogue fusedEpilogue(bool bias,
                                    LinearEpilogue::Activation activation,
                                    bool residual) {
  LinearEpilogue epilogue;
  epilogue.accumulate = false;
  epilogue.bias = bias;
  epilogue.activation = activation;
  epilogue.residual = residual;
  return epilogue;
}

struct LayerStack::Impl {
  LayerConfig config;
  KernelProvider kernels;
  std::vector<LayerWeights> layers; ///< one when weights are shared
  std::vector<float> posEmbedding;
  NormWeights finalNorm;
  std::vector<LayerCache> caches;
  int64_t position = 0;
  int64_t firstPosition = 0; ///< of reset(): where this process's tokens start
  /// A decoder's sequences in progress (its KV cache and cross-attention
  /// memory hold rows of that many); 0 after reset().
  int64_t sequences = 0;
  double attentionSeconds = 0;
  std::function<Status(std::vector<float> &)> sumAcrossRanks;
  std::shared_ptr<LinearBackend> linearBackend;

  /// The names of the weights load() read.
  std::set<std::string> weightNames;
  /// A sequence of a packed call (forwardPacked, step): its tokens, the
  /// position of the first and, when serving, the KV caches it continues
  /// (one per layer).
  struct PackedSequence {
    int64_t length = 0, position = 0;
    std::vector<LayerCache> *caches = nullptr;
    /// Serving on a paged cache: the sequence's pages (its page table).
    const std::vector<int32_t> *pages = nullptr;
  };
  /// During a packed call: its sequences, in the order of its rows (empty
  /// otherwise).
  std::vector<PackedSequence> packed;
  /// Continuous batching's live sequences by id.
  struct ServedSequence {
    int64_t length = 0;
    std::vector<LayerCache> caches; ///< without a paged cache
    std::vector<int32_t> pages;     ///< with one: its page table
  };
  std::map<int64_t, ServedSequence> served;
  int64_t nextSequenceId = 0, maxSequences = 0, maxSequenceTokens = 0;
  /// Continuous batching's paged KV cache, when the provider has a
  /// SelfPaged kernel (decided by the first addSequence): per layer a pool
  /// of keys and one of values, [pages, Hkv, kKvPageRows, D] in the
  /// kernel's element type; page p is page p of every layer's pools. Pages
  /// not in use hold NaN, so a kernel reading past a sequence's rows would
  /// show it in every output.
  struct PagePool {
    std::vector<std::vector<char>> keys, values;
    int64_t pages = 0, elementBytes = 4;
    std::vector<int32_t> free;
  };
  std::optional<bool> servesPaged;
  PagePool pool;
  /// Pages for `rows` rows of `sequence` (the pool doubles when it runs
  /// out: the only copy of cached rows, amortized over the pages added).
  Status reservePages(ServedSequence &sequence, int64_t rows);
  /// Back to the pool: pages of `sequence` past its first `rows` rows,
  /// filled with NaN again.
  void releasePages(ServedSequence &sequence, int64_t rows);
  /// Writes rows [position, position + n) of layer `layerIndex`'s keys and
  /// values (f32 [Hkv, n, D]) into the sequence's pages.
  void writePages(int64_t layerIndex, const std::vector<int32_t> &pages,
                  int64_t position, int64_t n, const float *k,
                  const float *v);
  /// The operands of a SelfPaged kernel beyond q and the variant's.
  struct PagedOperands {
    int64_t layerIndex;
    const std::vector<int32_t> *pages;
    int64_t keyLen;
  };

  Status load(const WeightReader &read, bool allowNonFinite);
  /// Stacks each self-attention's q, k and v weights into one product.
  void fuseQkv();
  /// Hands every weight of a product to the linear backend's prepare().
  Status prepareLinears();
  /// y[rows, out] = act(x[rows, in] W^T + bias) (SiluTimesOther: times
  /// `other`), plus `residual` [rows, out] when given: in one pass where
  /// the backend fuses epilogues, else in passes of the stack's.
  Status linear(const LinearWeights &w, const float *x, int64_t rows,
                float *y,
                LinearEpilogue::Activation activation =
                    LinearEpilogue::Activation::None,
                const float *other = nullptr,
                const float *residual = nullptr);
  bool fusesEpilogues() const { return linearBackend->fusesEpilogues(); }
  /// The blocks write their output to `result`, plus `residual` when that
  /// is not null (their last product adds it).
  Status attention(int64_t layerIndex, AttentionBlock block,
                   AttentionWeights &w, LayerCache &cache, const float *x,
                   const Activations *memory, int64_t batch, int64_t length,
                   std::vector<float> &result, const float *residual);
  /// The attention kernel on its operands (q, k, v: f32, or bf16 bits
  /// when the kernel takes bf16; variant operands from `w`) into `output`.
  Status callKernel(const AttentionKernel &kernel, AttentionWeights &w,
                    void *queries, void *keys, void *values, void *output,
                    int64_t batch, int64_t length, int64_t keyLen,
                    const PagedOperands *paged = nullptr);
  /// A decode step on the cache in place: the per-KV-head kernel once per
  /// (sequence, KV head), on that head's query group (adjacent heads of q
  /// and of the output), its block of the cache and the group's rows of
  /// per-head tables in `w` ([H, ...] variant operands: T5's).
  Status callPerKvHead(const AttentionKernel &kernel, AttentionWeights &w,
                       LayerCache &cache, void *queries, void *output,
                       int64_t batch, int64_t length);
  /// A decoder's self-attention over its cache: appends `k` and `v` [batch,
  /// Hkv, length, D] (f32) to `cache`, then runs `kernel` on `queries`
  /// (the kernel's element type) over all the cached rows into `output`:
  /// in place, per KV head, when the cache has spare rows and the provider
  /// has a per-KV-head kernel; else on a dense copy.
  Status attendCached(const AttentionKernel &kernel, AttentionWeights &w,
                      LayerCache &cache, const float *k, const float *v,
                      void *queries, void *output, int64_t batch,
                      int64_t length);
  /// Packed sequences' self-attention: q [1, H, total, D], k and v
  /// [1, Hkv, total, D] (before RoPE; k unused when queries and keys share
  /// a projection) into `heads` [1, H, total, D], one kernel call per
  /// sequence on its rows (and its layer `layerIndex` cache when serving),
  /// RoPE from the sequence's position.
  Status attendPacked(int64_t layerIndex, AttentionWeights &w,
                      const lm::Scratch &q,
                      const lm::Scratch &k, const lm::Scratch &v,
                      lm::Scratch &heads);
  Status feedForward(LayerWeights &w, const float *x, int64_t rows,
                     std::vector<float> &result, const float *residual);
  void normalize(const NormWeights &n, float *x, int64_t rows);
  Status layer(int64_t index, std::vector<float> &h, const Activations *memory,
               int64_t batch, int64_t length);
  /// Positions, the layers and the final norm on `x` into `result`
  /// (forward's work once its input is checked; packed calls too).
  Status run(const Activations &x, const Activations *memory,
             Activations &result,
             const std::function<void(int64_t, int64_t, double)> &onLayer);
  /// "" when `lengths` are >= 1 and add up to the rows of `x` [1, total,
  /// d_model]; else what is wrong.
  static std::string checkPackedLengths(const Activations &x,
                                        const std::vector<int64_t> &lengths);
  /// About the most bytes one forward call on [batch, length] holds at
  /// once (the caller's copies of x and the result included); a lower
  /// bound, in double: the sizes may overflow int64_t.
  double forwardBytes(int64_t batch, int64_t length,
                      int64_t memoryLength) const;
};

double LayerStack::Impl::forwardBytes(int64_t batch, int64_t length,
                                      int64_t memoryLength) const {
  const LayerConfig &l = config;
  double rows = double(batch) * length, d = l.dModel;
  double q = double(l.heads) * l.headDim, kv = double(l.kvHeads) * l.headDim;
  // h, its normalized copy and a block's result; the caller's x and out.
  double floats = rows * 5 * d;
  // A block's projections (fused and split), heads and merged heads.
  floats += rows * (2 * (q + 2 * kv) + 2 * q);
  // The feed-forward's hidden units (and gate).
  floats += rows * l.ffnHidden * (l.activation == "swiglu" ? 2 : 1);
  // A product kernel's packed copy of its input (at most the input).
  floats += rows * std::max({d, q, double(l.ffnHidden)});
  // A decoder keeps keys and values of every layer (blocks grow by
  // doubling), and the encoder memory's; one dense copy is read at a time.
  if (l.isDecoder()) {
    double keys = double(batch) * (position + length) * kv * 2;
    floats += l.layers * 2 * keys + keys;
    floats += l.layers * double(batch) * memoryLength * kv * 2;
  }
  return floats * sizeof(float);
}

/// The first value of `data` that is not finite, or that `format` rounds to
/// infinity; "" when none.
static std::string nonFiniteValue(const std::string &name,
                                  const std::vector<float> &data,
                                  FloatFormat format) {
  for (size_t i = 0; i < data.size(); ++i) {
    float v = data[i];
    bool overflows = std::isfinite(v) && format != FloatFormat::F32 &&
                     !std::isfinite(fromBits(format, toBits(format, v)));
    if (std::isfinite(v) && !overflows)
      continue;
    return "weight '" + name + "' has " +
           (overflows ? std::to_string(v) + ", which overflows " +
                            (format == FloatFormat::F16 ? "f16" : "bf16") + ","
                      : std::string(std::isnan(v) ? "NaN" : "an infinity")) +
           " at index " + std::to_string(i) +
           " (every output would be NaN or infinite)";
  }
  return "";
}

Status LayerStack::Impl::load(const WeightReader &readWeight,
                              bool allowNonFinite) {
  const LayerConfig &l = config;
  // Every weight read is named (unusedWeights) and checked for values no
  // model holds; products' weights also against the backend's format.
  auto readChecked = [&](const std::string &name,
                         const std::vector<int64_t> *required,
                         std::vector<int64_t> &shape, std::vector<float> &into,
                         bool product) {
    weightNames.insert(name);
    Status s = readWeight(name, required, shape, into);
    if (s.failed() || allowNonFinite)
      return s;
    std::string problem = nonFiniteValue(
        name, into, product ? linearBackend->weightFormat() : FloatFormat::F32);
    return problem.empty() ? s : Status::error(problem);
  };
  auto read = [&](const std::string &name, std::vector<int64_t> shape,
                  std::vector<float> &into, bool product = false) {
    std::vector<int64_t> actual;
    return readChecked(name, &shape, actual, into, product);
  };
  auto linear = [&](const std::string &name, int64_t out, int64_t in,
                    LinearWeights &w) {
    w.out = out;
    w.in = in;
    Status s = read(name + ".weight", {out, in}, w.weight, /*product=*/true);
    if (s.failed() || !l.bias)
      return s;
    return read(name + ".bias", {out}, w.bias);
  };
  auto norm = [&](const std::string &name, NormWeights &n) {
    Status s = read(name + ".weight", {l.dModel}, n.weight);
    if (s.failed() || !(l.norm == "layernorm" && l.bias))
      return s;
    return read(name + ".bias", {l.dModel}, n.bias);
  };
  auto attentionBlock = [&](const std::string &p, AttentionWeights &w,
                            bool self) {
    int64_t d = l.dModel, q = l.heads * l.headDim, kv = l.kvHeads * l.headDim;
    Status s = linear(p + "q_proj", q, d, w.q);
    if (!s.failed() && !(self && l.sharesQueryKey))
      s = linear(p + "k_proj", kv, d, w.k);
    if (!s.failed())
      s = linear(p + "v_proj", kv, d, w.v);
    if (!s.failed())
      s = linear(p + "o_proj", d, q, w.o);
    if (s.failed() || !self)
      return s;
    // Variant operands are read with their own shape: some depend on the
    // sequence length (Linformer's E, F), checked against the kernel's
    // operand shapes when it is called.
    for (const std::string &name : l.variantOperands) {
      Tensor &t = w.extras[name];
      s = readChecked(p + name, nullptr, t.shape, t.data, false);
      if (s.failed())
        return s;
    }
    return s;
  };
  if (l.positions == "learned") {
    Status s = read("pos_embedding", {l.maxPositions, l.dModel}, posEmbedding);
    if (s.failed())
      return s;
  }
  layers.resize(l.sharedWeights ? 1 : l.layers);
  for (int64_t i = 0; i < int64_t(layers.size()); ++i) {
    std::string p = layerPrefix(l, i);
    LayerWeights &w = layers[i];
    Status s = attentionBlock(p + "self_attn.", w.self, true);
    if (!s.failed() && l.hasCrossAttention())
      s = attentionBlock(p + "cross_attn.", w.cross, false);
    for (int n = 0; n < (l.hasCrossAttention() ? 3 : 2) && !s.failed(); ++n)
      s = norm(p + "norm" + std::to_string(n + 1), w.norms[n]);
    if (!s.failed())
      s = linear(p + "linear1", l.ffnHidden, l.dModel, w.up);
    if (!s.failed() && l.activation == "swiglu")
      s = linear(p + "linear_gate", l.ffnHidden, l.dModel, w.gate);
    if (!s.failed())
      s = linear(p + "linear2", l.dModel, l.ffnHidden, w.down);
    if (s.failed())
      return s;
  }
  if (l.finalNorm) {
    Status s = norm("final_norm", finalNorm);
    if (s.failed())
      return s;
  }
  caches.resize(l.layers);
  return Status::ok();
}

Status LayerStack::Impl::attention(int64_t layerIndex, AttentionBlock block,
                                   AttentionWeights &w, LayerCache &cache,
                                   const float *x,
                                   const Activations *memory, int64_t batch,
                                   int64_t length, std::vector<float> &result,
                                   const float *residual) {
  const LayerConfig &l = config;
  int64_t rows = batch * length, hd = l.headDim;
  bool self = block == AttentionBlock::Self;
  bool decoding = self && l.isDecoder();
  Status status = Status::ok();
  // [B, heads, n, D]: a projection of `in`, split into heads.
  auto project = [&](const LinearWeights &p, const float *in, int64_t n,
                     int64_t heads) {
    lm::Scratch flat(batch * n * heads * hd), split(flat.size());
    if (Status s = linear(p, in, batch * n, flat.data()); s.failed())
      status = s;
    lm::splitHeads(flat.data(), batch, n, heads, hd, split.data());
    return split;
  };
  // This call's queries, keys and values, f32 [B, H or Hkv, length, D].
  // Self-attention projects them in one product when they are fused.
  lm::Scratch q, k, v;
  if (self && w.qkv.out > 0) {
    lm::Scratch flat(rows * w.qkv.out);
    if (Status s = linear(w.qkv, x, rows, flat.data()); s.failed())
      return s;
    q.resize(rows * l.heads * hd);
    k.resize(rows * l.kvHeads * hd);
    v.resize(k.size());
    lm::splitHeads(flat.data(), batch, length, l.heads, hd, q.data(),
                   w.qkv.out);
    lm::splitHeads(flat.data() + l.heads * hd, batch, length, l.kvHeads, hd,
                   k.data(), w.qkv.out);
    lm::splitHeads(flat.data() + (l.heads + l.kvHeads) * hd, batch, length,
                   l.kvHeads, hd, v.data(), w.qkv.out);
  } else {
    q = project(w.q, x, length, l.heads);
    if (self && !l.sharesQueryKey)
      k = project(w.k, x, length, l.kvHeads);
    if (self)
      v = project(w.v, x, length, l.kvHeads);
  }
  if (self && !packed.empty()) {
    lm::Scratch heads(rows * l.heads * hd);
    if (Status s = attendPacked(layerIndex, w, q, k, v, heads); s.failed())
      return s;
    lm::Scratch merged(rows * l.heads * hd);
    lm::mergeHeads(heads.data(), batch, length, l.heads, hd, merged.data());
    result.resize(rows * l.dModel); // written whole by the product
    return linear(w.o, merged.data(), rows, result.data(),
                  LinearEpilogue::Activation::None, nullptr, residual);
  }
  if (self && l.positions == "rope") {
    bool interleaved = l.ropeStyle == "interleaved";
    lm::rope(q.data(), batch, l.heads, length, hd, position, l.ropeBase,
             interleaved);
    if (!l.sharesQueryKey)
      lm::rope(k.data(), batch, l.kvHeads, length, hd, position, l.ropeBase,
               interleaved);
  }
  if (self && l.sharesQueryKey)
    k = q;
  if (!self && memory) {
    // The encoder memory's keys and values, kept for the calls that follow.
    lm::Scratch memoryKeys = project(w.k, memory->data.data(), memory->length,
                                     l.kvHeads),
                memoryValues = project(w.v, memory->data.data(),
                                       memory->length, l.kvHeads);
    const AttentionKernel *cross = nullptr;
    if (status.failed())
      return status;
    if (Status s = kernels(block, batch, length, memory->length, cross);
        s.failed())
      return s;
    cache.memoryKeys = KvRows();
    cache.memoryValues = KvRows();
    cache.memoryKeys.append(memoryKeys.data(), memory->length,
                            batch * l.kvHeads, hd, cross->bf16);
    cache.memoryValues.append(memoryValues.data(), memory->length,
                              batch * l.kvHeads, hd, cross->bf16);
  }
  if (status.failed())
    return status;
  if (!self && cache.memoryKeys.empty())
    return Status::error("a decoder with cross_attention needs the encoder "
                         "memory (attn-run --memory)");
  if (decoding && !cache.keys.empty() && l.attentionKind != "softmax")
    // Only softmax attention aligns its queries to the end of the keys
    // (bottom_right); the other kinds' causal forms assume queries and
    // keys start together.
    return Status::error(
        "attention kind " + l.attentionKind +
        " runs whole sequences only: call reset() before each forward "
        "(incremental decoding needs kind softmax)");
  int64_t keyLen = !self    ? cache.memoryKeys.length()
                   : decoding ? cache.keys.length() + length
                              : length;
  const AttentionKernel *kernel = nullptr;
  if (Status s = kernels(block, batch, length, keyLen, kernel); s.failed())
    return s;
  bool bf16 = kernel->bf16;

  // Keys and values the kernel reads: this call's (encoder), the cache's
  // (the cache holds rotated keys: a key's position never changes) or the
  // memory's. A bf16 kernel reads all of them in bf16.
  lm::Scratch16 q16, k16, v16;
  void *queries = q.data(), *keys = k.data(), *values = v.data();
  if (bf16) {
    q16.resize(q.size());
    lm::roundToBf16(q.data(), q.size(), q16.data());
    queries = q16.data();
  }
  std::vector<char> denseKeys, denseValues;
  if (!self) {
    keys = cache.memoryKeys.denseRows(denseKeys);
    values = cache.memoryValues.denseRows(denseValues);
  } else if (bf16 && !decoding) {
    k16.resize(k.size());
    v16.resize(v.size());
    lm::roundToBf16(k.data(), k.size(), k16.data());
    lm::roundToBf16(v.data(), v.size(), v16.data());
    keys = k16.data();
    values = v16.data();
  }

  // The kernel writes into `heads` (destination-passing style), or into
  // `heads16` when it runs in bf16.
  lm::Scratch heads(rows * l.heads * hd);
  lm::Scratch16 heads16(bf16 ? heads.size() : 0);
  void *output = bf16 ? static_cast<void *>(heads16.data()) : heads.data();
  auto start = std::chrono::steady_clock::now();
  if (Status s = decoding ? attendCached(*kernel, w, cache, k.data(), v.data(),
                                         queries, output, batch, length)
                         : callKernel(*kernel, w, queries, keys, values,
                                      output, batch, length, keyLen);
      s.failed())
    return s;
  attentionSeconds += std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
  if (bf16)
    lm::widenBf16(heads16.data(), heads16.size(), heads.data());
  lm::Scratch merged(rows * l.heads * hd);
  lm::mergeHeads(heads.data(), batch, length, l.heads, hd, merged.data());
  result.resize(rows * l.dModel); // written whole by the product
  if (Status s = linear(w.o, merged.data(), rows, result.data(),
                        LinearEpilogue::Activation::None, nullptr, residual);
      s.failed())
    return s;
  // Transformer-XL: keep only the last memory_length keys for the next
  // segment.
  if (decoding && l.memoryLength && cache.keys.length() > l.memoryLength) {
    cache.keys.keepLast(l.memoryLength);
    cache.values.keepLast(l.memoryLength);
  }
  return Status::ok();
}

Status LayerStack::Impl::attendCached(const AttentionKernel &kernel,
                                      AttentionWeights &w, LayerCache &cache,
                                      const float *k, const float *v,
                                      void *queries, void *output,
                                      int64_t batch, int64_t length) {
  const LayerConfig &l = config;
  cache.keys.append(k, length, batch * l.kvHeads, l.headDim, kernel.bf16);
  cache.values.append(v, length, batch * l.kvHeads, l.headDim, kernel.bf16);
  int64_t keyLen = cache.keys.length();
  // The prompt compiles the kernel that later calls read the cache in
  // place with, so that no decode step waits for the compiler.
  const AttentionKernel *oneKvHead = nullptr;
  if (Status s = kernels(AttentionBlock::SelfOneKvHead, 1, length, keyLen,
                         oneKvHead);
      s.failed())
    return s;
  if (!cache.keys.dense() && oneKvHead && oneKvHead->bf16 == kernel.bf16)
    return callPerKvHead(*oneKvHead, w, cache, queries, output, batch, length);
  std::vector<char> denseKeys, denseValues; // copies of a cache with spare rows
  return callKernel(kernel, w, queries, cache.keys.denseRows(denseKeys),
                    cache.values.denseRows(denseValues), output, batch, length,
                    keyLen);
}

Status LayerStack::Impl::attendPacked(int64_t layerIndex, AttentionWeights &w,
                                      const lm::Scratch &q,
                                      const lm::Scratch &k,
                                      const lm::Scratch &v,
                                      lm::Scratch &heads) {
  const LayerConfig &l = config;
  int64_t hd = l.headDim, total = 0;
  for (const PackedSequence &sequence : packed)
    total += sequence.length;
  // Rows [first, first + n) of every head of x [1, H, total, D], gathered
  // into [1, H, n, D].
  auto gather = [&](const float *x, int64_t nHeads, int64_t first, int64_t n,
                    lm::Scratch &into) {
    into.resize(nHeads * n * hd);
    for (int64_t h = 0; h < nHeads; ++h)
      std::copy_n(x + (h * total + first) * hd, n * hd,
                  into.data() + h * n * hd);
  };
  bool rope = l.positions == "rope", interleaved = l.ropeStyle == "interleaved";
  lm::Scratch qs, ks, vs, out;
  lm::Scratch16 q16, k16, v16, out16;
  int64_t first = 0;
  for (const PackedSequence &sequence : packed) {
    int64_t n = sequence.length, position = sequence.position;
    gather(q.data(), l.heads, first, n, qs);
    if (!l.sharesQueryKey)
      gather(k.data(), l.kvHeads, first, n, ks);
    gather(v.data(), l.kvHeads, first, n, vs);
    if (rope) {
      lm::rope(qs.data(), 1, l.heads, n, hd, position, l.ropeBase,
               interleaved);
      if (!l.sharesQueryKey)
        lm::rope(ks.data(), 1, l.kvHeads, n, hd, position, l.ropeBase,
                 interleaved);
    }
    if (l.sharesQueryKey) // lsh: keys are the (rotated) queries
      ks = qs;
    LayerCache *cache =
        sequence.caches ? &(*sequence.caches)[layerIndex] : nullptr;
    int64_t keyLen = n + (cache ? cache->keys.length() : 0);
    if (sequence.pages)
      keyLen = position + n;
    const AttentionKernel *kernel = nullptr;
    if (Status s = kernels(sequence.pages ? AttentionBlock::SelfPaged
                                          : AttentionBlock::Self,
                           1, n, keyLen, kernel);
        s.failed())
      return s;
    if (!kernel)
      return Status::error("the kernel provider has no paged attention");
    out.resize(l.heads * n * hd);
    void *queries = qs.data(), *keys = ks.data(), *values = vs.data(),
         *output = out.data();
    if (kernel->bf16) {
      for (auto [from, to] :
           {std::pair(&qs, &q16), std::pair(&ks, &k16), std::pair(&vs, &v16)}) {
        if ((cache || sequence.pages) && from != &qs)
          continue; // the cache rounds what it appends
        to->resize(from->size());
        lm::roundToBf16(from->data(), from->size(), to->data());
      }
      out16.resize(out.size());
      queries = q16.data();
      keys = k16.data();
      values = v16.data();
      output = out16.data();
    }
    auto start = std::chrono::steady_clock::now();
    Status called = Status::ok();
    if (sequence.pages) {
      writePages(layerIndex, *sequence.pages, position, n, ks.data(),
                 vs.data());
      PagedOperands paged{layerIndex, sequence.pages, keyLen};
      called = callKernel(*kernel, w, queries, nullptr, nullptr, output, 1, n,
                          keyLen, &paged);
    } else if (cache) {
      called = attendCached(*kernel, w, *cache, ks.data(), vs.data(), queries,
                            output, 1, n);
    } else {
      called = callKernel(*kernel, w, queries, keys, values, output, 1, n, n);
    }
    if (called.failed())
      return called;
    attentionSeconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (kernel->bf16)
      lm::widenBf16(out16.data(), out16.size(), out.data());
    for (int64_t h = 0; h < l.heads; ++h)
      std::copy_n(out.data() + h * n * hd, n * hd,
                  heads.data() + (h * total + first) * hd);
    first += n;
  }
  return Status::ok();
}

Status LayerStack::Impl::callKernel(const AttentionKernel &kernel,
                                    AttentionWeights &w, void *queries,
                                    void *keys, void *values, void *output,
                                    int64_t batch, int64_t length,
                                    int64_t keyLen,
                                    const PagedOperands *paged) {
  const LayerConfig &l = config;
  int64_t hd = l.headDim;
  std::vector<KernelOperand> operands;
  int32_t kvLength = int32_t(keyLen); // kv_length's (step caps it at 2^31)
  for (size_t i = 0; i < kernel.argumentNames.size(); ++i) {
    const std::string &name = kernel.argumentNames[i];
    if (paged && (name == "k_pages" || name == "v_pages")) {
      std::vector<char> &rows = (name == "k_pages" ? pool.keys
                                                   : pool.values)[paged->layerIndex];
      operands.push_back(
          {rows.data(), {pool.pages, l.kvHeads, kKvPageRows, hd}});
    } else if (paged && name == "page_table") {
      operands.push_back({const_cast<int32_t *>(paged->pages->data()),
                          {1, int64_t(paged->pages->size())}});
    } else if (paged && name == "kv_length") {
      operands.push_back({&kvLength, {1}});
    } else if (name == "q" || name == "qk") {
      operands.push_back({queries, {batch, l.heads, length, hd}});
    } else if (name == "k" || name == "v") {
      operands.push_back(
          {name == "k" ? keys : values, {batch, l.kvHeads, keyLen, hd}});
    } else {
      auto it = w.extras.find(name);
      if (it == w.extras.end())
        return Status::error("the attention needs operand '" + name +
                             "', which the layer has no weight for");
      if (i < kernel.argumentShapes.size() &&
          it->second.shape != kernel.argumentShapes[i])
        return Status::error(
            "self_attn." + name + " has shape " +
            shapeText(it->second.shape) + ", the attention over " +
            std::to_string(keyLen) + " keys needs " +
            shapeText(kernel.argumentShapes[i]));
      // Variant operands stay f32 (bf16 kernels take q, k and v only).
      operands.push_back({it->second.data.data(), it->second.shape});
    }
  }
  return kernel.call(operands, {output, {batch, l.heads, length, hd}});
}

Status LayerStack::Impl::callPerKvHead(const AttentionKernel &kernel,
                                       AttentionWeights &w, LayerCache &cache,
                                       void *queries, void *output,
                                       int64_t batch, int64_t length) {
  const LayerConfig &l = config;
  int64_t hd = l.headDim, group = l.heads / l.kvHeads;
  int64_t keyLen = cache.keys.length();
  int64_t elementBytes = kernel.bf16 ? 2 : 4;
  auto offset = [&](void *base, int64_t elements) {
    return static_cast<void *>(static_cast<char *>(base) +
                               elements * elementBytes);
  };
  // Operands other than q, k and v: tables with a row per query head.
  const std::vector<std::string> &names = kernel.argumentNames;
  std::vector<Tensor *> tables(names.size(), nullptr);
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "q" || names[i] == "k" || names[i] == "v")
      continue;
    auto it = w.extras.find(names[i]);
    if (it == w.extras.end() || it->second.shape.empty() ||
        it->second.shape[0] != l.heads)
      return Status::error("the per-KV-head attention needs operand '" +
                           names[i] + "' with a row per query head");
    tables[i] = &it->second;
  }
  std::vector<int64_t> qShape = {1, group, length, hd},
                       kShape = {1, 1, keyLen, hd};
  std::vector<KernelOperand> operands(names.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t g = 0; g < l.kvHeads; ++g) {
      int64_t block = b * l.kvHeads + g;
      int64_t firstHead = (b * l.heads + g * group) * length * hd;
      for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] == "q") {
          operands[i] = {offset(queries, firstHead), qShape};
        } else if (names[i] == "k" || names[i] == "v") {
          KvRows &rows = names[i] == "k" ? cache.keys : cache.values;
          operands[i] = {rows.at(block, 0), kShape};
        } else {
          // The group's rows; variant operands stay f32.
          std::vector<int64_t> shape = tables[i]->shape;
          int64_t rowSize = int64_t(tables[i]->data.size()) / shape[0];
          shape[0] = group;
          operands[i] = {tables[i]->data.data() + g * group * rowSize, shape};
        }
      }
      if (Status s = kernel.call(operands, {offset(output, firstHead), qShape});
          s.failed())
        return s;
    }
  return Status::ok();
}

Status LayerStack::Impl::feedForward(LayerWeights &w, const float *x,
                                     int64_t rows, std::vector<float> &result,
                                     const float *residual) {
  using Activation = LinearEpilogue::Activation;
  const LayerConfig &l = config;
  lm::Scratch up(rows * l.ffnHidden), gate;
  float *hidden = up.data();
  if (l.activation == "swiglu") {
    // silu(gate) * up, written by the gate's product.
    gate.resize(up.size());
    if (Status s = linear(w.up, x, rows, up.data()); s.failed())
      return s;
    if (Status s = linear(w.gate, x, rows, gate.data(),
                          Activation::SiluTimesOther, up.data());
        s.failed())
      return s;
    hidden = gate.data();
  } else if (Status s = linear(w.up, x, rows, up.data(),
                               activationNamed(l.activation));
             s.failed()) {
    return s;
  }
  result.resize(rows * l.dModel); // written whole by the product
  return linear(w.down, hidden, rows, result.data(), Activation::None, nullptr,
                residual);
}

Status LayerStack::Impl::linear(const LinearWeights &w, const float *x,
                                int64_t rows, float *y,
                                LinearEpilogue::Activation activation,
                                const float *other,
                                const float *residual) {
  using Activation = LinearEpilogue::Activation;
  const float *bias = w.bias.empty() ? nullptr : w.bias.data();
  if (fusesEpilogues()) {
    LinearEpilogue epilogue =
        fusedEpilogue(bias != nullptr, activation, residual != nullptr);
    return linearBackend->apply(x, rows, *w.prepared, epilogue, bias,
                                residual ? residual : other, y);
  }
  // The backend accumulates: y starts as the bias.
  lm::broadcastRows(y, rows, bias, w.out);
  if (Status s = linearBackend->accumulate(x, rows, *w.prepared, y);
      s.failed())
    return s;
  int64_t count = rows * w.out;
  switch (activation) {
  case Activation::None:
    break;
  case Activation::Relu:
    lm::activate("relu", y, count);
    break;
  case Activation::Gelu:
    lm::activate("gelu", y, count);
    break;
  case Activation::GeluTanh:
    lm::activate("gelu_tanh", y, count);
    break;
  case Activation::SiluTimesOther:
    lm::siluTimes(y, other, count);
    break;
  }
  if (residual)
    lm::add(y, residual, count);
  return Status::ok();
}

std::vector<LinearUse> attnrt::fusedLinearUses(const LayerConfig &l) {
  // What Impl::attention and Impl::feedForward pass to Impl::linear, for a
  // backend that fuses epilogues (the residual added by each block's last
  // product; layer() passes it).
  using A = LinearEpilogue::Activation;
  std::vector<LinearUse> uses;
  auto use = [&](int64_t in, int64_t out, A activation = A::None,
                 bool residual = false) {
    LinearUse u{in, out, fusedEpilogue(l.bias, activation, residual)};
    for (const LinearUse &seen : uses)
      if (seen.in == in && seen.out == out && seen.epilogue == u.epilogue)
        return;
    uses.push_back(u);
  };
  int64_t d = l.dModel, q = l.heads * l.headDim, kv = l.kvHeads * l.headDim;
  if (l.sharesQueryKey) { // fuseQkv leaves them apart
    use(d, q);
    use(d, kv);
  } else {
    use(d, q + 2 * kv);
  }
  if (l.hasCrossAttention()) {
    use(d, q);
    use(d, kv);
  }
  use(q, d, A::None, /*residual=*/true);
  if (l.activation == "swiglu") {
    use(d, l.ffnHidden);
    use(d, l.ffnHidden, A::SiluTimesOther);
  } else {
    use(d, l.ffnHidden, activationNamed(l.activation));
  }
  use(l.ffnHidden, d, A::None, /*residual=*/true);
  return uses;
}

void LayerStack::Impl::fuseQkv() {
  if (config.sharesQueryKey)
    return;
  for (LayerWeights &layer : layers) {
    AttentionWeights &a = layer.self;
    LinearWeights &f = a.qkv;
    f.in = a.q.in;
    f.out = a.q.out + a.k.out + a.v.out;
    for (LinearWeights *p : {&a.q, &a.k, &a.v}) {
      f.weight.insert(f.weight.end(), p->weight.begin(), p->weight.end());
      f.bias.insert(f.bias.end(), p->bias.begin(), p->bias.end());
      *p = LinearWeights{{}, {}, p->out, p->in};
    }
  }
}

Status LayerStack::Impl::prepareLinears() {
  for (LayerWeights &layer : layers)
    for (LinearWeights *w :
         {&layer.self.qkv, &layer.self.q, &layer.self.k, &layer.self.v,
          &layer.self.o,
          &layer.cross.q, &layer.cross.k, &layer.cross.v, &layer.cross.o,
          &layer.up, &layer.gate, &layer.down})
      if (!w->weight.empty()) {
        if (Status s =
                linearBackend->prepare(w->out, w->in, w->weight, w->prepared);
            s.failed())
          return s;
        w->weight = {}; // only the prepared form is kept
      }
  return Status::ok();
}

void LayerStack::Impl::normalize(const NormWeights &n, float *x,
                                 int64_t rows) {
  const LayerConfig &l = config;
  if (l.norm == "rmsnorm")
    lm::rmsNorm(x, rows, l.dModel, n.weight.data(), l.normEps);
  else
    lm::layerNorm(x, rows, l.dModel, n.weight.data(),
                  n.bias.empty() ? nullptr : n.bias.data(), l.normEps);
}

Status LayerStack::Impl::layer(int64_t index, std::vector<float> &h,
                               const Activations *memory, int64_t batch,
                               int64_t length) {
  const LayerConfig &l = config;
  LayerWeights &w = layers[l.sharedWeights ? 0 : index];
  LayerCache &cache = caches[index];
  int64_t rows = batch * length;
  bool pre = l.normPosition == "pre";
  // One residual block: pre-norm h += f(norm(h)), post-norm
  // h = norm(h + f(h)).
  auto block = [&](const NormWeights &norm, auto body) {
    // Post-norm blocks read h itself (they write r).
    std::vector<float> normalized, r;
    if (pre) {
      normalized = h;
      normalize(norm, normalized.data(), rows);
    }
    // The block's last product adds h to its output where the backend
    // fuses that (not when partial sums cross ranks first): r is then the
    // new h.
    const float *residual =
        fusesEpilogues() && !sumAcrossRanks ? h.data() : nullptr;
    Status s = body(pre ? normalized.data() : h.data(), r, residual);
    if (!s.failed() && !residual && sumAcrossRanks)
      s = sumAcrossRanks(r);
    if (s.failed())
      return s;
    if (residual)
      h.swap(r);
    else
      lm::add(h.data(), r.data(), h.size());
    if (!pre)
      normalize(norm, h.data(), rows);
    return Status::ok();
  };
  Status s = block(w.norms[0], [&](const float *in, std::vector<float> &r,
                                   const float *residual) {
    return attention(index, AttentionBlock::Self, w.self, cache, in, nullptr,
                     batch,
                     length, r, residual);
  });
  if (!s.failed() && l.hasCrossAttention())
    s = block(w.norms[1], [&](const float *in, std::vector<float> &r,
                              const float *residual) {
      return attention(index, AttentionBlock::Cross, w.cross, cache, in,
                       memory,
                       batch, length, r, residual);
    });
  if (s.failed())
    return s;
  return block(w.norms[l.hasCrossAttention() ? 2 : 1],
               [&](const float *in, std::vector<float> &r,
                   const float *residual) {
                 return feedForward(w, in, rows, r, residual);
               });
}

LayerStack::LayerStack(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
LayerStack::~LayerStack() = default;

Status LayerStack::create(const LayerConfig &config,
                          const WeightReader &weights, KernelProvider kernels,
                          std::unique_ptr<LayerStack> &stack,
                          std::shared_ptr<LinearBackend> linear,
                          bool allowNonFiniteWeights) {
  if (!linear)
    return Status::error("a layer stack needs a linear backend for its "
                         "products");
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->kernels = std::move(kernels);
  impl->linearBackend = std::move(linear);
  if (Status s = impl->load(weights, allowNonFiniteWeights); s.failed())
    return s;
  impl->fuseQkv();
  if (Status s = impl->prepareLinears(); s.failed())
    return s;
  stack.reset(new LayerStack(std::move(impl)));
  return Status::ok();
}

Status LayerStack::forward(const Activations &x, const Activations *memory,
                           Activations &result) {
  const LayerConfig &l = impl->config;
  auto dims = [](const Activations &a) {
    return shapeText({a.batch, a.length, a.width});
  };
  if (x.width != l.dModel || x.length < 1 || x.batch < 1 ||
      int64_t(x.data.size()) != x.batch * x.length * x.width)
    return Status::error("the input is " + dims(x) +
                         ", the layer takes [batch, length >= 1, d_model = " +
                         std::to_string(l.dModel) + "]");
  if (memory &&
      (memory->width != l.dModel || memory->batch != x.batch ||
       memory->length < 1 ||
       int64_t(memory->data.size()) !=
           memory->batch * memory->length * memory->width))
    return Status::error("the memory is " + dims(*memory) +
                         ", the layer takes [batch = " +
                         std::to_string(x.batch) +
                         ", length >= 1, d_model = " +
                         std::to_string(l.dModel) + "]");
  if (memory && !l.hasCrossAttention())
    return Status::error("memory given to a stack without cross-attention");
  // Compiled kernels cannot report a failed allocation (they would fault):
  // a call whose buffers cannot fit is refused before it starts.
  double need =
      impl->forwardBytes(x.batch, x.length, memory ? memory->length : 0);
  if (int64_t budget = memoryBudgetBytes(); budget && need > double(budget))
    return Status::error("the input " + dims(x) + " needs about " +
                         std::to_string(int64_t(need / (1 << 20))) +
                         " MiB of buffers, more than the " +
                         std::to_string(budget >> 20) +
                         " MiB this process can still allocate");
  if (!l.isDecoder())
    reset(impl->firstPosition); // encoders keep nothing between calls
  else if (impl->sequences && x.batch != impl->sequences)
    return Status::error("the input has batch " + std::to_string(x.batch) +
                         " but the decoder's sequence in progress has " +
                         std::to_string(impl->sequences) +
                         " (its KV cache holds that many); reset starts a "
                         "new sequence");
  impl->sequences = x.batch;
  if (Status s = impl->run(x, memory, result, onLayer); s.failed())
    return s;
  impl->position += x.length;
  return Status::ok();
}

Status LayerStack::Impl::run(
    const Activations &x, const Activations *memory, Activations &result,
    const std::function<void(int64_t, int64_t, double)> &onLayer) {
  const LayerConfig &l = config;
  result = x;
  std::vector<float> &h = result.data;
  // Absolute positions are added to the stack's input; packed sequences
  // each start at their own position (tokenPosition: each row's).
  std::vector<int64_t> tokenPosition;
  if (packed.empty())
    for (int64_t t = 0; t < x.length; ++t)
      tokenPosition.push_back(position + t);
  for (const PackedSequence &sequence : packed)
    for (int64_t t = 0; t < sequence.length; ++t)
      tokenPosition.push_back(sequence.position + t);
  int64_t last = *std::max_element(tokenPosition.begin(), tokenPosition.end());
  if (l.positions == "learned" && last >= l.maxPositions)
    return Status::error("position " + std::to_string(last) +
                         " is past max_positions (" +
                         std::to_string(l.maxPositions) + ")");
  if (l.positions == "learned" || l.positions == "sinusoidal")
    for (int64_t b = 0; b < x.batch; ++b)
      for (int64_t t = 0; t < x.length; ++t)
        for (int64_t c = 0; c < l.dModel; ++c) {
          int64_t pos = tokenPosition[t];
          h[(b * x.length + t) * l.dModel + c] +=
              l.positions == "learned"
                  ? posEmbedding[pos * l.dModel + c]
                  : float(lm::sinusoid(pos, c, l.dModel));
        }
  for (int64_t i = 0; i < l.layers; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (Status s = layer(i, h, memory, x.batch, x.length); s.failed())
      return s;
    if (onLayer)
      onLayer(i, l.layers,
              std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            start)
                  .count());
  }
  if (l.finalNorm)
    normalize(finalNorm, h.data(), x.batch * x.length);
  return Status::ok();
}

std::string
LayerStack::Impl::checkPackedLengths(const Activations &x,
                                     const std::vector<int64_t> &lengths) {
  int64_t total = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    int64_t n = lengths[i];
    if (n < 1)
      return "packed sequence lengths must be >= 1, got " +
             std::to_string(n) + " (sequence " + std::to_string(i) + ")";
    // At most the rows left: the sum cannot overflow.
    if (n > x.length - total)
      return "the packed sequence lengths add up to more than the input's " +
             std::to_string(x.length) + " tokens (sequence " +
             std::to_string(i) + ", of " + std::to_string(n) +
             " tokens, starts at token " + std::to_string(total) + ")";
    total += n;
  }
  if (lengths.empty() || x.batch != 1 || total != x.length)
    return "packed sequences: the input holds " + std::to_string(x.length) +
           " tokens in " + std::to_string(x.batch) + " row(s); the " +
           std::to_string(lengths.size()) + " lengths add up to " +
           std::to_string(total) + " (a packed input is [1, sum of lengths, " +
           "d_model])";
  return "";
}

Status LayerStack::forwardPacked(const Activations &x,
                                 const std::vector<int64_t> &lengths,
                                 Activations &result) {
  const LayerConfig &l = impl->config;
  if (std::string error = Impl::checkPackedLengths(x, lengths); !error.empty())
    return Status::error(error);
  if (l.hasCrossAttention() || l.memoryLength)
    return Status::error("packed sequences take no cross-attention or "
                         "Transformer-XL memory (each sequence would need "
                         "its own)");
  if (l.isDecoder() && impl->sequences)
    return Status::error("a packed call is a whole pass over each sequence: "
                         "reset the decoder's sequence in progress first");
  for (int64_t n : lengths)
    impl->packed.push_back({n, 0, nullptr});
  Status s = forward(x, nullptr, result);
  impl->packed.clear();
  reset(impl->firstPosition); // a decoder keeps no cache from it
  return s;
}

Status LayerStack::forwardPadded(const Activations &x,
                                 const std::vector<int64_t> &lengths,
                                 Activations &result) {
  if (x.width != impl->config.dModel || x.batch < 1 || x.length < 1 ||
      int64_t(x.data.size()) != x.batch * x.length * x.width ||
      int64_t(lengths.size()) != x.batch)
    return Status::error(
        "a padded batch is [batch, length, d_model = " +
        std::to_string(impl->config.dModel) + "] with a length per sequence; "
        "the input is " + shapeText({x.batch, x.length, x.width}) + " with " +
        std::to_string(lengths.size()) + " lengths");
  int64_t total = 0;
  for (size_t b = 0; b < lengths.size(); ++b) {
    if (lengths[b] < 1 || lengths[b] > x.length)
      return Status::error("sequence " + std::to_string(b) + " has length " +
                           std::to_string(lengths[b]) +
                           "; a padded batch of " + std::to_string(x.length) +
                           " rows takes 1 to " + std::to_string(x.length));
    total += lengths[b];
  }
  // The tokens, packed; padding rows are never read.
  Activations packed(1, total, x.width), out;
  int64_t row = 0;
  for (int64_t b = 0; b < x.batch; ++b) {
    std::copy_n(x.data.data() + b * x.length * x.width, lengths[b] * x.width,
                packed.data.data() + row * x.width);
    row += lengths[b];
  }
  if (Status s = forwardPacked(packed, lengths, out); s.failed())
    return s;
  result = Activations(x.batch, x.length, x.width); // padding rows are 0
  row = 0;
  for (int64_t b = 0; b < x.batch; ++b) {
    std::copy_n(out.data.data() + row * x.width, lengths[b] * x.width,
                result.data.data() + b * x.length * x.width);
    row += lengths[b];
  }
  return Status::ok();
}

Status LayerStack::addSequence(int64_t &id) {
  const LayerConfig &l = impl->config;
  if (!l.isDecoder() || l.hasCrossAttention() || l.memoryLength ||
      l.attentionKind != "softmax")
    return Status::error(
        "continuous batching needs a decoder stack of attention kind softmax "
        "without cross-attention or Transformer-XL memory (an encoder keeps "
        "no KV cache: forward_packed batches encoder sequences)");
  if (impl->maxSequences &&
      int64_t(impl->served.size()) >= impl->maxSequences)
    return Status::error("the stack serves " +
                         std::to_string(impl->served.size()) +
                         " sequences, its limit: remove one first");
  if (!impl->servesPaged) {
    // A provider with a paged kernel: one page pool for all sequences.
    const AttentionKernel *paged = nullptr;
    if (Status s = impl->kernels(AttentionBlock::SelfPaged, 1, -1, -1, paged);
        s.failed())
      return s;
    impl->servesPaged = paged != nullptr;
    impl->pool.elementBytes = paged && paged->bf16 ? 2 : 4;
    impl->pool.keys.resize(paged ? l.layers : 0);
    impl->pool.values.resize(paged ? l.layers : 0);
  }
  id = impl->nextSequenceId++;
  if (!*impl->servesPaged)
    impl->served[id].caches.resize(l.layers);
  else
    impl->served[id];
  return Status::ok();
}

Status LayerStack::removeSequence(int64_t id) {
  auto it = impl->served.find(id);
  if (it == impl->served.end())
    return Status::error("no live sequence " + std::to_string(id));
  impl->releasePages(it->second, 0);
  impl->served.erase(it);
  return Status::ok();
}

Status LayerStack::Impl::reservePages(ServedSequence &sequence, int64_t rows) {
  int64_t want = (rows + kKvPageRows - 1) / kKvPageRows;
  while (int64_t(sequence.pages.size()) < want) {
    if (pool.free.empty()) {
      // Double the pool (at least 16 pages); new pages hold NaN.
      int64_t grown = std::max<int64_t>(16, 2 * pool.pages);
      if (grown > INT32_MAX)
        return Status::error("the KV page pool cannot grow past 2^31 pages");
      int64_t pageBytes =
          config.kvHeads * kKvPageRows * config.headDim * pool.elementBytes;
      double need = double(grown - pool.pages) * pageBytes * 2 * config.layers;
      if (int64_t budget = memoryBudgetBytes(); budget && need > double(budget))
        return Status::error("the KV page pool cannot grow to " +
                             std::to_string(grown) + " pages: " +
                             std::to_string(int64_t(need / (1 << 20))) +
                             " MiB more than this process can allocate");
      for (auto *pools : {&pool.keys, &pool.values})
        for (std::vector<char> &layer : *pools) {
          layer.resize(grown * pageBytes);
          if (pool.elementBytes == 4)
            std::fill_n(reinterpret_cast<float *>(layer.data()) +
                            pool.pages * pageBytes / 4,
                        (grown - pool.pages) * pageBytes / 4, NAN);
          else
            std::fill_n(reinterpret_cast<uint16_t *>(layer.data()) +
                            pool.pages * pageBytes / 2,
                        (grown - pool.pages) * pageBytes / 2,
                        uint16_t(0x7fc0)); // bf16 NaN
        }
      for (int64_t p = grown - 1; p >= pool.pages; --p)
        pool.free.push_back(int32_t(p));
      pool.pages = grown;
    }
    sequence.pages.push_back(pool.free.back());
    pool.free.pop_back();
  }
  return Status::ok();
}

void LayerStack::Impl::releasePages(ServedSequence &sequence, int64_t rows) {
  size_t keep = (rows + kKvPageRows - 1) / kKvPageRows;
  int64_t pageBytes =
      config.kvHeads * kKvPageRows * config.headDim * pool.elementBytes;
  while (sequence.pages.size() > keep) {
    int32_t page = sequence.pages.back();
    sequence.pages.pop_back();
    for (auto *pools : {&pool.keys, &pool.values})
      for (std::vector<char> &layer : *pools) {
        char *at = layer.data() + page * pageBytes;
        if (pool.elementBytes == 4)
          std::fill_n(reinterpret_cast<float *>(at), pageBytes / 4, NAN);
        else
          std::fill_n(reinterpret_cast<uint16_t *>(at), pageBytes / 2,
                      uint16_t(0x7fc0));
      }
    pool.free.push_back(page);
  }
}

void LayerStack::Impl::writePages(int64_t layerIndex,
                                  const std::vector<int32_t> &pages,
                                  int64_t position, int64_t n, const float *k,
                                  const float *v) {
  int64_t hd = config.headDim, rowElements = hd;
  for (int64_t t = 0; t < n; ++t) {
    int64_t row = position + t;
    int64_t page = pages[row / kKvPageRows], inPage = row % kKvPageRows;
    for (int64_t h = 0; h < config.kvHeads; ++h) {
      int64_t at = ((page * config.kvHeads + h) * kKvPageRows + inPage) * hd;
      const float *from[2] = {k + (h * n + t) * hd, v + (h * n + t) * hd};
      std::vector<char> *to[2] = {&pool.keys[layerIndex],
                                  &pool.values[layerIndex]};
      for (int i = 0; i < 2; ++i) {
        char *base = to[i]->data() + at * pool.elementBytes;
        if (pool.elementBytes == 2)
          lm::roundToBf16(from[i], rowElements,
                          reinterpret_cast<uint16_t *>(base));
        else
          std::copy_n(from[i], rowElements, reinterpret_cast<float *>(base));
      }
    }
  }
}

Status LayerStack::step(const std::vector<int64_t> &ids, const Activations &x,
                        const std::vector<int64_t> &lengths,
                        Activations &result) {
  const LayerConfig &l = impl->config;
  if (x.width != l.dModel ||
      int64_t(x.data.size()) != x.batch * x.length * x.width)
    return Status::error("the input is " +
                         shapeText({x.batch, x.length, x.width}) +
                         ", a step takes [1, tokens, d_model = " +
                         std::to_string(l.dModel) + "]");
  if (ids.size() != lengths.size())
    return Status::error("a step takes one length per sequence id (" +
                         std::to_string(ids.size()) + " ids, " +
                         std::to_string(lengths.size()) + " lengths)");
  if (std::string error = Impl::checkPackedLengths(x, lengths); !error.empty())
    return Status::error(error);
  std::vector<Impl::PackedSequence> packed;
  std::set<int64_t> seen;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = impl->served.find(ids[i]);
    if (it == impl->served.end())
      return Status::error("no live sequence " + std::to_string(ids[i]) +
                           " (ids come from adding a sequence)");
    if (!seen.insert(ids[i]).second)
      return Status::error("sequence " + std::to_string(ids[i]) +
                           " appears twice in one step");
    Impl::ServedSequence &sequence = it->second;
    if (lengths[i] > INT32_MAX - sequence.length)
      return Status::error("sequence " + std::to_string(ids[i]) +
                           " would pass 2^31 tokens");
    if (impl->maxSequenceTokens &&
        lengths[i] > impl->maxSequenceTokens - sequence.length)
      return Status::error(
          "sequence " + std::to_string(ids[i]) + " holds " +
          std::to_string(sequence.length) + " tokens; " +
          std::to_string(lengths[i]) + " more pass its capacity of " +
          std::to_string(impl->maxSequenceTokens));
    packed.push_back({lengths[i], sequence.length,
                      sequence.caches.empty() ? nullptr : &sequence.caches,
                      nullptr});
  }
  double need = impl->forwardBytes(1, x.length, 0);
  if (int64_t budget = memoryBudgetBytes(); budget && need > double(budget))
    return Status::error("the step's " + std::to_string(x.length) +
                         " tokens need about " +
                         std::to_string(int64_t(need / (1 << 20))) +
                         " MiB of buffers, more than the " +
                         std::to_string(budget >> 20) +
                         " MiB this process can still allocate");
  // Pages for the step's rows (a paged cache), taken before any layer runs.
  Status s = Status::ok();
  for (size_t i = 0; i < ids.size() && !s.failed(); ++i) {
    Impl::ServedSequence &sequence = impl->served[ids[i]];
    if (*impl->servesPaged) {
      s = impl->reservePages(sequence, sequence.length + lengths[i]);
      packed[i].pages = &sequence.pages;
    }
  }
  if (!s.failed()) {
    impl->packed = packed;
    s = impl->run(x, nullptr, result, onLayer);
    impl->packed.clear();
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    Impl::ServedSequence &sequence = impl->served[ids[i]];
    if (!s.failed()) {
      sequence.length += lengths[i];
      continue;
    }
    // Undo what the layers before the failure appended.
    impl->releasePages(sequence, sequence.length);
    for (LayerCache &cache : sequence.caches) {
      cache.keys.truncate(sequence.length);
      cache.values.truncate(sequence.length);
    }
  }
  return s;
}

int64_t LayerStack::sequenceLength(int64_t id) const {
  auto it = impl->served.find(id);
  return it == impl->served.end() ? -1 : it->second.length;
}

int64_t LayerStack::liveSequences() const { return impl->served.size(); }

int64_t LayerStack::cacheBytes() const {
  int64_t bytes = 0;
  for (const auto &[id, sequence] : impl->served)
    for (const LayerCache &cache : sequence.caches)
      bytes += cache.keys.heldBytes() + cache.values.heldBytes();
  const LayerConfig &l = impl->config;
  return bytes + usedPages() * 2 * l.layers * l.kvHeads * kKvPageRows *
                     l.headDim * impl->pool.elementBytes;
}

int64_t LayerStack::poolPages() const { return impl->pool.pages; }

int64_t LayerStack::usedPages() const {
  return impl->pool.pages - int64_t(impl->pool.free.size());
}

void LayerStack::setServingLimits(int64_t maxSequences,
                                  int64_t maxSequenceTokens) {
  impl->maxSequences = std::max<int64_t>(maxSequences, 0);
  impl->maxSequenceTokens = std::max<int64_t>(maxSequenceTokens, 0);
}

void LayerStack::reset(int64_t firstPosition) {
  for (LayerCache &cache : impl->caches)
    cache = LayerCache();
  impl->position = impl->firstPosition = firstPosition;
  impl->sequences = 0;
}

int64_t LayerStack::position() const { return impl->position; }

void LayerStack::setSumAcrossRanks(
    std::function<Status(std::vector<float> &)> sum) {
  impl->sumAcrossRanks = std::move(sum);
}

int64_t LayerStack::weightBytes() const {
  int64_t floats = impl->posEmbedding.size() + impl->finalNorm.weight.size() +
                   impl->finalNorm.bias.size();
  int64_t prepared = 0; // bytes held by the linear backend
  auto linear = [&](const LinearWeights &w) {
    floats += w.weight.size() + w.bias.size();
    if (w.prepared)
      prepared += w.prepared->bytes();
  };
  for (const LayerWeights &w : impl->layers) {
    for (const AttentionWeights *a : {&w.self, &w.cross}) {
      for (const LinearWeights *p : {&a->qkv, &a->q, &a->k, &a->v, &a->o})
        linear(*p);
      for (const auto &[name, t] : a->extras)
        floats += t.data.size();
    }
    for (const NormWeights &n : w.norms)
      floats += n.weight.size() + n.bias.size();
    for (const LinearWeights *p : {&w.up, &w.gate, &w.down})
      linear(*p);
  }
  return floats * int64_t(sizeof(float)) + prepared;
}
std::string
LayerStack::unusedWeights(const std::vector<std::string> &available) const {
  std::vector<std::string> unused;
  bool normBias = false;
  for (const std::string &name : available)
    if (!impl->weightNames.count(name)) {
      unused.push_back(name);
      normBias |= name.find("norm") != std::string::npos && name.size() > 5 &&
                  name.substr(name.size() - 5) == ".bias";
    }
  if (unused.empty())
    return "";
  const LayerConfig &l = impl->config;
  std::string list;
  for (size_t i = 0; i < unused.size() && i < 8; ++i)
    list += (i ? ", " : "") + unused[i];
  if (unused.size() > 8)
    list += ", ...";
  std::string hint;
  if (normBias && (l.norm == "rmsnorm" || !l.bias))
    hint = "; this layer's norm (" + l.norm + (l.bias ? "" : ", bias: false") +
           ") takes no bias";
  return std::to_string(unused.size()) + " tensor" +
         (unused.size() == 1 ? "" : "s") + " the layer does not use (" + list +
         "): weights of another layer spec? (" + std::to_string(l.layers) +
         " layer" + (l.layers == 1 ? "" : "s") +
         (l.sharedWeights ? ", shared weights" : "") + hint + ")";
}

const LayerConfig &LayerStack::config() const { return impl->config; }
double LayerStack::attentionSeconds() const { return impl->attentionSeconds; }
