//===- FusedLinearUsesTest.cpp - the products an artifact must hold -------===//
//
// An ahead-of-time layer artifact compiles one GEMM kernel per product the
// stack runs (fusedLinearUses); a product the list misses fails at run time
// only. These run stacks of several shapes on a backend that records every
// product it is asked for and compare the record with the list. The
// manifest names epilogues in words that must read back exactly.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/LayerStack.h"
#include <gtest/gtest.h>
#include <set>
#include <tuple>

using namespace attnrt;

namespace {
using Product = std::tuple<int64_t, int64_t, std::string>;

/// Fuses every epilogue and records (in, out, epilogue name); the products
/// write zeros (only which products run matters here).
class RecordingBackend : public LinearBackend {
public:
  struct Shape : Weight {
    int64_t in, out;
    int64_t bytes() const override { return 0; }
  };
  Status prepare(int64_t out, int64_t in, const std::vector<float> &,
                 std::shared_ptr<const Weight> &prepared) override {
    auto shape = std::make_shared<Shape>();
    shape->in = in;
    shape->out = out;
    prepared = shape;
    return Status::ok();
  }
  Status accumulate(const float *, int64_t, const Weight &, float *) override {
    return Status::error("the stack must fuse epilogues");
  }
  bool fusesEpilogues() const override { return true; }
  Status apply(const float *, int64_t rows, const Weight &weight,
               const LinearEpilogue &epilogue, const float *bias,
               const float *other, float *y) override {
    const auto &shape = static_cast<const Shape &>(weight);
    if (epilogue.bias != (bias != nullptr) ||
        epilogue.readsOther() != (other != nullptr))
      return Status::error("operands do not match the epilogue");
    products.insert({shape.in, shape.out, linearEpilogueName(epilogue)});
    std::fill_n(y, rows * shape.out, 0.0f);
    return Status::ok();
  }
  std::set<Product> products;
};

/// Runs a stack of `config` once (and a second, cached step for decoders)
/// and returns what it computed products for.
std::set<Product> productsRun(const LayerConfig &config) {
  WeightReader zeros =
      [](const std::string &, const std::vector<int64_t> *required,
         std::vector<int64_t> &shape, std::vector<float> &data) {
        shape = *required;
        int64_t count = 1;
        for (int64_t s : shape)
          count *= s;
        data.assign(count, 0.0f);
        return Status::ok();
      };
  AttentionKernel kernel;
  kernel.argumentNames = {config.sharesQueryKey ? "qk" : "q", "k", "v"};
  if (config.sharesQueryKey)
    kernel.argumentNames = {"qk", "v"};
  kernel.call = [](const std::vector<KernelOperand> &,
                   const KernelOperand &output) {
    int64_t count = 1;
    for (int64_t s : output.shape)
      count *= s;
    std::fill_n(static_cast<float *>(output.data), count, 0.0f);
    return Status::ok();
  };
  KernelProvider kernels = [&](AttentionBlock, int64_t, int64_t, int64_t,
                               const AttentionKernel *&k) {
    k = &kernel;
    return Status::ok();
  };
  auto backend = std::make_shared<RecordingBackend>();
  std::unique_ptr<LayerStack> stack;
  Status s = LayerStack::create(config, zeros, kernels, stack, backend);
  EXPECT_FALSE(s.failed()) << s.message();
  if (s.failed())
    return {};
  Activations x(2, 5, config.dModel), memory(2, 3, config.dModel), out;
  s = stack->forward(x, config.hasCrossAttention() ? &memory : nullptr, out);
  EXPECT_FALSE(s.failed()) << s.message();
  if (config.isDecoder()) {
    Activations next(2, 1, config.dModel);
    s = stack->forward(next, nullptr, out);
    EXPECT_FALSE(s.failed()) << s.message();
  }
  return backend->products;
}

std::set<Product> listed(const LayerConfig &config) {
  std::set<Product> products;
  for (const LinearUse &use : fusedLinearUses(config))
    products.insert({use.in, use.out, linearEpilogueName(use.epilogue)});
  EXPECT_EQ(products.size(), fusedLinearUses(config).size())
      << "the list repeats a product";
  return products;
}

LayerConfig encoder() {
  LayerConfig c;
  c.name = "encoder";
  c.dModel = 32;
  c.heads = 4;
  c.kvHeads = 2;
  c.headDim = 8;
  c.ffnHidden = 48;
  c.layers = 2;
  return c;
}
} // namespace

TEST(FusedLinearUses, EncoderWithGelu) {
  LayerConfig c = encoder();
  std::set<Product> expected = {{32, 64, "bias"},
                                {32, 32, "bias+residual"},
                                {32, 48, "bias+gelu"},
                                {48, 32, "bias+residual"}};
  EXPECT_EQ(listed(c), expected);
  EXPECT_EQ(productsRun(c), expected);
}

TEST(FusedLinearUses, PreNormReluWithoutBias) {
  LayerConfig c = encoder();
  c.normPosition = "pre";
  c.activation = "relu";
  c.bias = false;
  c.norm = "rmsnorm";
  EXPECT_EQ(productsRun(c), listed(c));
  EXPECT_TRUE(listed(c).count({32, 48, "relu"}));
}

TEST(FusedLinearUses, DecoderWithCrossAttentionAndSwiGlu) {
  LayerConfig c = encoder();
  c.type = "decoder";
  c.activation = "swiglu";
  c.headDim = 16; // heads * headDim != d_model
  EXPECT_EQ(productsRun(c), listed(c));
  EXPECT_TRUE(listed(c).count({32, 64, "bias"})); // cross q: 4 x 16
  EXPECT_TRUE(listed(c).count({32, 32, "bias"})); // cross k, v: 2 x 16
  EXPECT_TRUE(listed(c).count({32, 48, "bias+silu_times_other"}));
}

TEST(FusedLinearUses, SharedQueryKeyProjection) {
  LayerConfig c = encoder();
  c.sharesQueryKey = true;
  c.kvHeads = 4;
  c.activation = "gelu_tanh";
  EXPECT_EQ(productsRun(c), listed(c));
  EXPECT_TRUE(listed(c).count({32, 32, "bias"})); // q and v apart
}

TEST(LinearEpilogueName, ReadsBackEveryEpilogue) {
  using A = LinearEpilogue::Activation;
  int named = 0;
  for (bool accumulate : {false, true})
    for (bool bias : {false, true})
      for (A a : {A::None, A::Relu, A::Gelu, A::GeluTanh, A::SiluTimesOther})
        for (bool residual : {false, true}) {
          LinearEpilogue e;
          e.accumulate = accumulate;
          e.bias = bias;
          e.activation = a;
          e.residual = residual;
          LinearEpilogue read;
          std::string name = linearEpilogueName(e);
          ASSERT_TRUE(parseLinearEpilogue(name, read)) << name;
          EXPECT_TRUE(read == e) << name;
          ++named;
        }
  EXPECT_EQ(named, 40);
  LinearEpilogue e;
  for (const char *bad : {"", "bias+", "gelu+bias", "bias+bias", "relu+gelu",
                          "tanh", "plain+bias", "residual+accumulate"})
    EXPECT_FALSE(parseLinearEpilogue(bad, e)) << bad;
}
