//===- DynamicKernelizedTest.cpp - feature-map attention, dynamic sizes ---===//
//
// attn-run takes static shapes only, so attn-kernelized-to-cpu's kernel
// with dynamic batch, heads and lengths is executed here: one module of
// elu + 1 attention, non-causal and causal, and causal FAVOR+, with every
// dim but the head dims dynamic, compiled for AVX2 and AVX-512 vectors, called
// with several sizes (GQA, one query row, one key, lengths that end inside a
// key tile, a query block or a causal chunk, more queries than keys and fewer,
// keys split into ranges for the threads) and checked against the quadratic
// form in double precision.
//
//===----------------------------------------------------------------------===//
#include "CompileForTest.h"
#include "gtest/gtest.h"
#include <cmath>
#include <vector>

namespace {

constexpr const char *kModule = R"mlir(
func.func @elu(%q: tensor<?x?x?x48xf32>, %k: tensor<?x?x?x48xf32>,
               %v: tensor<?x?x?x32xf32>) -> tensor<?x?x?x32xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = elu_plus_one
      : (tensor<?x?x?x48xf32>, tensor<?x?x?x48xf32>, tensor<?x?x?x32xf32>)
      -> tensor<?x?x?x32xf32>
  return %o : tensor<?x?x?x32xf32>
}
func.func @elu_causal(%q: tensor<?x?x?x48xf32>, %k: tensor<?x?x?x48xf32>,
                      %v: tensor<?x?x?x32xf32>) -> tensor<?x?x?x32xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = elu_plus_one causal
      : (tensor<?x?x?x48xf32>, tensor<?x?x?x48xf32>, tensor<?x?x?x32xf32>)
      -> tensor<?x?x?x32xf32>
  return %o : tensor<?x?x?x32xf32>
}
func.func @favor_causal(%q: tensor<?x?x?x48xf32>, %k: tensor<?x?x?x48xf32>,
                        %v: tensor<?x?x?x32xf32>, %w: tensor<32x48xf32>)
    -> tensor<?x?x?x32xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor causal
      : (tensor<?x?x?x48xf32>, tensor<?x?x?x48xf32>, tensor<?x?x?x32xf32>,
         tensor<32x48xf32>) -> tensor<?x?x?x32xf32>
  return %o : tensor<?x?x?x32xf32>
}
)mlir";

constexpr int64_t D = 48, Dv = 32, M = 32;

struct Sizes {
  int64_t batch, queryHeads, keyHeads, queries, keys;
};

double phi(double x) { return x > 0 ? x + 1 : std::exp(x); }

/// FAVOR+'s features of row x: exp(s w_f . x - s^2 |x|^2 / 2) / sqrt(M),
/// s = D^(-1/4), without the kernel's max subtraction (it cancels).
std::vector<double> favorFeatures(const float *x, const std::vector<float> &w) {
  double s = std::pow(double(D), -0.25), square = 0;
  for (int64_t c = 0; c < D; ++c)
    square += double(x[c]) * x[c];
  std::vector<double> features(M);
  for (int64_t f = 0; f < M; ++f) {
    double dot = 0;
    for (int64_t c = 0; c < D; ++c)
      dot += double(w[f * D + c]) * x[c];
    features[f] = std::exp(s * dot - s * s * square / 2) / std::sqrt(double(M));
  }
  return features;
}

/// sum_j (phi(q_i) . phi(k_j)) v_j / sum_j phi(q_i) . phi(k_j) in double,
/// j <= i when causal, query head h reading key/value head h / (Hq / Hkv).
std::vector<double> reference(const Sizes &s, const std::vector<float> &q,
                              const std::vector<float> &k,
                              const std::vector<float> &v, bool causal,
                              const std::vector<float> *omega = nullptr) {
  std::vector<double> out(s.batch * s.queryHeads * s.queries * Dv);
  int64_t group = s.queryHeads / s.keyHeads;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.queryHeads; ++h)
      for (int64_t i = 0; i < s.queries; ++i) {
        int64_t kh = h / group;
        std::vector<double> num(Dv, 0.0);
        double den = 0;
        for (int64_t j = 0; j < s.keys && (!causal || j <= i); ++j) {
          double w = 0;
          const float *qi = &q[((b * s.queryHeads + h) * s.queries + i) * D];
          const float *kj = &k[((b * s.keyHeads + kh) * s.keys + j) * D];
          if (omega) {
            std::vector<double> fq = favorFeatures(qi, *omega),
                                fk = favorFeatures(kj, *omega);
            for (int64_t f = 0; f < M; ++f)
              w += fq[f] * fk[f];
          } else {
            for (int64_t c = 0; c < D; ++c)
              w += phi(qi[c]) * phi(kj[c]);
          }
          den += w;
          for (int64_t e = 0; e < Dv; ++e)
            num[e] += w * v[((b * s.keyHeads + kh) * s.keys + j) * Dv + e];
        }
        for (int64_t e = 0; e < Dv; ++e)
          out[((b * s.queryHeads + h) * s.queries + i) * Dv + e] =
              den == 0 ? 0.0 : num[e] / den;
      }
  return out;
}

TEST(DynamicKernelized, FeatureMapsAtSeveralSizes) {
  enum class Kind { Elu, EluCausal, FavorCausal };
  struct Case {
    Sizes sizes;
    Kind kind;
  };
  const Case cases[] = {
      {{2, 4, 2, 67, 130}, Kind::Elu},
      {{1, 3, 1, 1, 1}, Kind::Elu},
      {{3, 2, 2, 129, 64}, Kind::Elu},
      {{1, 1, 1, 5, 200}, Kind::Elu},
      // One (batch, key/value head) pair over 16-17 key tiles: with two
      // or more threads the state is split into key ranges and merged.
      {{1, 4, 1, 70, 1000}, Kind::Elu},
      {{1, 2, 1, 3, 1089}, Kind::Elu},
      {{2, 4, 2, 130, 130}, Kind::EluCausal},
      {{1, 3, 1, 200, 70}, Kind::EluCausal},
      {{1, 2, 2, 65, 300}, Kind::EluCausal},
      {{1, 1, 1, 1, 1}, Kind::EluCausal},
      // One (batch, key/value head) pair over 2-5 key chunks: with two or
      // more threads the chunks run in parallel from prefix sums of their
      // states (queries past the keys read the total).
      {{1, 4, 1, 300, 300}, Kind::EluCausal},
      {{1, 2, 1, 260, 100}, Kind::EluCausal},
      {{1, 3, 1, 70, 300}, Kind::EluCausal},
      {{2, 4, 2, 130, 130}, Kind::FavorCausal},
      {{1, 3, 1, 200, 70}, Kind::FavorCausal},
      {{1, 1, 1, 1, 1}, Kind::FavorCausal}};
  for (int64_t vectorBits : {256, 512}) {
    attnrt::HostCompileOptions options;
    options.target = vectorBits == 256 ? "cpu-avx2" : "cpu-avx512";
    auto kernel = attntest::compileForTest(kModule, options);
    ASSERT_TRUE(bool(kernel)) << llvm::toString(kernel.takeError());
    attntest::NormalFloats random(11);
    std::vector<float> omega = random(M * D);
    attnrt::MemRefDescriptor dw(omega.data(), {M, D});
    for (const Case &c : cases) {
      const Sizes &s = c.sizes;
      std::vector<float> q = random(s.batch * s.queryHeads * s.queries * D),
                         k = random(s.batch * s.keyHeads * s.keys * D),
                         v = random(s.batch * s.keyHeads * s.keys * Dv);
      std::vector<float> out(s.batch * s.queryHeads * s.queries * Dv, NAN);
      attnrt::MemRefDescriptor dq(q.data(),
                                  {s.batch, s.queryHeads, s.queries, D}),
          dk(k.data(), {s.batch, s.keyHeads, s.keys, D}),
          dv(v.data(), {s.batch, s.keyHeads, s.keys, Dv}),
          dout(out.data(), {s.batch, s.queryHeads, s.queries, Dv});
      bool favor = c.kind == Kind::FavorCausal;
      llvm::Error error =
          favor ? (*kernel)->call("favor_causal", {&dq, &dk, &dv, &dw, &dout})
                : (*kernel)->call(c.kind == Kind::Elu ? "elu" : "elu_causal",
                                  {&dq, &dk, &dv, &dout});
      ASSERT_FALSE(bool(error)) << llvm::toString(std::move(error));
      std::vector<double> expected =
          reference(s, q, k, v, c.kind != Kind::Elu, favor ? &omega : nullptr);
      double worst = 0;
      for (size_t i = 0; i < out.size(); ++i)
        worst = std::max(worst, std::fabs(out[i] - expected[i]));
      // Outputs are convex combinations of N(0, 1) values; f32 sums of up
      // to 300 positive weights (FAVOR+'s rescaled by exp of the running
      // key maximum) round to ~1e-6 relative. A row or head read from the
      // wrong place, or a missed tail key, is off by 1e-2 or more.
      EXPECT_LT(worst, 1e-4)
          << vectorBits << "-bit vectors, kind " << int(c.kind) << ", B "
          << s.batch << ", Hq " << s.queryHeads << ", Hkv " << s.keyHeads
          << ", Lq " << s.queries << ", Lk " << s.keys;
    }
  }
}

} // namespace
