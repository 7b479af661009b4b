//===- Transformer.cpp - the layer-stack executor -------------------------===//
//
// One forward call: positions on the input, then per layer the attention
// blocks (projections on sgemm, RoPE, KV cache, the compiled attention
// kernel), residuals and norms, and the feed-forward block. Compiled
// attention kernels are cached per block role and, for kinds that need
// static sizes, per sequence length; kind softmax compiles once with dynamic
// lengths and serves full sequences, decoding steps and segments alike.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/Transformer.h"
#include "LayerMath.h"
#include "Weights.h"
#include "attn/Runtime/HostCompiler.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <tuple>

using namespace attnrt;
using attnspec::AttentionRole;
using attnspec::LayerSpec;
namespace lm = attnrt::layermath;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

namespace {
struct LinearWeights {
  std::vector<float> weight, bias;
  int64_t out = 0, in = 0;
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
  std::map<std::string, Tensor> extras; ///< variant operands by name
};
struct LayerWeights {
  AttentionWeights self, cross;
  NormWeights norms[3];
  LinearWeights up, gate, down;
};
/// Keys and values kept for a decoder layer: [B, Hkv, length, D].
struct LayerCache {
  std::vector<float> keys, values;
  int64_t length = 0;
  std::vector<float> memoryKeys, memoryValues; ///< cross-attention
  int64_t memoryLength = 0;
};
struct CompiledAttention {
  std::unique_ptr<JitKernel> kernel;
  std::vector<std::string> argumentNames;
  std::vector<std::vector<int64_t>> argumentShapes; ///< kDynamic for `?`
};
} // namespace

struct TransformerStack::Impl {
  LayerSpec spec;
  TransformerOptions options;
  std::vector<LayerWeights> layers; ///< one when weights are shared
  std::vector<float> posEmbedding;
  NormWeights finalNorm;
  std::vector<LayerCache> caches;
  int64_t position = 0;
  double attentionSeconds = 0;
  mlir::MLIRContext context;
  std::map<std::tuple<int, int64_t, int64_t, int64_t>, CompiledAttention>
      kernels;

  Impl() : context(mlir::MLIRContext::Threading::DISABLED) {
    mlir::DialectRegistry registry;
    attnspec::registerToolDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  llvm::Error load(const SafetensorsFile &file);
  llvm::Expected<CompiledAttention *> kernelFor(AttentionRole role,
                                                int64_t batch, int64_t lq,
                                                int64_t lk);
  llvm::Expected<std::vector<float>>
  attention(AttentionRole role, AttentionWeights &w, LayerCache &cache,
            const float *x, const Activations *memory, int64_t batch,
            int64_t length);
  std::vector<float> feedForward(LayerWeights &w, const float *x,
                                 int64_t rows);
  void normalize(const NormWeights &n, float *x, int64_t rows);
  llvm::Error layer(int64_t index, std::vector<float> &h,
                    const Activations *memory, int64_t batch, int64_t length);
};

llvm::Error TransformerStack::Impl::load(const SafetensorsFile &file) {
  const attnspec::LayerShape &l = spec.layer;
  auto read = [&](const std::string &name, std::vector<int64_t> shape,
                  std::vector<float> &into) -> llvm::Error {
    auto data = file.read(name, shape);
    if (!data)
      return data.takeError();
    into = std::move(*data);
    return llvm::Error::success();
  };
  auto linear = [&](const std::string &name, int64_t out, int64_t in,
                    LinearWeights &w) -> llvm::Error {
    w.out = out;
    w.in = in;
    if (auto e = read(name + ".weight", {out, in}, w.weight))
      return e;
    return l.bias ? read(name + ".bias", {out}, w.bias)
                  : llvm::Error::success();
  };
  auto norm = [&](const std::string &name, NormWeights &n) -> llvm::Error {
    if (auto e = read(name + ".weight", {l.dModel}, n.weight))
      return e;
    return l.norm == "layernorm" && l.bias
               ? read(name + ".bias", {l.dModel}, n.bias)
               : llvm::Error::success();
  };
  auto attentionBlock = [&](const std::string &p, AttentionWeights &w,
                            bool self) -> llvm::Error {
    int64_t d = l.dModel, q = l.heads * l.headDim,
            kv = l.kvHeads * l.headDim;
    if (auto e = linear(p + "q_proj", q, d, w.q))
      return e;
    if (!(self && sharesQueryKey(spec)))
      if (auto e = linear(p + "k_proj", kv, d, w.k))
        return e;
    if (auto e = linear(p + "v_proj", kv, d, w.v))
      return e;
    if (auto e = linear(p + "o_proj", d, q, w.o))
      return e;
    if (!self)
      return llvm::Error::success();
    // Variant operands are read with the file's shape: some depend on the
    // sequence length (Linformer's E, F), checked against the kernel's
    // operand types when it is called.
    for (auto &[name, shape] : variantOperands(spec, 1)) {
      std::optional<std::vector<int64_t>> actual = file.shape(p + name);
      if (!actual)
        return error(file.getPath() + ": no tensor '" + p + name +
                     "' (the attention variant's operand)");
      Tensor &t = w.extras[name];
      t.shape = *actual;
      if (auto e = read(p + name, t.shape, t.data))
        return e;
    }
    return llvm::Error::success();
  };
  if (l.positions == "learned")
    if (auto e = read("pos_embedding", {l.maxPositions, l.dModel},
                      posEmbedding))
      return e;
  layers.resize(l.sharedWeights ? 1 : l.layers);
  for (int64_t i = 0; i < int64_t(layers.size()); ++i) {
    std::string p = layerPrefix(spec, i);
    LayerWeights &w = layers[i];
    if (auto e = attentionBlock(p + "self_attn.", w.self, true))
      return e;
    if (l.hasCrossAttention())
      if (auto e = attentionBlock(p + "cross_attn.", w.cross, false))
        return e;
    for (int n = 0; n < (l.hasCrossAttention() ? 3 : 2); ++n)
      if (auto e = norm(p + "norm" + std::to_string(n + 1), w.norms[n]))
        return e;
    if (auto e = linear(p + "linear1", l.ffnHidden, l.dModel, w.up))
      return e;
    if (l.activation == "swiglu")
      if (auto e = linear(p + "linear_gate", l.ffnHidden, l.dModel, w.gate))
        return e;
    if (auto e = linear(p + "linear2", l.dModel, l.ffnHidden, w.down))
      return e;
  }
  if (l.finalNorm)
    if (auto e = norm("final_norm", finalNorm))
      return e;
  caches.resize(l.layers);
  return llvm::Error::success();
}

llvm::Expected<CompiledAttention *>
TransformerStack::Impl::kernelFor(AttentionRole role, int64_t batch,
                                  int64_t lq, int64_t lk) {
  // Softmax attention (and every cross-attention) takes dynamic sizes: one
  // kernel for all lengths.
  bool dynamic = role == AttentionRole::Cross ||
                 spec.layer.attention.kind == "softmax";
  if (dynamic)
    batch = lq = lk = mlir::ShapedType::kDynamic;
  auto key = std::make_tuple(int(role), batch, lq, lk);
  auto it = kernels.find(key);
  if (it != kernels.end())
    return &it->second;
  attnspec::Spec attentionSpec =
      attnspec::attentionSpec(spec, role, batch, lq, lk);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer("attention:", "<layer " + spec.name +
                                                         ">"),
      llvm::SMLoc());
  CompiledAttention compiled;
  mlir::OwningOpRef<mlir::ModuleOp> module = attnspec::buildModule(
      attentionSpec, sourceMgr, &context, &compiled.argumentNames);
  if (!module)
    return error(llvm::formatv("cannot build the {0} of layer spec '{1}' for "
                               "{2} queries and {3} keys",
                               attentionSpec.name, spec.name, lq, lk));
  auto fn = *module->getOps<mlir::func::FuncOp>().begin();
  for (mlir::Type type : fn.getArgumentTypes()) {
    llvm::ArrayRef<int64_t> shape = mlir::cast<mlir::ShapedType>(type).getShape();
    compiled.argumentShapes.emplace_back(shape.begin(), shape.end());
  }
  HostCompileOptions options;
  options.numThreads = this->options.numThreads;
  auto kernel = compileForHost(*module, options);
  if (!kernel)
    return kernel.takeError();
  compiled.kernel = std::move(*kernel);
  return &(kernels[key] = std::move(compiled));
}

/// Appends `fresh` [B, H, n, D] to `kept` [B, H, length, D].
static std::vector<float> appendRows(const std::vector<float> &kept,
                                     int64_t length, const std::vector<float> &fresh,
                                     int64_t n, int64_t batchHeads,
                                     int64_t dim) {
  std::vector<float> result(batchHeads * (length + n) * dim);
  // std::copy_n, not memcpy on &v[i]: the cache starts empty (no element
  // to take the address of, and memcpy may not see a null source).
  for (int64_t bh = 0; bh < batchHeads; ++bh) {
    std::copy_n(kept.begin() + bh * length * dim, length * dim,
                result.begin() + bh * (length + n) * dim);
    std::copy_n(fresh.begin() + bh * n * dim, n * dim,
                result.begin() + (bh * (length + n) + length) * dim);
  }
  return result;
}

/// Keeps the last `keep` of `length` rows of [B, H, length, D].
static std::vector<float> lastRows(const std::vector<float> &rows,
                                   int64_t length, int64_t keep,
                                   int64_t batchHeads, int64_t dim) {
  std::vector<float> result(batchHeads * keep * dim);
  for (int64_t bh = 0; bh < batchHeads; ++bh)
    std::copy_n(rows.begin() + (bh * length + length - keep) * dim, keep * dim,
                result.begin() + bh * keep * dim);
  return result;
}

llvm::Expected<std::vector<float>> TransformerStack::Impl::attention(
    AttentionRole role, AttentionWeights &w, LayerCache &cache,
    const float *x, const Activations *memory, int64_t batch,
    int64_t length) {
  const attnspec::LayerShape &l = spec.layer;
  int64_t rows = batch * length, hd = l.headDim;
  bool self = role == AttentionRole::Self;
  auto project = [&](const LinearWeights &p, const float *in, int64_t n,
                     int64_t heads) {
    std::vector<float> flat(batch * n * heads * hd), split(flat.size());
    lm::linear(in, batch * n, l.dModel, p.weight.data(), p.bias, p.out,
               flat.data());
    lm::splitHeads(flat.data(), batch, n, heads, hd, split.data());
    return split;
  };
  std::vector<float> q = project(w.q, x, length, l.heads);
  // Keys and values the kernel reads: this call's (encoder) or the cache's.
  std::vector<float> ownKeys, ownValues;
  float *keys, *values;
  int64_t keyLen;
  if (self) {
    std::vector<float> k = sharesQueryKey(spec)
                               ? q
                               : project(w.k, x, length, l.kvHeads);
    std::vector<float> v = project(w.v, x, length, l.kvHeads);
    if (l.positions == "rope") {
      bool interleaved = l.ropeStyle == "interleaved";
      lm::rope(q.data(), batch, l.heads, length, hd, position, l.ropeBase,
               interleaved);
      if (!sharesQueryKey(spec))
        lm::rope(k.data(), batch, l.kvHeads, length, hd, position,
                 l.ropeBase, interleaved);
      else
        k = q;
    }
    if (l.isDecoder()) {
      // Only softmax attention aligns its queries to the end of the keys
      // (bottom_right); the other kinds' causal forms assume queries and
      // keys start together.
      if (cache.length && l.attention.kind != "softmax")
        return error("attention kind " + l.attention.kind +
                     " runs whole sequences only: call reset() before each "
                     "forward (incremental decoding needs kind softmax)");
      // The cache holds rotated keys: a key's position never changes.
      cache.keys = appendRows(cache.keys, cache.length, k, length,
                              batch * l.kvHeads, hd);
      cache.values = appendRows(cache.values, cache.length, v, length,
                                batch * l.kvHeads, hd);
      cache.length += length;
      keys = cache.keys.data();
      values = cache.values.data();
      keyLen = cache.length;
    } else {
      ownKeys = std::move(k);
      ownValues = std::move(v);
      keys = ownKeys.data();
      values = ownValues.data();
      keyLen = length;
    }
  } else {
    if (memory) {
      cache.memoryKeys = project(w.k, memory->data.data(), memory->length,
                                 l.kvHeads);
      cache.memoryValues = project(w.v, memory->data.data(), memory->length,
                                   l.kvHeads);
      cache.memoryLength = memory->length;
    }
    if (!cache.memoryLength)
      return error("a decoder with cross_attention needs the encoder memory "
                   "(attn-run --memory)");
    keys = cache.memoryKeys.data();
    values = cache.memoryValues.data();
    keyLen = cache.memoryLength;
  }

  auto compiled = kernelFor(role, batch, length, keyLen);
  if (!compiled)
    return compiled.takeError();
  std::vector<MemRefDescriptor> descriptors;
  descriptors.reserve((*compiled)->argumentNames.size());
  for (auto [name, shape] : llvm::zip((*compiled)->argumentNames,
                                      (*compiled)->argumentShapes)) {
    if (name == "q" || name == "qk") {
      descriptors.emplace_back(q.data(),
                               std::vector<int64_t>{batch, l.heads, length, hd});
    } else if (name == "k" || name == "v") {
      descriptors.emplace_back(name == "k" ? keys : values,
                               std::vector<int64_t>{batch, l.kvHeads, keyLen,
                                                    hd});
    } else {
      auto it = w.extras.find(name);
      if (it == w.extras.end())
        return error("the attention needs operand '" + name +
                     "', which the layer has no weight for");
      if (it->second.shape != shape)
        return error(llvm::formatv(
            "self_attn.{0} has shape [{1}], the attention over {2} keys needs "
            "[{3}]",
            name, llvm::make_range(it->second.shape.begin(),
                                   it->second.shape.end()),
            keyLen, llvm::make_range(shape.begin(), shape.end())));
      descriptors.emplace_back(it->second.data.data(), it->second.shape);
    }
  }
  // The kernel writes into `heads` (destination-passing style).
  std::vector<float> heads(rows * l.heads * hd);
  MemRefDescriptor out(heads.data(), {batch, l.heads, length, hd});
  std::vector<MemRefDescriptor *> args;
  for (MemRefDescriptor &d : descriptors)
    args.push_back(&d);
  args.push_back(&out);
  auto start = std::chrono::steady_clock::now();
  if (llvm::Error e = (*compiled)->kernel->call(
          self ? "self_attention" : "cross_attention", args))
    return std::move(e);
  attentionSeconds += std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
  std::vector<float> merged(rows * l.heads * hd), result(rows * l.dModel);
  lm::mergeHeads(heads.data(), batch, length, l.heads, hd, merged.data());
  lm::linear(merged.data(), rows, l.heads * hd, w.o.weight.data(), w.o.bias,
             l.dModel, result.data());
  // Transformer-XL: keep only the last memory_length keys for the next
  // segment.
  if (self && l.memoryLength && cache.length > l.memoryLength) {
    int64_t bh = batch * l.kvHeads;
    cache.keys = lastRows(cache.keys, cache.length, l.memoryLength, bh, hd);
    cache.values =
        lastRows(cache.values, cache.length, l.memoryLength, bh, hd);
    cache.length = l.memoryLength;
  }
  return result;
}

std::vector<float> TransformerStack::Impl::feedForward(LayerWeights &w,
                                                       const float *x,
                                                       int64_t rows) {
  const attnspec::LayerShape &l = spec.layer;
  std::vector<float> up(rows * l.ffnHidden), result(rows * l.dModel);
  lm::linear(x, rows, l.dModel, w.up.weight.data(), w.up.bias, l.ffnHidden,
             up.data());
  if (l.activation == "swiglu") {
    std::vector<float> gate(up.size());
    lm::linear(x, rows, l.dModel, w.gate.weight.data(), w.gate.bias,
               l.ffnHidden, gate.data());
    lm::swiglu(up.data(), gate.data(), up.size());
  } else {
    lm::activate(l.activation, up.data(), up.size());
  }
  lm::linear(up.data(), rows, l.ffnHidden, w.down.weight.data(), w.down.bias,
             l.dModel, result.data());
  return result;
}

void TransformerStack::Impl::normalize(const NormWeights &n, float *x,
                                       int64_t rows) {
  const attnspec::LayerShape &l = spec.layer;
  if (l.norm == "rmsnorm")
    lm::rmsNorm(x, rows, l.dModel, n.weight.data(), l.normEps);
  else
    lm::layerNorm(x, rows, l.dModel, n.weight.data(),
                  n.bias.empty() ? nullptr : n.bias.data(), l.normEps);
}

llvm::Error TransformerStack::Impl::layer(int64_t index,
                                          std::vector<float> &h,
                                          const Activations *memory,
                                          int64_t batch, int64_t length) {
  const attnspec::LayerShape &l = spec.layer;
  LayerWeights &w = layers[l.sharedWeights ? 0 : index];
  LayerCache &cache = caches[index];
  int64_t rows = batch * length;
  bool pre = l.normPosition == "pre";
  // One residual block: pre-norm h += f(norm(h)), post-norm
  // h = norm(h + f(h)).
  auto block = [&](const NormWeights &norm,
                   auto body) -> llvm::Error {
    std::vector<float> input = h;
    if (pre)
      normalize(norm, input.data(), rows);
    llvm::Expected<std::vector<float>> r = body(input.data());
    if (!r)
      return r.takeError();
    lm::add(h.data(), r->data(), h.size());
    if (!pre)
      normalize(norm, h.data(), rows);
    return llvm::Error::success();
  };
  if (auto e = block(w.norms[0], [&](const float *in) {
        return attention(AttentionRole::Self, w.self, cache, in, nullptr,
                         batch, length);
      }))
    return e;
  if (l.hasCrossAttention())
    if (auto e = block(w.norms[1], [&](const float *in) {
          return attention(AttentionRole::Cross, w.cross, cache, in, memory,
                           batch, length);
        }))
      return e;
  return block(w.norms[l.hasCrossAttention() ? 2 : 1],
               [&](const float *in) -> llvm::Expected<std::vector<float>> {
                 return feedForward(w, in, rows);
               });
}

TransformerStack::TransformerStack(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
TransformerStack::~TransformerStack() = default;

llvm::Expected<std::unique_ptr<TransformerStack>>
TransformerStack::create(const LayerSpec &spec, const SafetensorsFile &weights,
                         TransformerOptions options) {
  // Compiled attention alternates with sgemm on the same cores: OpenMP
  // threads that spin 200 ms after each parallel region (libomp's default)
  // would slow the matmuls down. libomp reads this when the JIT loads it;
  // a user's setting wins.
  setenv("KMP_BLOCKTIME", "0", /*overwrite=*/0);
  auto impl = std::make_unique<Impl>();
  impl->spec = spec;
  impl->options = std::move(options);
  if (llvm::Error e = impl->load(weights))
    return std::move(e);
  return std::unique_ptr<TransformerStack>(
      new TransformerStack(std::move(impl)));
}

llvm::Expected<Activations>
TransformerStack::forward(const Activations &x, const Activations *memory) {
  const attnspec::LayerShape &l = impl->spec.layer;
  if (x.width != l.dModel || x.length < 1 || x.batch < 1)
    return error(llvm::formatv("the input is [{0}, {1}, {2}], the layer takes "
                               "[batch, length >= 1, d_model = {3}]",
                               x.batch, x.length, x.width, l.dModel));
  if (memory && (memory->width != l.dModel || memory->batch != x.batch ||
                 memory->length < 1))
    return error(llvm::formatv("the memory is [{0}, {1}, {2}], the layer "
                               "takes [batch = {3}, length >= 1, d_model = "
                               "{4}]",
                               memory->batch, memory->length, memory->width,
                               x.batch, l.dModel));
  if (memory && !l.hasCrossAttention())
    return error("memory given to a stack without cross-attention");
  if (!l.isDecoder())
    reset(); // encoders keep nothing between calls
  Activations result = x;
  std::vector<float> &h = result.data;
  // Absolute positions are added to the stack's input.
  if (l.positions == "learned" && impl->position + x.length > l.maxPositions)
    return error(llvm::formatv("position {0} is past max_positions ({1})",
                               impl->position + x.length - 1,
                               l.maxPositions));
  if (l.positions == "learned" || l.positions == "sinusoidal")
    for (int64_t b = 0; b < x.batch; ++b)
      for (int64_t t = 0; t < x.length; ++t)
        for (int64_t c = 0; c < l.dModel; ++c) {
          int64_t pos = impl->position + t;
          h[(b * x.length + t) * l.dModel + c] +=
              l.positions == "learned"
                  ? impl->posEmbedding[pos * l.dModel + c]
                  : float(layermath::sinusoid(pos, c, l.dModel));
        }
  for (int64_t i = 0; i < l.layers; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (llvm::Error e = impl->layer(i, h, memory, x.batch, x.length))
      return std::move(e);
    if (impl->options.onLayer)
      impl->options.onLayer(i, l.layers,
                            std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - start)
                                .count());
  }
  if (l.finalNorm)
    impl->normalize(impl->finalNorm, h.data(), x.batch * x.length);
  impl->position += x.length;
  return result;
}

void TransformerStack::reset() {
  for (LayerCache &cache : impl->caches)
    cache = LayerCache();
  impl->position = 0;
}

int64_t TransformerStack::position() const { return impl->position; }
const LayerSpec &TransformerStack::getSpec() const { return impl->spec; }
double TransformerStack::attentionSeconds() const {
  return impl->attentionSeconds;
}
