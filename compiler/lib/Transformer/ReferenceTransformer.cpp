//===- ReferenceTransformer.cpp - plain double-precision layer stacks -----===//
//
// The reference `attn-run --check` compares a layer stack against: a whole
// sequence at once, every step in double, loops written from
// docs/Transformer.md and sharing no code with the executor (only the
// weight names, Weights.h). Attention is the caller's, bound to the
// attention reference.
//
//===----------------------------------------------------------------------===//
#include "Weights.h"
#include "attn/Compiler/Transformer.h"
#include "attn/Runtime/HalfFloat.h"
#include <cmath>

using namespace attnrt;
using attnspec::AttentionRole;
using attnspec::LayerSpec;

namespace {
using Vec = std::vector<double>;

struct Reference {
  const LayerSpec &spec;
  const SafetensorsFile &file;
  const ReferenceAttention &attentionFn;
  bool naive;
  const attnspec::LayerShape &l = spec.layer;
  /// The 16-bit type matrix weights are kept in, if any.
  std::optional<FloatFormat> half =
      spec.dtype == "f32" ? std::nullopt
                          : std::optional(floatFormatOf(spec.dtype));

  /// `x` rounded to the layer's 16-bit type (through f32, as stored).
  double rounded(double x) const {
    return fromBits(*half, toBits(*half, float(x)));
  }

  llvm::Expected<Vec> tensor(const std::string &name,
                             std::vector<int64_t> shape) {
    auto data = file.read(name, shape);
    if (!data)
      return data.takeError();
    return Vec(data->begin(), data->end());
  }

  /// x [rows, in] -> [rows, out] with weight [out, in] and bias [out].
  llvm::Expected<Vec> linear(const std::string &name, const Vec &input,
                             int64_t rows, int64_t in, int64_t out) {
    auto w = tensor(name + ".weight", {out, in});
    if (!w)
      return w.takeError();
    Vec x = input;
    if (half) {
      for (double &e : *w)
        e = rounded(e);
      if (naive)
        for (double &e : x)
          e = rounded(e);
    }
    Vec b(out, 0.0);
    if (l.bias) {
      auto bias = tensor(name + ".bias", {out});
      if (!bias)
        return bias.takeError();
      b = *bias;
    }
    Vec y(rows * out);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < out; ++o) {
        double s = b[o];
        for (int64_t i = 0; i < in; ++i)
          s += x[r * in + i] * (*w)[o * in + i];
        y[r * out + o] = half && naive ? rounded(s) : s;
      }
    return y;
  }

  llvm::Expected<Vec> norm(const std::string &name, const Vec &x,
                           int64_t rows) {
    int64_t d = l.dModel;
    auto g = tensor(name + ".weight", {d});
    if (!g)
      return g.takeError();
    Vec beta(d, 0.0);
    bool layerNorm = l.norm == "layernorm";
    if (layerNorm && l.bias) {
      auto bias = tensor(name + ".bias", {d});
      if (!bias)
        return bias.takeError();
      beta = *bias;
    }
    Vec y(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      const double *row = &x[r * d];
      double mean = 0, var = 0;
      if (layerNorm) {
        for (int64_t c = 0; c < d; ++c)
          mean += row[c] / d;
      }
      for (int64_t c = 0; c < d; ++c)
        var += (row[c] - mean) * (row[c] - mean) / d;
      double inv = 1 / std::sqrt(var + l.normEps);
      for (int64_t c = 0; c < d; ++c)
        y[r * d + c] = (row[c] - mean) * inv * (*g)[c] + beta[c];
    }
    return y;
  }

  /// Rotates [B, H, L, D] rows by their positions (docs/Dialect.md,
  /// attn.rope).
  void rope(Vec &x, int64_t batch, int64_t heads, int64_t length) {
    int64_t D = l.headDim;
    for (int64_t bh = 0; bh < batch * heads; ++bh)
      for (int64_t t = 0; t < length; ++t)
        for (int64_t n = 0; n < D / 2; ++n) {
          double theta = t * std::pow(l.ropeBase, -2.0 * n / D);
          bool inter = l.ropeStyle == "interleaved";
          int64_t a = inter ? 2 * n : n, b = inter ? 2 * n + 1 : n + D / 2;
          double *row = &x[(bh * length + t) * D];
          double xa = row[a], xb = row[b];
          row[a] = xa * std::cos(theta) - xb * std::sin(theta);
          row[b] = xa * std::sin(theta) + xb * std::cos(theta);
        }
  }

  /// [B, L, H*D] -> float [B, H, L, D].
  std::vector<float> heads(const Vec &x, int64_t batch, int64_t length,
                           int64_t h) {
    int64_t D = l.headDim;
    std::vector<float> y(x.size());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < length; ++t)
        for (int64_t i = 0; i < h; ++i)
          for (int64_t c = 0; c < D; ++c)
            y[((b * h + i) * length + t) * D + c] =
                float(x[((b * length + t) * h + i) * D + c]);
    return y;
  }

  llvm::Expected<Vec> attention(AttentionRole role, const std::string &p,
                                const Vec &x, const Vec *memory, int64_t batch,
                                int64_t length, int64_t memoryLength) {
    int64_t d = l.dModel, H = l.heads, Hkv = l.kvHeads, D = l.headDim;
    bool self = role == AttentionRole::Self;
    const Vec &kvInput = self ? x : *memory;
    int64_t keyLen = self ? length : memoryLength;
    auto q = linear(p + "q_proj", x, batch * length, d, H * D);
    if (!q)
      return q.takeError();
    bool shared = self && sharesQueryKey(spec);
    auto k = shared ? Vec(*q)
                    : linear(p + "k_proj", kvInput, batch * keyLen, d, Hkv * D);
    if (!k)
      return k.takeError();
    auto v = linear(p + "v_proj", kvInput, batch * keyLen, d, Hkv * D);
    if (!v)
      return v.takeError();
    std::vector<float> qh = heads(*q, batch, length, H);
    std::vector<float> kh = heads(*k, batch, keyLen, Hkv);
    std::vector<float> vh = heads(*v, batch, keyLen, Hkv);
    if (self && l.positions == "rope") {
      Vec qd(qh.begin(), qh.end()), kd(kh.begin(), kh.end());
      rope(qd, batch, H, length);
      rope(kd, batch, Hkv, keyLen);
      qh.assign(qd.begin(), qd.end());
      kh.assign(kd.begin(), kd.end());
    }
    std::map<std::string, const float *> operands = {{"q", qh.data()},
                                                     {"qk", qh.data()},
                                                     {"k", kh.data()},
                                                     {"v", vh.data()}};
    std::map<std::string, std::vector<float>> extras;
    if (self)
      for (auto &[name, shape] : variantOperands(spec, keyLen)) {
        auto data = file.read(p + name, shape);
        if (!data)
          return data.takeError();
        extras[name] = std::move(*data);
        operands[name] = extras[name].data();
      }
    auto o = attentionFn(role, length, keyLen, operands);
    if (!o)
      return o.takeError();
    // [B, H, L, D] -> [B, L, H*D].
    Vec merged(batch * length * H * D);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t t = 0; t < length; ++t)
          for (int64_t c = 0; c < D; ++c)
            merged[((b * length + t) * H + i) * D + c] =
                (*o)[((b * H + i) * length + t) * D + c];
    return linear(p + "o_proj", merged, batch * length, H * D, d);
  }

  llvm::Expected<Vec> feedForward(const std::string &p, const Vec &x,
                                  int64_t rows) {
    int64_t d = l.dModel, f = l.ffnHidden;
    auto up = linear(p + "linear1", x, rows, d, f);
    if (!up)
      return up.takeError();
    Vec gate;
    if (l.activation == "swiglu") {
      auto g = linear(p + "linear_gate", x, rows, d, f);
      if (!g)
        return g.takeError();
      gate = std::move(*g);
    }
    for (size_t i = 0; i < up->size(); ++i) {
      double u = (*up)[i];
      if (l.activation == "relu")
        u = std::max(u, 0.0);
      else if (l.activation == "gelu")
        u = 0.5 * u * (1 + std::erf(u / std::sqrt(2.0)));
      else if (l.activation == "gelu_tanh")
        u = 0.5 * u *
            (1 + std::tanh(std::sqrt(2 / M_PI) * (u + 0.044715 * u * u * u)));
      else // swiglu: silu(gate) * up
        u *= gate[i] / (1 + std::exp(-gate[i]));
      (*up)[i] = u;
    }
    return linear(p + "linear2", *up, rows, f, d);
  }
};
} // namespace

llvm::Expected<std::vector<double>>
attnrt::referenceForward(const LayerSpec &spec, const SafetensorsFile &file,
                         const Activations &x, const Activations *memory,
                         const ReferenceAttention &attention, bool naive) {
  Reference ref{spec, file, attention, naive};
  const attnspec::LayerShape &l = spec.layer;
  int64_t batch = x.batch, length = x.length, d = l.dModel,
          rows = batch * length;
  Vec h(x.data.begin(), x.data.end());
  if (l.positions == "learned") {
    auto table = ref.tensor("pos_embedding", {l.maxPositions, d});
    if (!table)
      return table.takeError();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < d; ++c)
        h[r * d + c] += (*table)[(r % length) * d + c];
  } else if (l.positions == "sinusoidal") {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < d; ++c) {
        double angle =
            (r % length) / std::pow(10000.0, (c - c % 2) / double(d));
        h[r * d + c] += c % 2 ? std::cos(angle) : std::sin(angle);
      }
  }
  Vec mem;
  if (memory)
    mem.assign(memory->data.begin(), memory->data.end());
  bool pre = l.normPosition == "pre";
  for (int64_t i = 0; i < l.layers; ++i) {
    std::string p = layerPrefix(spec, i);
    auto block = [&](const std::string &normName, auto body) -> llvm::Error {
      Vec input = h;
      if (pre) {
        auto n = ref.norm(normName, h, rows);
        if (!n)
          return n.takeError();
        input = std::move(*n);
      }
      llvm::Expected<Vec> r = body(input);
      if (!r)
        return r.takeError();
      for (size_t j = 0; j < h.size(); ++j)
        h[j] += (*r)[j];
      if (!pre) {
        auto n = ref.norm(normName, h, rows);
        if (!n)
          return n.takeError();
        h = std::move(*n);
      }
      return llvm::Error::success();
    };
    if (auto e = block(p + "norm1", [&](const Vec &in) {
          return ref.attention(AttentionRole::Self, p + "self_attn.", in,
                               nullptr, batch, length, 0);
        }))
      return std::move(e);
    if (l.hasCrossAttention()) {
      if (!memory)
        return llvm::createStringError("the reference needs the memory");
      if (auto e = block(p + "norm2", [&](const Vec &in) {
            return ref.attention(AttentionRole::Cross, p + "cross_attn.", in,
                                 &mem, batch, length, memory->length);
          }))
        return std::move(e);
    }
    if (auto e =
            block(p + (l.hasCrossAttention() ? "norm3" : "norm2"),
                  [&](const Vec &in) { return ref.feedForward(p, in, rows); }))
      return std::move(e);
  }
  if (l.finalNorm) {
    auto n = ref.norm("final_norm", h, rows);
    if (!n)
      return n.takeError();
    h = std::move(*n);
  }
  return h;
}
