//===- LayerStackImpl.h - the layer-stack executor's state ------*- C++ -*-===//
//
// What LayerStack.cpp (forward passes, weights, products), LayerAttention.cpp
// (the attention blocks and kernel calls) and Serving.cpp (continuous
// batching and its paged KV cache) share: the weights, caches and the Impl
// behind LayerStack.h.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_LAYERS_LAYERSTACKIMPL_H
#define ATTN_RUNTIME_LAYERS_LAYERSTACKIMPL_H

#include "KvRows.h"
#include "LayerMath.h"
#include "attn/Runtime/LayerStack.h"
#include <functional>
#include <map>
#include <optional>
#include <set>

namespace attnrt::stack {
struct LinearWeights {
  std::vector<float> weight, bias;
  int64_t out = 0, in = 0;
  /// The weight as the linear backend holds it (`weight` is then empty).
  std::shared_ptr<const LinearBackend::Weight> prepared;
};
/// A product's or norm's bias, or null when it has none.
inline const float *biasOf(const std::vector<float> &bias) {
  return bias.empty() ? nullptr : bias.data();
}
struct NormWeights {
  std::vector<float> weight, bias;
};
/// A residual block's input (LayerStack.cpp, layer()): the stream h, and
/// pre-norm's normalized copy, made when a path asks for it. A chain that
/// runs the block's norm on the device (`deviceNorm`, when the backend
/// chainsNorms and the residual is fused) reads h instead and sets
/// `normUsed`: its output is then the block's new h, normalized (post-norm)
/// or not (pre-norm).
struct BlockInput {
  const float *stream = nullptr;
  const LinearBackend::BlockNorm *deviceNorm = nullptr;
  std::function<const float *()> normalized;
  bool normUsed = false;
  /// What a chain reads as x: h when it takes the norm, else the block's
  /// input (pre-norm's norm of h, or h).
  const float *chainInput() { return deviceNorm ? stream : normalized(); }
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
} // namespace attnrt::stack

namespace attnrt {
using namespace attnrt::stack;
namespace lm = attnrt::layermath;

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
    /// KernelOperand::version of every pool: new when the pool grows.
    uint64_t version = 0;
  };
  std::optional<bool> servesPaged;
  PagePool pool;
  /// Pages for `rows` rows of `sequence` (the pool doubles when it runs
  /// out: the only copy of cached rows, amortized over the pages added).
  Status reservePages(ServedSequence &sequence, int64_t rows);
  /// Bytes of one page in one layer's pool; NaN into `count` pages from
  /// `first` of every pool.
  int64_t pageBytes() const;
  void poisonPages(int64_t first, int64_t count);
  /// Back to the pool: pages of `sequence` past its first `rows` rows,
  /// filled with NaN again.
  void releasePages(ServedSequence &sequence, int64_t rows);
  /// Writes rows [position, position + n) of layer `layerIndex`'s keys and
  /// values (f32 [Hkv, n, D]) into the sequence's pages.
  void writePages(int64_t layerIndex, const std::vector<int32_t> &pages,
                  int64_t position, int64_t n, const float *k, const float *v);
  /// The operands of a SelfPaged kernel beyond q and the variant's: the
  /// pools [pages, Hkv, rows per page, D] (with their owners and
  /// versions, KernelOperand), the table [B, table pages] and the length.
  struct PagedOperands {
    KernelOperand keys, values, table;
    int32_t keyLen;
  };
  /// Those of serving's pool for layer `layerIndex` and `pages`.
  PagedOperands poolOperands(int64_t layerIndex,
                             const std::vector<int32_t> &pages, int64_t keyLen);

  Status load(const WeightReader &read, bool allowNonFinite);
  /// Stacks each self-attention's q, k and v weights into one product.
  void fuseQkv();
  /// Hands every weight of a product to the linear backend's prepare().
  Status prepareLinears();
  /// y[rows, out] = act(x[rows, in] W^T + bias) (SiluTimesOther: times
  /// `other`), plus `residual` [rows, out] when given: in one pass where
  /// the backend fuses epilogues, else in passes of the stack's.
  Status linear(
      const LinearWeights &w, const float *x, int64_t rows, float *y,
      LinearEpilogue::Activation activation = LinearEpilogue::Activation::None,
      const float *other = nullptr, const float *residual = nullptr);
  bool fusesEpilogues() const { return linearBackend->fusesEpilogues(); }
  /// The blocks write their output to `result`, plus `residual` when that
  /// is not null (their last product adds it).
  Status attention(int64_t layerIndex, AttentionBlock block,
                   AttentionWeights &w, LayerCache &cache, BlockInput &input,
                   const Activations *memory, int64_t batch, int64_t length,
                   std::vector<float> &result, const float *residual);
  /// Self-attention as one chain where the products run
  /// (LinearBackend::selfAttention), when the backend chains the block's
  /// kernel: an encoder's whole sequences, or a decoder's call over its KV
  /// cache, the new keys and values appended there (and read back into
  /// `cache`). `chained` says whether it ran; otherwise nothing changed.
  Status chainedSelfAttention(AttentionWeights &w, LayerCache &cache,
                              BlockInput &input, int64_t batch, int64_t length,
                              std::vector<float> &result, const float *residual,
                              bool &chained);
  /// The variant operands of `kernel` (those not q, k, v or a page pool's)
  /// from `w`, in its order; false when one is missing or of another shape
  /// (the unchained call says which).
  bool variantOperands(const AttentionKernel &kernel, AttentionWeights &w,
                       std::vector<KernelOperand> &operands);
  /// Cross-attention as one chain where the products run
  /// (LinearBackend::crossAttention) over `cache`'s memory keys and values,
  /// when the backend chains the block's kernel; `chained` as above.
  Status chainedCrossAttention(AttentionWeights &w, LayerCache &cache,
                               BlockInput &input, int64_t batch, int64_t length,
                               std::vector<float> &result,
                               const float *residual, bool &chained);
  /// The attention kernel on its operands (q, k, v: f32, or bf16 bits
  /// when the kernel takes bf16; variant operands from `w`) into `output`.
  /// `keyRows` and `valueRows`, when given, hold `keys` and `values` (the
  /// encoder memory's): they name them as their owners with their versions
  /// (KernelOperand), so that a kernel that keeps copies on a device copies
  /// them once per memory, not per call.
  Status callKernel(const AttentionKernel &kernel, AttentionWeights &w,
                    void *queries, void *keys, void *values, void *output,
                    int64_t batch, int64_t length, int64_t keyLen,
                    const PagedOperands *paged = nullptr,
                    const KvRows *keyRows = nullptr,
                    const KvRows *valueRows = nullptr);
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
                      const lm::Scratch &q, const lm::Scratch &k,
                      const lm::Scratch &v, lm::Scratch &heads);
  Status feedForward(LayerWeights &w, BlockInput &input, int64_t rows,
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

} // namespace attnrt

#endif // ATTN_RUNTIME_LAYERS_LAYERSTACKIMPL_H
