//===- CompiledLinearTest.cpp - attn's GEMM against a double reference ----===//
//
// CompiledLinear (attn-matmul-to-cpu-gemm through the host pipeline) on
// shapes that fill no row block, no panel and no k-block, for each weight
// layout and both vector widths the host can run, against y = y0 + x W
// summed in double; packed weights also in bf16 and f16 (the reference
// then multiplies by the rounded weights: the kernel's exact math); fused
// epilogues (bias, activations, SwiGLU's gate, residual sums) against the
// same steps in double.
//
//===----------------------------------------------------------------------===//
#include "attn/Compiler/LinearKernels.h"
#include "llvm/TargetParser/Host.h"
#include "gtest/gtest.h"
#include <cmath>
#include <random>

using namespace attnrt;

namespace {

struct Shape {
  int64_t m, n, k;
};

/// The CPU target blocked for `vectorBits`-wide vectors: at 512 bits this
/// CPU's own where it has AVX-512 (so that its bf16 features are used),
/// else cpu-avx512 (LLVM splits the vectors).
std::string targetFor(int64_t vectorBits) {
  if (vectorBits == 256)
    return "cpu-avx2";
  return llvm::sys::getHostCPUFeatures().lookup("avx512f") ? "" : "cpu-avx512";
}

void expectMatchesReference(WeightLayout layout, int64_t vectorBits, Shape s) {
  HostCompileOptions options;
  options.target = targetFor(vectorBits);
  options.numThreads = 2;
  auto linear = CompiledLinear::create(s.k, s.n, layout, options);
  ASSERT_TRUE(bool(linear)) << llvm::toString(linear.takeError());
  std::mt19937 rng(s.m * 131 + s.n * 17 + s.k);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(s.m * s.k), w(s.n * s.k), y(s.m * s.n);
  for (float &v : x)
    v = dist(rng);
  for (float &v : w) // [out, in]
    v = dist(rng);
  for (float &v : y) // accumulated onto
    v = dist(rng);
  std::vector<float> weight;
  if (layout == WeightLayout::OutByIn) {
    weight = w;
  } else if (layout == WeightLayout::InByOut) {
    weight.resize(w.size());
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t k = 0; k < s.k; ++k)
        weight[k * s.n + n] = w[n * s.k + k];
  } else {
    weight = (*linear)->pack(w.data());
  }
  std::vector<float> result = y;
  ASSERT_FALSE(
      bool((*linear)->accumulate(x.data(), s.m, weight.data(), result.data())));
  // f32 sums of K products of numbers in [-1, 1] (plus y0): rounding error
  // below K * 2^-24 * max partial sum <= K * 6e-8 * K; 1e-6 * (K + 1) is
  // above that for these K (<= 300, observed ~1e-6) and far below the
  // O(1) error of a wrong index, a dropped tail or an unmasked column.
  double bound = 1e-6 * double(s.k + 1);
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t n = 0; n < s.n; ++n) {
      double expected = y[i * s.n + n];
      for (int64_t k = 0; k < s.k; ++k)
        expected += double(x[i * s.k + k]) * w[n * s.k + k];
      ASSERT_NEAR(result[i * s.n + n], expected, bound)
          << "row " << i << " column " << n << " of " << s.m << " x " << s.n
          << " x " << s.k;
    }
}

const Shape kShapes[] = {{1, 1, 1},   {13, 40, 70},   {5, 33, 300},
                         {25, 17, 3}, {100, 70, 257}, {12, 64, 64}};

bool hostHasAvx512() {
  return llvm::sys::getHostCPUFeatures().lookup("avx512f");
}

bool hostHasAvx512Bf16() {
  return hostHasAvx512() &&
         llvm::sys::getHostCPUFeatures().lookup("avx512bf16");
}

TEST(CompiledLinear, OutByInMatchesReference) {
  for (Shape s : kShapes)
    expectMatchesReference(WeightLayout::OutByIn, 256, s);
}

TEST(CompiledLinear, InByOutMatchesReference) {
  for (Shape s : kShapes)
    expectMatchesReference(WeightLayout::InByOut, 256, s);
}

TEST(CompiledLinear, PackedMatchesReference) {
  for (Shape s : kShapes)
    expectMatchesReference(WeightLayout::Packed, 256, s);
}

TEST(CompiledLinear, Avx512MatchesReference) {
  if (!hostHasAvx512())
    GTEST_SKIP() << "this CPU has no AVX-512";
  for (WeightLayout layout :
       {WeightLayout::OutByIn, WeightLayout::InByOut, WeightLayout::Packed})
    for (Shape s : kShapes)
      expectMatchesReference(layout, 512, s);
}

/// Packed 16-bit weights: the reference uses W rounded to the format (what
/// the kernel holds), so the bound is the f32 one above; a weight read as
/// the wrong format or from the wrong half of a panel is off by O(1).
/// bf16 on AMX or by vdpbf16ps (where the host has them, unless `products`
/// says otherwise)
/// also rounds x to bf16: so does the reference then.
void expectHalfMatchesReference(FloatFormat format, int64_t vectorBits, Shape s,
                                Bf16Products products = Bf16Products::Auto) {
  HostCompileOptions options;
  options.target = targetFor(vectorBits);
  options.numThreads = 2;
  options.bf16Products = products;
  auto linear =
      CompiledLinear::create(s.k, s.n, WeightLayout::Packed, options, format);
  ASSERT_TRUE(bool(linear)) << llvm::toString(linear.takeError());
  bool pairs = format == FloatFormat::BF16 && vectorBits == 512 &&
               products != Bf16Products::Widen &&
               ((products != Bf16Products::Dot && enableAmxTiles()) ||
                (products != Bf16Products::Amx && hostHasAvx512Bf16()));
  ASSERT_EQ((*linear)->roundsInputToBf16(), pairs);
  std::mt19937 rng(s.m * 7 + s.n * 31 + s.k);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(s.m * s.k), w(s.n * s.k), y(s.m * s.n);
  for (std::vector<float> *v : {&x, &w, &y})
    for (float &e : *v)
      e = dist(rng);
  std::vector<uint16_t> packed = (*linear)->packHalf(w.data());
  std::vector<float> result = y;
  ASSERT_FALSE(
      bool((*linear)->accumulate(x.data(), s.m, packed.data(), result.data())));
  double bound = 1e-6 * double(s.k + 1);
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t n = 0; n < s.n; ++n) {
      double expected = y[i * s.n + n];
      for (int64_t k = 0; k < s.k; ++k) {
        float xk = x[i * s.k + k];
        if (pairs)
          xk = fromBits(format, toBits(format, xk));
        expected +=
            double(xk) * fromBits(format, toBits(format, w[n * s.k + k]));
      }
      ASSERT_NEAR(result[i * s.n + n], expected, bound)
          << "row " << i << " column " << n << " of " << s.m << " x " << s.n
          << " x " << s.k;
    }
}

TEST(CompiledLinear, HalfWeightsMatchReference) {
  std::vector<int64_t> widths = {256};
  if (hostHasAvx512())
    widths.push_back(512);
  for (FloatFormat format : {FloatFormat::BF16, FloatFormat::F16})
    for (int64_t bits : widths)
      for (Shape s : kShapes)
        expectHalfMatchesReference(format, bits, s);
}

// bf16 widened on an AMX machine too (the path CPUs without AMX take).
TEST(CompiledLinear, WidenedBf16MatchesReference) {
  if (!hostHasAvx512())
    GTEST_SKIP() << "this CPU has no AVX-512";
  for (Shape s : kShapes)
    expectHalfMatchesReference(FloatFormat::BF16, 512, s, Bf16Products::Widen);
}

// Layer-sized products on AMX: several 32-row blocks and column groups,
// a K of many unrolled steps plus a rest.
TEST(CompiledLinear, AmxLayerShapesMatchReference) {
  if (!enableAmxTiles())
    GTEST_SKIP() << "this CPU or OS does not allow AMX tiles";
  for (Shape s : {Shape{77, 288, 200}, Shape{33, 96, 768}})
    expectHalfMatchesReference(FloatFormat::BF16, 512, s);
}

// bf16 products by vdpbf16ps (AVX-512 BF16 without AMX; forced on AMX
// hosts too): K odd (a pair's second k past A is zero), K past one k-block
// of 768 with a rest, row blocks of 12 partly filled, masked columns.
TEST(CompiledLinear, DotShapesMatchReference) {
  if (!hostHasAvx512Bf16())
    GTEST_SKIP() << "this CPU has no AVX-512 BF16";
  for (Shape s : kShapes)
    expectHalfMatchesReference(FloatFormat::BF16, 512, s, Bf16Products::Dot);
  for (Shape s : {Shape{77, 288, 200}, Shape{33, 96, 1601}, Shape{1, 40, 33}})
    expectHalfMatchesReference(FloatFormat::BF16, 512, s, Bf16Products::Dot);
}

/// A kernel with an epilogue (LinearEpilogue.h, fused by the GEMM pass)
/// against the same steps in double after a double product. Activations
/// of the GEMM's approximations (erf, tanh, exp: MLIR's polynomials, within
/// a few f32 ulps) add ~1e-6 relative to the f32 sums' bound above; a
/// missing or misplaced step (no bias, activation on the wrong value,
/// other's wrong row) is off by O(0.1) or more.
void expectEpilogueMatchesReference(
    LinearEpilogue epilogue, int64_t vectorBits, Shape s,
    FloatFormat format = FloatFormat::F32,
    Bf16Products products = Bf16Products::Widen) {
  using A = LinearEpilogue::Activation;
  HostCompileOptions options;
  options.target = targetFor(vectorBits);
  options.numThreads = 2;
  options.bf16Products = products;
  auto linear = CompiledLinear::create(s.k, s.n, WeightLayout::Packed, options,
                                       format, epilogue);
  ASSERT_TRUE(bool(linear)) << llvm::toString(linear.takeError());
  std::mt19937 rng(s.m * 7 + s.n * 3 + s.k + int(epilogue.activation));
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(s.m * s.k), w(s.n * s.k), y(s.m * s.n), bias(s.n),
      other(s.m * s.n);
  for (std::vector<float> *v : {&x, &w, &y, &bias, &other})
    for (float &e : *v)
      e = dist(rng);
  std::vector<float> result = y;
  const void *weight;
  std::vector<float> packed;
  std::vector<uint16_t> halves;
  if (format == FloatFormat::F32) {
    packed = (*linear)->pack(w.data());
    weight = packed.data();
  } else {
    halves = (*linear)->packHalf(w.data());
    weight = halves.data();
    for (float &e : w) // what the kernel holds
      e = fromBits(format, toBits(format, e));
  }
  // On AMX the kernel multiplies x rounded to bf16.
  std::vector<float> xUsed = x;
  if ((*linear)->roundsInputToBf16())
    for (float &e : xUsed)
      e = fromBits(FloatFormat::BF16, toBits(FloatFormat::BF16, e));
  ASSERT_FALSE(bool((*linear)->run(
      x.data(), s.m, weight, epilogue.bias ? bias.data() : nullptr,
      epilogue.readsOther() ? other.data() : nullptr, result.data())));
  double bound = 1e-6 * double(s.k + 1) + 1e-6;
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t n = 0; n < s.n; ++n) {
      double v = 0;
      for (int64_t k = 0; k < s.k; ++k)
        v += double(xUsed[i * s.k + k]) * w[n * s.k + k];
      if (epilogue.accumulate)
        v += y[i * s.n + n];
      if (epilogue.bias)
        v += bias[n];
      switch (epilogue.activation) {
      case A::None:
        break;
      case A::Relu:
        v = std::max(v, 0.0);
        break;
      case A::Gelu:
        v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
        break;
      case A::GeluTanh:
        v = 0.5 * v *
            (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        break;
      case A::SiluTimesOther:
        v = v / (1 + std::exp(-v)) * other[i * s.n + n];
        break;
      }
      if (epilogue.residual)
        v += other[i * s.n + n];
      ASSERT_NEAR(result[i * s.n + n], v, bound * std::max(1.0, std::abs(v)))
          << "row " << i << " column " << n << " of " << s.m << " x " << s.n
          << " x " << s.k << ", activation " << int(epilogue.activation)
          << (epilogue.accumulate ? ", accumulating" : "")
          << (epilogue.residual ? ", residual" : "");
    }
}

std::vector<LinearEpilogue> layerEpilogues() {
  using A = LinearEpilogue::Activation;
  std::vector<LinearEpilogue> all;
  for (A activation :
       {A::None, A::Relu, A::Gelu, A::GeluTanh, A::SiluTimesOther})
    for (bool bias : {false, true}) {
      LinearEpilogue e;
      e.accumulate = false;
      e.bias = bias;
      e.activation = activation;
      all.push_back(e);
    }
  LinearEpilogue accumulating; // y += x W + bias
  accumulating.bias = true;
  all.push_back(accumulating);
  // A residual block's last product: x W + bias + the stream, and an
  // activation before the sum.
  for (A activation : {A::None, A::Relu}) {
    LinearEpilogue residual;
    residual.accumulate = false;
    residual.bias = true;
    residual.activation = activation;
    residual.residual = true;
    all.push_back(residual);
  }
  return all;
}

// Shapes with masked columns, rows past M, several k-blocks (the epilogue
// applies in the last only) and K below one vector.
const Shape kEpilogueShapes[] = {{13, 40, 70}, {25, 17, 600}, {5, 70, 3}};

TEST(CompiledLinear, EpiloguesMatchReference) {
  for (const LinearEpilogue &e : layerEpilogues())
    for (Shape s : kEpilogueShapes)
      expectEpilogueMatchesReference(e, 256, s);
}

TEST(CompiledLinear, Avx512EpiloguesMatchReference) {
  if (!hostHasAvx512())
    GTEST_SKIP() << "this CPU has no AVX-512";
  for (const LinearEpilogue &e : layerEpilogues())
    for (Shape s : kEpilogueShapes)
      expectEpilogueMatchesReference(e, 512, s);
  // 16-bit weights widened by the micro-kernel take the same epilogues.
  for (const LinearEpilogue &e : layerEpilogues())
    expectEpilogueMatchesReference(e, 512, {25, 17, 600}, FloatFormat::F16);
}

// bf16 on AMX tiles: the epilogue runs as each 32 x 32 block is copied
// back (AmxGemm.cpp), the zero start fills the block's scratch.
TEST(CompiledLinear, AmxEpiloguesMatchReference) {
  if (!enableAmxTiles())
    GTEST_SKIP() << "this CPU or OS does not allow AMX tiles";
  for (const LinearEpilogue &e : layerEpilogues())
    expectEpilogueMatchesReference(e, 512, {77, 70, 200}, FloatFormat::BF16,
                                   Bf16Products::Auto);
}

// The same epilogues after vdpbf16ps products.
TEST(CompiledLinear, DotEpiloguesMatchReference) {
  if (!hostHasAvx512Bf16())
    GTEST_SKIP() << "this CPU has no AVX-512 BF16";
  for (const LinearEpilogue &e : layerEpilogues())
    expectEpilogueMatchesReference(e, 512, {77, 70, 200}, FloatFormat::BF16,
                                   Bf16Products::Dot);
}

TEST(CompiledLinear, EpilogueOperandsAreChecked) {
  LinearEpilogue e;
  e.accumulate = false;
  e.bias = true;
  auto linear = CompiledLinear::create(
      4, 4, WeightLayout::Packed, HostCompileOptions{}, FloatFormat::F32, e);
  ASSERT_TRUE(bool(linear)) << llvm::toString(linear.takeError());
  std::vector<float> x(4), w = (*linear)->pack(std::vector<float>(16).data()),
                           y(4);
  llvm::Error missing =
      (*linear)->run(x.data(), 1, w.data(), nullptr, nullptr, y.data());
  EXPECT_TRUE(bool(missing));
  llvm::consumeError(std::move(missing));
  // An activation of an accumulated sum, a residual with SwiGLU's gate
  // (both read `other`), or an epilogue on unpacked weights, is refused.
  LinearEpilogue both;
  both.accumulate = false;
  both.activation = LinearEpilogue::Activation::SiluTimesOther;
  both.residual = true;
  auto twoOthers = CompiledLinear::create(
      4, 4, WeightLayout::Packed, HostCompileOptions{}, FloatFormat::F32, both);
  ASSERT_FALSE(bool(twoOthers));
  llvm::consumeError(twoOthers.takeError());
  e.accumulate = true;
  e.activation = LinearEpilogue::Activation::Relu;
  auto refused = CompiledLinear::create(
      4, 4, WeightLayout::Packed, HostCompileOptions{}, FloatFormat::F32, e);
  ASSERT_FALSE(bool(refused));
  llvm::consumeError(refused.takeError());
  e.accumulate = false;
  auto unpacked = CompiledLinear::create(
      4, 4, WeightLayout::OutByIn, HostCompileOptions{}, FloatFormat::F32, e);
  ASSERT_FALSE(bool(unpacked));
  llvm::consumeError(unpacked.takeError());
}

TEST(CompiledLinear, RefusesHalfWeightsUnpacked) {
  auto linear = CompiledLinear::create(4, 4, WeightLayout::OutByIn,
                                       HostCompileOptions{}, FloatFormat::BF16);
  ASSERT_FALSE(bool(linear));
  llvm::consumeError(linear.takeError());
}

TEST(CompiledLinear, RefusesEmptySizes) {
  auto linear =
      CompiledLinear::create(0, 4, WeightLayout::Packed, HostCompileOptions{});
  ASSERT_FALSE(bool(linear));
  llvm::consumeError(linear.takeError());
}

} // namespace
