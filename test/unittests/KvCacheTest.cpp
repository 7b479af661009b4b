//===- KvCacheTest.cpp - decode steps read the KV cache in place ----------===//
//
// A decoder stack keeps its keys and values with spare rows after each KV
// head's block (KvRows.h) and reads them in place through the kernel of one
// KV head's query group (AttentionBlock::SelfOneKvHead), one call per
// (sequence, KV head). These run a small GQA decoder on a plain C++ linear
// backend and an attention kernel computed in double here, and check that
// - decode steps give the whole pass's answer, with and without the
//   per-KV-head kernel (without it the cache is copied dense each step);
// - decode steps call the per-KV-head kernel on cache rows that stay where
//   they are until the cache grows, and hand it its query group's rows of
//   a per-head table operand (as T5's rel_table);
// - a bf16 kernel receives bf16 operands (the cache rounded once) and its
//   answer is the f32 one to bf16's precision, not equal to it.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/HalfFloat.h"
#include "attn/Runtime/LayerStack.h"
#include <gtest/gtest.h>
#include <cmath>

using namespace attnrt;

namespace {

/// y += x W^T in plain loops (W stored [out, in]).
class PlainBackend : public LinearBackend {
public:
  struct Matrix : Weight {
    int64_t in, out;
    std::vector<float> w;
    int64_t bytes() const override { return int64_t(w.size()) * 4; }
  };
  Status prepare(int64_t out, int64_t in, const std::vector<float> &weight,
                 std::shared_ptr<const Weight> &prepared) override {
    auto m = std::make_shared<Matrix>();
    m->in = in;
    m->out = out;
    m->w = weight;
    prepared = m;
    return Status::ok();
  }
  Status accumulate(const float *x, int64_t rows, const Weight &weight,
                    float *y) override {
    const auto &m = static_cast<const Matrix &>(weight);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < m.out; ++o) {
        double sum = 0;
        for (int64_t i = 0; i < m.in; ++i)
          sum += double(x[r * m.in + i]) * m.w[o * m.in + i];
        y[r * m.out + o] += float(sum);
      }
    return Status::ok();
  }
};

constexpr int64_t kTableColumns = 3;

/// Seeded weights in [-0.5, 0.5) / sqrt(fan-in); norm weights near 1.
Status readWeight(const std::string &name, const std::vector<int64_t> *required,
                  std::vector<int64_t> &shape, std::vector<float> &data) {
  // Variant operands come without a required shape: the per-head table
  // of tableDecoder(), [heads, kTableColumns].
  shape = required ? *required : std::vector<int64_t>{4, kTableColumns};
  int64_t count = 1;
  for (int64_t s : shape)
    count *= s;
  uint64_t state = std::hash<std::string>()(name) | 1;
  data.resize(count);
  float scale = 1.0f / std::sqrt(float(shape.back()));
  for (float &x : data) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x = (float((state >> 40) & 0xffff) / 65536.0f - 0.5f) * scale;
  }
  if (name.find("norm") != std::string::npos)
    for (float &x : data)
      x += 1.0f;
  return Status::ok();
}

LayerConfig gqaDecoder() {
  LayerConfig c;
  c.type = "decoder";
  c.dModel = 16;
  c.heads = 4;
  c.kvHeads = 2;
  c.headDim = 4;
  c.ffnHidden = 24;
  c.activation = "relu";
  c.norm = "rmsnorm";
  c.normPosition = "pre";
  c.bias = false;
  c.layers = 2;
  c.positions = "rope";
  c.crossAttention = false;
  return c;
}

/// gqaDecoder() with a per-head table operand (as T5's rel_table).
LayerConfig tableDecoder() {
  LayerConfig c = gqaDecoder();
  c.variantOperands = {"rel_table"};
  return c;
}

struct Call {
  AttentionBlock block;
  const void *keys;
  int64_t keyLen;
};

/// Causal (bottom-right) softmax attention in double, q [B, H, Lq, D] over
/// k, v [B, Hkv, Lk, D]; f32 or bf16 operands. With `table`, a fourth
/// operand [H, kTableColumns] adds table[h][min(distance, columns - 1)] to
/// head h's scores (a stand-in for T5's buckets).
struct Kernels {
  bool oneKvHead = true, bf16 = false;
  std::vector<Call> calls;
  AttentionKernel whole, perKvHead;

  Kernels(bool oneKvHead, bool bf16, bool table = false)
      : oneKvHead(oneKvHead), bf16(bf16) {
    for (AttentionKernel *k : {&whole, &perKvHead}) {
      k->argumentNames = {"q", "k", "v"};
      if (table)
        k->argumentNames.push_back("rel_table");
      k->bf16 = bf16;
      k->call = [this, k](const std::vector<KernelOperand> &in,
                          const KernelOperand &out) {
        calls.push_back({k == &whole ? AttentionBlock::Self
                                     : AttentionBlock::SelfOneKvHead,
                         in[1].data, in[1].shape[2]});
        return attend(in, out);
      };
    }
  }
  float load(const void *data, int64_t i) const {
    return bf16 ? bfloat16BitsToFloat(static_cast<const uint16_t *>(data)[i])
                : static_cast<const float *>(data)[i];
  }
  Status attend(const std::vector<KernelOperand> &in,
                const KernelOperand &out) const {
    int64_t batch = in[0].shape[0], heads = in[0].shape[1],
            lq = in[0].shape[2], dim = in[0].shape[3],
            kvHeads = in[1].shape[1], lk = in[1].shape[2];
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h) {
        int64_t g = h / (heads / kvHeads);
        for (int64_t i = 0; i < lq; ++i) {
          int64_t qRow = ((b * heads + h) * lq + i) * dim;
          std::vector<double> scores;
          double max = -INFINITY;
          for (int64_t j = 0; j <= lk - lq + i; ++j) {
            int64_t kRow = ((b * kvHeads + g) * lk + j) * dim;
            double s = 0;
            for (int64_t d = 0; d < dim; ++d)
              s += double(load(in[0].data, qRow + d)) *
                   load(in[1].data, kRow + d);
            s /= std::sqrt(double(dim));
            if (in.size() > 3) {
              EXPECT_EQ(in[3].shape,
                        (std::vector<int64_t>{heads, kTableColumns}));
              int64_t distance = lk - lq + i - j;
              s += static_cast<const float *>(
                  in[3].data)[h * kTableColumns +
                              std::min(distance, kTableColumns - 1)];
            }
            scores.push_back(s);
            max = std::max(max, scores.back());
          }
          double sum = 0;
          std::vector<double> o(dim, 0.0);
          for (size_t j = 0; j < scores.size(); ++j) {
            double p = std::exp(scores[j] - max);
            sum += p;
            int64_t vRow = ((b * kvHeads + g) * lk + j) * dim;
            for (int64_t d = 0; d < dim; ++d)
              o[d] += p * load(in[2].data, vRow + d);
          }
          for (int64_t d = 0; d < dim; ++d) {
            float value = float(o[d] / sum);
            if (bf16)
              static_cast<uint16_t *>(out.data)[qRow + d] =
                  floatToBFloat16Bits(value);
            else
              static_cast<float *>(out.data)[qRow + d] = value;
          }
        }
      }
    return Status::ok();
  }
  KernelProvider provider() {
    return [this](AttentionBlock block, int64_t, int64_t, int64_t,
                  const AttentionKernel *&kernel) {
      if (block == AttentionBlock::Cross)
        return Status::error("no cross-attention here");
      kernel = block == AttentionBlock::Self ? &whole
               : oneKvHead                   ? &perKvHead
                                             : nullptr;
      return Status::ok();
    };
  }
};

constexpr int64_t kBatch = 2, kPrompt = 5, kSteps = 7;

/// Seeded tokens [kBatch, kPrompt + kSteps, 16].
Activations tokens() {
  Activations x(kBatch, kPrompt + kSteps, 16);
  for (size_t i = 0; i < x.data.size(); ++i)
    x.data[i] = std::sin(0.37 * double(i)) + 0.1 * std::cos(3.1 * double(i));
  return x;
}

/// Rows [first, first + n) of every sequence of x.
Activations rows(const Activations &x, int64_t first, int64_t n) {
  Activations part(x.batch, n, x.width);
  for (int64_t b = 0; b < x.batch; ++b)
    std::copy_n(x.data.begin() + (b * x.length + first) * x.width,
                n * x.width, part.data.begin() + b * n * x.width);
  return part;
}

/// The prompt, then kSteps decode steps of one token: their outputs laid
/// out as a whole pass over the prompt and the steps would be.
Activations decode(Kernels &kernels, const LayerConfig &config = gqaDecoder()) {
  std::unique_ptr<LayerStack> stack;
  Status s = LayerStack::create(config, readWeight, kernels.provider(),
                                stack, std::make_shared<PlainBackend>());
  EXPECT_FALSE(s.failed()) << s.message();
  Activations x = tokens(), all(kBatch, kPrompt + kSteps, 16), out;
  for (int64_t t = 0; t < kPrompt + kSteps; t = t ? t + 1 : kPrompt) {
    int64_t n = t ? 1 : kPrompt;
    s = stack->forward(rows(x, t, n), nullptr, out);
    EXPECT_FALSE(s.failed()) << s.message();
    for (int64_t b = 0; b < kBatch; ++b)
      std::copy_n(out.data.begin() + b * n * 16, n * 16,
                  all.data.begin() + (b * all.length + t) * 16);
  }
  return all;
}

Activations wholePass(bool bf16, bool table = false) {
  Kernels kernels(/*oneKvHead=*/true, bf16, table);
  std::unique_ptr<LayerStack> stack;
  Status s = LayerStack::create(table ? tableDecoder() : gqaDecoder(),
                                readWeight, kernels.provider(),
                                stack, std::make_shared<PlainBackend>());
  EXPECT_FALSE(s.failed()) << s.message();
  Activations out;
  s = stack->forward(tokens(), nullptr, out);
  EXPECT_FALSE(s.failed()) << s.message();
  return out;
}

double maxDifference(const Activations &a, const Activations &b) {
  double most = 0;
  for (size_t i = 0; i < a.data.size(); ++i)
    most = std::max(most, std::fabs(double(a.data[i]) - b.data[i]));
  return most;
}

// Decode steps and the whole pass compute the same sums in a different
// order (the products here accumulate in double, the stack's softmax
// inputs and norms in f32): they agree to a few f32 ulps of values of
// order 1, far below 1e-5; a wrong key or position is off by > 1e-2.
constexpr double kF32Bound = 1e-5;

TEST(KvCacheTest, DecodeStepsReadTheCacheInPlace) {
  Kernels kernels(/*oneKvHead=*/true, /*bf16=*/false);
  Activations steps = decode(kernels);
  EXPECT_LT(maxDifference(steps, wholePass(false)), kF32Bound);

  // The prompt runs the whole kernel on the dense cache (5 rows per KV
  // head). The first step grows it to 10: steps over 6-9 keys make one
  // call per (sequence, KV head) per layer on rows that stay in place; the
  // step over 10 keys finds the cache dense again (the whole kernel); the
  // next grows it to 20 and reads the moved rows.
  int64_t perStep = 2 * kBatch * 2; // layers x sequences x KV heads
  ASSERT_EQ(kernels.calls.size(), size_t(2 + 4 * perStep + 2 + 2 * perStep));
  const Call *call = kernels.calls.data();
  for (int layer = 0; layer < 2; ++layer, ++call) {
    EXPECT_EQ(call->block, AttentionBlock::Self);
    EXPECT_EQ(call->keyLen, kPrompt);
  }
  std::vector<const void *> grownOnce; // the keys of each call, first step
  for (int64_t keys = 6; keys <= 12; ++keys) {
    if (keys == 10) {
      for (int layer = 0; layer < 2; ++layer, ++call) {
        EXPECT_EQ(call->block, AttentionBlock::Self);
        EXPECT_EQ(call->keyLen, 10);
      }
      continue;
    }
    for (int64_t c = 0; c < perStep; ++c, ++call) {
      EXPECT_EQ(call->block, AttentionBlock::SelfOneKvHead);
      EXPECT_EQ(call->keyLen, keys);
      if (keys == 6)
        grownOnce.push_back(call->keys);
      else if (keys < 10)
        EXPECT_EQ(call->keys, grownOnce[c]) << keys << " keys, call " << c;
      else
        EXPECT_NE(call->keys, grownOnce[c]) << keys << " keys, call " << c;
    }
  }
}

TEST(KvCacheTest, PerKvHeadCallsTakeTheirGroupsRowsOfPerHeadTables) {
  Kernels kernels(/*oneKvHead=*/true, /*bf16=*/false, /*table=*/true);
  Activations steps = decode(kernels, tableDecoder());
  // Another group's rows (or the whole table's first rows) would move the
  // scores of half the heads by up to ~1: far beyond kF32Bound.
  EXPECT_LT(maxDifference(steps, wholePass(false, /*table=*/true)),
            kF32Bound);
  EXPECT_GT(maxDifference(wholePass(false, true), wholePass(false)), 1e-3);
  size_t perKvHeadCalls = 0;
  for (const Call &call : kernels.calls)
    perKvHeadCalls += call.block == AttentionBlock::SelfOneKvHead;
  EXPECT_EQ(perKvHeadCalls, size_t(6 * 2 * kBatch * 2));
}

TEST(KvCacheTest, WithoutThePerKvHeadKernelTheCacheIsCopiedDense) {
  Kernels kernels(/*oneKvHead=*/false, /*bf16=*/false);
  Activations steps = decode(kernels);
  EXPECT_LT(maxDifference(steps, wholePass(false)), kF32Bound);
  ASSERT_EQ(kernels.calls.size(), size_t(2 + kSteps * 2));
  for (const Call &call : kernels.calls)
    EXPECT_EQ(call.block, AttentionBlock::Self);
}

TEST(KvCacheTest, Bf16KernelsReadABf16Cache) {
  Kernels kernels(/*oneKvHead=*/true, /*bf16=*/true);
  Activations steps = decode(kernels);
  // q, k, v and the attention's output rounded to bf16 (relative error
  // 2^-9 each) move outputs of order 1 by ~1e-2 at most through two
  // layers; f32 operands would leave them within kF32Bound.
  double fromF32 = maxDifference(steps, wholePass(false));
  EXPECT_LT(fromF32, 3e-2);
  EXPECT_GT(fromF32, 1e-4);
  // Decode steps on the bf16 cache and the bf16 whole pass round the same
  // values: they agree as closely as f32 runs do, but for the rounding of
  // sums that land near a bf16 tie.
  EXPECT_LT(maxDifference(steps, wholePass(true)), 1e-2);
}

} // namespace
