//===- LayerStack.cpp - the layer-stack executor --------------------------===//
//
// One forward call: positions on the input, then per layer the attention
// blocks (LayerAttention.cpp), residuals and norms, and the feed-forward
// block; the weights' loading and the products. Nothing here knows whether
// kernels were compiled in process or ahead of time.
//
//===----------------------------------------------------------------------===//
#include "LayerStackImpl.h"
#include "attn/Runtime/InputLimits.h"
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>

using namespace attnrt;


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

Status LayerStack::Impl::feedForward(LayerWeights &w, BlockInput &input,
                                     int64_t rows, std::vector<float> &result,
                                     const float *residual) {
  using Activation = LinearEpilogue::Activation;
  const LayerConfig &l = config;
  if (linearBackend->chainsFeedForward()) {
    LinearBackend::FeedForward block;
    block.up = w.up.prepared.get();
    block.upBias = biasOf(w.up.bias);
    if (l.activation == "swiglu") {
      block.gate = w.gate.prepared.get();
      block.gateBias = biasOf(w.gate.bias);
    } else {
      block.activation = activationNamed(l.activation);
    }
    block.down = w.down.prepared.get();
    block.downBias = biasOf(w.down.bias);
    block.norm = input.deviceNorm;
    input.normUsed = block.norm != nullptr;
    result.resize(rows * l.dModel); // written whole by the block
    return linearBackend->feedForward(input.chainInput(), rows, block, residual,
                                      result.data());
  }
  const float *x = input.normalized();
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
  const float *bias = biasOf(w.bias);
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
                  biasOf(n.bias), l.normEps);
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
    // Post-norm blocks read h itself (they write r); pre-norm's input is
    // made when a path asks for it.
    std::vector<float> normalized, r;
    // The block's last product adds h to its output where the backend
    // fuses that (not when partial sums cross ranks first): r is then the
    // new h.
    const float *residual =
        fusesEpilogues() && !sumAcrossRanks ? h.data() : nullptr;
    // A chain may run the norm where the block runs (the residual added
    // there too).
    LinearBackend::BlockNorm deviceNorm{norm.weight.data(), biasOf(norm.bias),
                                        l.norm == "rmsnorm", pre, l.normEps};
    BlockInput in;
    in.stream = h.data();
    if (residual && linearBackend->chainsNorms())
      in.deviceNorm = &deviceNorm;
    in.normalized = [&]() -> const float * {
      if (!pre)
        return h.data();
      if (normalized.empty()) {
        normalized = h;
        normalize(norm, normalized.data(), rows);
      }
      return normalized.data();
    };
    Status s = body(in, r, residual);
    if (!s.failed() && !residual && sumAcrossRanks)
      s = sumAcrossRanks(r);
    if (s.failed())
      return s;
    if (residual)
      h.swap(r);
    else
      lm::add(h.data(), r.data(), h.size());
    if (!pre && !in.normUsed)
      normalize(norm, h.data(), rows);
    return Status::ok();
  };
  Status s = block(w.norms[0], [&](BlockInput &in, std::vector<float> &r,
                                   const float *residual) {
    return attention(index, AttentionBlock::Self, w.self, cache, in, nullptr,
                     batch, length, r, residual);
  });
  if (!s.failed() && l.hasCrossAttention())
    s = block(w.norms[1], [&](BlockInput &in, std::vector<float> &r,
                              const float *residual) {
      return attention(index, AttentionBlock::Cross, w.cross, cache, in, memory,
                       batch, length, r, residual);
    });
  if (s.failed())
    return s;
  return block(
      w.norms[l.hasCrossAttention() ? 2 : 1],
      [&](BlockInput &in, std::vector<float> &r, const float *residual) {
        return feedForward(w, in, rows, r, residual);
      });
}

uint64_t attnrt::newRowsVersion() {
  static std::atomic<uint64_t> next{1};
  return next++;
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
              l.positions == "learned" ? posEmbedding[pos * l.dModel + c]
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
      return "packed sequence lengths must be >= 1, got " + std::to_string(n) +
             " (sequence " + std::to_string(i) + ")";
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
    return Status::error("a padded batch is [batch, length, d_model = " +
                         std::to_string(impl->config.dModel) +
                         "] with a length per sequence; "
                         "the input is " +
                         shapeText({x.batch, x.length, x.width}) + " with " +
                         std::to_string(lengths.size()) + " lengths");
  int64_t total = 0;
  for (size_t b = 0; b < lengths.size(); ++b) {
    if (lengths[b] < 1 || lengths[b] > x.length)
      return Status::error("sequence " + std::to_string(b) + " has length " +
                           std::to_string(lengths[b]) + "; a padded batch of " +
                           std::to_string(x.length) + " rows takes 1 to " +
                           std::to_string(x.length));
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
