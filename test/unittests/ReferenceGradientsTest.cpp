//===- ReferenceGradientsTest.cpp - the f64 backward against differences --===//
//
// attentionGradients (the reference every backward kernel is checked
// against) held against central finite differences of the forward
// reference: L = sum dO . O, dL/dx ~ (L(x + h) - L(x - h)) / (x+h - x-h) for
// entries of Q, K, V, the bias and the relative-position table, over
// problems with patterns, GQA, soft-cap and every differentiable mod. The
// perturbed values are rounded to f32 (the operands' type), so the actual
// step is used as the denominator. With h ~ 1e-2 the central difference's
// error is O(h^2 L''') ~ 1e-5 of the gradients' scale here; a wrong formula
// (a missing 1 - tanh^2, a dropped GQA head, a sign) is off by O(1).
//
//===----------------------------------------------------------------------===//
#include "attn/Tooling/Reference.h"
#include <gtest/gtest.h>
#include <random>

using namespace attnrt::reference;

namespace {

struct Buffers {
  std::vector<float> q, k, v, bias, relTable, dOut;
  std::vector<float> captured; // a score region's one captured tensor
  std::vector<uint8_t> mask;
};

double loss(AttentionProblem pb, const Buffers &x) {
  pb.query = x.q.data();
  pb.key = x.k.data();
  pb.value = x.v.data();
  pb.bias = x.bias.empty() ? nullptr : x.bias.data();
  pb.relTable = x.relTable.empty() ? nullptr : x.relTable.data();
  pb.mask = x.mask.empty() ? nullptr : x.mask.data();
  if (pb.score)
    pb.score->captured = {x.captured.data()};
  std::vector<double> out = attention(pb);
  double sum = 0;
  for (size_t e = 0; e < out.size(); ++e)
    sum += out[e] * double(x.dOut[e]);
  return sum;
}

/// Checks `analytic` against finite differences at every entry of
/// `Buffers::*member` (up to 40 of them, spread over the buffer).
void checkEntries(const AttentionProblem &pb, Buffers x,
                  std::vector<float> Buffers::*member,
                  const std::vector<double> &analytic, const char *what) {
  std::vector<float> &buffer = x.*member;
  ASSERT_EQ(buffer.size(), analytic.size()) << what;
  double scale = 0;
  for (double g : analytic)
    scale = std::max(scale, std::abs(g));
  ASSERT_GT(scale, 0) << what << ": an all-zero gradient tests nothing";
  size_t step = std::max<size_t>(1, buffer.size() / 40);
  for (size_t e = 0; e < buffer.size(); e += step) {
    float saved = buffer[e];
    float up = saved + 1e-2f, down = saved - 1e-2f;
    buffer[e] = up;
    double lUp = loss(pb, x);
    buffer[e] = down;
    double lDown = loss(pb, x);
    buffer[e] = saved;
    double numeric = (lUp - lDown) / (double(up) - double(down));
    EXPECT_NEAR(analytic[e], numeric, 2e-4 * scale + 1e-7)
        << what << "[" << e << "]";
  }
}

AttentionProblem makeProblem(Buffers &x, int64_t hq, int64_t hkv, int64_t lq,
                             int64_t lk, int64_t d, unsigned seed) {
  AttentionProblem pb;
  pb.batch = 2;
  pb.queryHeads = hq;
  pb.keyHeads = hkv;
  pb.queryLen = lq;
  pb.keyLen = lk;
  pb.headDim = pb.valueDim = d;
  pb.scale = 1.0 / std::sqrt(double(d));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  auto fill = [&](std::vector<float> &v, size_t n) {
    v.resize(n);
    for (float &f : v)
      f = u(rng);
  };
  fill(x.q, pb.batch * hq * lq * d);
  fill(x.k, pb.batch * hkv * lk * d);
  fill(x.v, pb.batch * hkv * lk * d);
  fill(x.dOut, pb.batch * hq * lq * d);
  return pb;
}

void checkAll(AttentionProblem pb, Buffers &x) {
  pb.query = x.q.data();
  pb.key = x.k.data();
  pb.value = x.v.data();
  pb.bias = x.bias.empty() ? nullptr : x.bias.data();
  pb.relTable = x.relTable.empty() ? nullptr : x.relTable.data();
  pb.mask = x.mask.empty() ? nullptr : x.mask.data();
  if (pb.score)
    pb.score->captured = {x.captured.data()};
  Gradients g = attentionGradients(pb, x.dOut.data());
  checkEntries(pb, x, &Buffers::q, g.query, "dQ");
  checkEntries(pb, x, &Buffers::k, g.key, "dK");
  checkEntries(pb, x, &Buffers::v, g.value, "dV");
  if (!x.bias.empty())
    checkEntries(pb, x, &Buffers::bias, g.bias, "dBias");
  if (!x.relTable.empty())
    checkEntries(pb, x, &Buffers::relTable, g.relTable, "dRelTable");
  if (pb.score)
    checkEntries(pb, x, &Buffers::captured, g.captured[0], "dCaptured");
}

TEST(ReferenceGradients, Dense) {
  Buffers x;
  AttentionProblem pb = makeProblem(x, 2, 2, 5, 7, 4, 1);
  checkAll(pb, x);
}

TEST(ReferenceGradients, CausalGqaBottomRight) {
  Buffers x;
  AttentionProblem pb = makeProblem(x, 4, 2, 3, 6, 4, 2);
  pb.pattern = Pattern{};
  pb.bottomRight = true;
  checkAll(pb, x);
}

TEST(ReferenceGradients, WindowWithMaskAndPerKeyBias) {
  Buffers x;
  AttentionProblem pb = makeProblem(x, 2, 1, 6, 6, 3, 3);
  Pattern window;
  window.kind = Pattern::Kind::Window;
  window.a = 2;
  window.b = 1;
  pb.pattern = window;
  x.mask.assign(6 * 6, 1);
  x.mask[2 * 6 + 1] = 0; // row 2 drops key 1 too
  x.bias.resize(2 * 1 * 1 * 6);
  for (size_t e = 0; e < x.bias.size(); ++e)
    x.bias[e] = 0.3f * float(e % 5) - 0.5f;
  pb.biasBatch = 2;
  pb.biasHeads = 1;
  pb.biasPerKey = true;
  checkAll(pb, x);
}

TEST(ReferenceGradients, SoftcapAlibiAndDenseBias) {
  Buffers x;
  AttentionProblem pb = makeProblem(x, 2, 2, 4, 5, 4, 4);
  pb.scale = 2.0; // large logits: tanh's slope matters
  ScoreMod cap;
  cap.kind = ScoreMod::Kind::Softcap;
  cap.x = 1.5;
  ScoreMod alibi;
  alibi.kind = ScoreMod::Kind::Alibi;
  alibi.x = 8;
  pb.mods = {alibi, cap};
  x.bias.resize(1 * 2 * 4 * 5);
  for (size_t e = 0; e < x.bias.size(); ++e)
    x.bias[e] = 0.1f * float(e % 7);
  pb.biasHeads = 2;
  checkAll(pb, x);
}

// A score region (here a C++ function, in attn-run the interpreted IR):
// y = x w[h] + 0.5 tanh(x) + w[2 + j % 2] reading the captured w twice per
// logit; the reference differentiates it by central differences of its
// own evaluation, checked here against differences of the forward.
TEST(ReferenceGradients, ScoreRegionWithCapturedTensor) {
  Buffers x;
  AttentionProblem pb = makeProblem(x, 2, 1, 5, 6, 4, 7);
  pb.pattern = Pattern{};
  pb.bottomRight = true;
  x.captured = {0.8f, -0.6f, 0.3f, -0.2f};
  ScoreFunction f;
  f.capturedSizes = {4};
  f.captured = {nullptr};
  f.constantData = {{}};
  f.evaluate = [](const ScoreFunction &self, double v, int64_t, int64_t h,
                  int64_t, int64_t j, int64_t shiftRead, double shift,
                  std::vector<ScoreFunction::Read> *reads) {
    int64_t at[2] = {h, 2 + j % 2};
    double w[2];
    for (int n = 0; n < 2; ++n) {
      w[n] = self.data(0)[at[n]] + (n == shiftRead ? shift : 0.0);
      if (reads)
        reads->push_back({0, at[n]});
    }
    return v * w[0] + 0.5 * std::tanh(v) + w[1];
  };
  pb.score = f;
  checkAll(pb, x);
}

TEST(ReferenceGradients, T5TableThenDistanceWeight) {
  Buffers x;
  AttentionProblem pb = makeProblem(x, 2, 2, 5, 5, 3, 5);
  ScoreMod t5;
  t5.kind = ScoreMod::Kind::T5Bias;
  t5.n = 8;
  t5.m = 16;
  t5.flag = true;
  ScoreMod weight;
  weight.kind = ScoreMod::Kind::DistanceWeight;
  weight.x = 1.0;
  weight.perHead = {0.5, 0.25};
  pb.mods = {t5, weight};
  x.relTable.resize(2 * 8);
  for (size_t e = 0; e < x.relTable.size(); ++e)
    x.relTable[e] = 0.5f + 0.1f * float(e % 3); // logits stay > 0: relu smooth
  // Positive scores too: q and k of one sign.
  for (float &f : x.q)
    f = std::abs(f);
  for (float &f : x.k)
    f = std::abs(f);
  checkAll(pb, x);
}

TEST(ReferenceGradients, ShawTable) {
  Buffers x;
  AttentionProblem pb = makeProblem(x, 3, 1, 4, 6, 2, 6);
  ScoreMod shaw;
  shaw.kind = ScoreMod::Kind::ShawBias;
  shaw.n = 2;
  pb.mods = {shaw};
  x.relTable.resize(3 * 5);
  for (size_t e = 0; e < x.relTable.size(); ++e)
    x.relTable[e] = 0.2f * float(e % 4) - 0.3f;
  checkAll(pb, x);
}

/// A dropped key's K and V never reach a gradient, even as NaN.
TEST(ReferenceGradients, MaskedNaNKeysStayOut) {
  Buffers x;
  AttentionProblem pb = makeProblem(x, 2, 2, 4, 4, 3, 7);
  pb.pattern = Pattern{}; // causal: key 3 is dropped by rows 0-2 only
  // Key 3 of every head is NaN: row 3 keeps it, so make Lq 3 instead.
  pb.queryLen = 3;
  x.q.resize(2 * 2 * 3 * 3);
  x.dOut.resize(2 * 2 * 3 * 3);
  for (int64_t bh = 0; bh < 4; ++bh)
    for (int64_t c = 0; c < 3; ++c) {
      x.k[(bh * 4 + 3) * 3 + c] = NAN;
      x.v[(bh * 4 + 3) * 3 + c] = NAN;
    }
  pb.query = x.q.data();
  pb.key = x.k.data();
  pb.value = x.v.data();
  Gradients g = attentionGradients(pb, x.dOut.data());
  for (double v : g.query)
    EXPECT_TRUE(std::isfinite(v));
  for (size_t e = 0; e < g.key.size(); ++e)
    EXPECT_TRUE(std::isfinite(g.key[e]) && std::isfinite(g.value[e]));
}

} // namespace
