//===- DynamicBiasTest.cpp - per-key bias with dynamic dims, executed -----===//
//
// attn-run takes static shapes only, so the CPU kernel's run-time broadcast
// of a per-key bias whose batch or head dim is dynamic (a select on
// memref.dim: size 1 broadcasts) is executed here: one module with
// dynamic sizes, called with a bias of batch 1 and of batch B, both against
// a plain double-precision softmax attention.
//
//===----------------------------------------------------------------------===//
#include "CompileForTest.h"
#include "gtest/gtest.h"
#include <cmath>
#include <vector>

namespace {

constexpr const char *kModule = R"mlir(
func.func @biased(%q: tensor<?x?x?x16xf32>, %k: tensor<?x?x?x16xf32>,
                  %v: tensor<?x?x?x16xf32>, %bias: tensor<?x?x1x?xf32>)
    -> tensor<?x?x?x16xf32> {
  %o = attn.attention %q, %k, %v bias(%bias)
      : (tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>,
         tensor<?x?x1x?xf32>) -> tensor<?x?x?x16xf32>
  return %o : tensor<?x?x?x16xf32>
}
)mlir";

constexpr int64_t B = 2, Hq = 4, Hkv = 2, Lq = 5, Lk = 37, D = 16;

/// softmax(q k^T / sqrt(D) + bias[b' | 0, h' | 0, 0, j]) v in double, GQA
/// query head h reading key/value head h / (Hq / Hkv).
std::vector<double> reference(const std::vector<float> &q,
                              const std::vector<float> &k,
                              const std::vector<float> &v,
                              const std::vector<float> &bias,
                              int64_t biasBatch, int64_t biasHeads) {
  std::vector<double> out(B * Hq * Lq * D);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < Lq; ++i) {
        int64_t kh = h / (Hq / Hkv);
        std::vector<double> s(Lk);
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < Lk; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < D; ++c)
            dot += double(q[((b * Hq + h) * Lq + i) * D + c]) *
                   k[((b * Hkv + kh) * Lk + j) * D + c];
          int64_t bb = biasBatch == 1 ? 0 : b, bh = biasHeads == 1 ? 0 : h;
          s[j] = dot / std::sqrt(double(D)) +
                 bias[(bb * biasHeads + bh) * Lk + j];
          max = std::max(max, s[j]);
        }
        for (double &x : s)
          sum += (x = std::exp(x - max));
        for (int64_t c = 0; c < D; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < Lk; ++j)
            acc += s[j] * v[((b * Hkv + kh) * Lk + j) * D + c];
          out[((b * Hq + h) * Lq + i) * D + c] = acc / sum;
        }
      }
  return out;
}

TEST(DynamicBias, BatchAndHeadDimsBroadcastAtRunTime) {
  auto kernel = attntest::compileForTest(kModule);
  ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
  attntest::NormalFloats random(7);
  std::vector<float> q = random(B * Hq * Lq * D), k = random(B * Hkv * Lk * D),
                     v = random(B * Hkv * Lk * D);
  // Each (bias batch, bias heads): a shared bias, one per batch row, one
  // per query head; -inf drops a few keys of the first row.
  for (auto [biasBatch, biasHeads] :
       {std::pair<int64_t, int64_t>{1, 1}, {B, 1}, {1, Hq}, {B, Hq}}) {
    std::vector<float> bias = random(biasBatch * biasHeads * Lk);
    for (int64_t j : {0, 3, 36})
      bias[j] = -INFINITY;
    std::vector<float> out(B * Hq * Lq * D, NAN);
    attnrt::MemRefDescriptor dq(q.data(), {B, Hq, Lq, D}),
        dk(k.data(), {B, Hkv, Lk, D}), dv(v.data(), {B, Hkv, Lk, D}),
        db(bias.data(), {biasBatch, biasHeads, 1, Lk}),
        dout(out.data(), {B, Hq, Lq, D});
    llvm::Error error =
        (*kernel)->call("biased", {&dq, &dk, &dv, &db, &dout});
    ASSERT_FALSE(bool(error)) << llvm::toString(std::move(error));
    std::vector<double> expected =
        reference(q, k, v, bias, biasBatch, biasHeads);
    double worst = 0;
    for (size_t i = 0; i < out.size(); ++i)
      worst = std::max(worst, std::fabs(out[i] - expected[i]));
    // f32 dot products of 16 terms and sums of 37 weights: ~1e-6; a bias
    // row read from the wrong batch or head is off by order 1e-1.
    EXPECT_LT(worst, 1e-5) << "bias [" << biasBatch << ", " << biasHeads
                           << ", 1, " << Lk << "]";
  }
}

} // namespace
