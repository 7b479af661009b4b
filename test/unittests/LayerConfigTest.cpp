//===- LayerConfigTest.cpp - the layer manifest's text form ---------------===//
//
// Ahead-of-time layer artifacts carry their LayerConfig as text: it must
// read back exactly, and anything else must be refused with a reason.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/LayerStack.h"
#include <gtest/gtest.h>

using namespace attnrt;

namespace {
LayerConfig sample() {
  LayerConfig c;
  c.name = "llama_like";
  c.type = "decoder";
  c.dModel = 64;
  c.heads = 8;
  c.kvHeads = 2;
  c.headDim = 8;
  c.ffnHidden = 172;
  c.activation = "swiglu";
  c.norm = "rmsnorm";
  c.normPosition = "pre";
  c.normEps = 1.0 / 3.0; // not exact in decimal: the text must keep every bit
  c.bias = false;
  c.layers = 3;
  c.crossAttention = false;
  c.finalNorm = true;
  c.positions = "rope";
  c.ropeBase = 500000;
  c.ropeStyle = "interleaved";
  c.memoryLength = 16;
  c.attentionKind = "kernelized";
  c.variantOperands = {"omega"};
  return c;
}
} // namespace

TEST(LayerConfig, ReadsBackWhatItWrites) {
  LayerConfig written = sample(), read;
  Status s = parseLayerConfig(serializeLayerConfig(written), read);
  ASSERT_FALSE(s.failed()) << s.message();
  EXPECT_EQ(read.name, written.name);
  EXPECT_EQ(read.type, written.type);
  EXPECT_EQ(read.kvHeads, 2);
  EXPECT_EQ(read.ffnHidden, 172);
  EXPECT_EQ(read.normEps, written.normEps);
  EXPECT_FALSE(read.bias);
  EXPECT_FALSE(read.crossAttention);
  EXPECT_TRUE(read.finalNorm);
  EXPECT_EQ(read.ropeBase, 500000);
  EXPECT_EQ(read.ropeStyle, "interleaved");
  EXPECT_EQ(read.memoryLength, 16);
  EXPECT_EQ(read.attentionKind, "kernelized");
  EXPECT_EQ(read.variantOperands, written.variantOperands);
  EXPECT_EQ(serializeLayerConfig(read), serializeLayerConfig(written));
}

TEST(LayerConfig, RefusesWhatItCannotRun) {
  std::string good = serializeLayerConfig(sample());
  LayerConfig read;
  auto refuses = [&](const std::string &text, const std::string &why) {
    Status s = parseLayerConfig(text, read);
    EXPECT_TRUE(s.failed()) << text;
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  };
  refuses(good + "n_layers=2\n", "unknown entry 'n_layers=2'");
  refuses(good + "heads=eight\n", "malformed value for 'heads'");
  refuses(good + "bias=yes\n", "malformed value for 'bias'");
  refuses(good + "norm_eps=1e-5x\n", "malformed value for 'norm_eps'");
  refuses(good + "heads=7\n", "heads (7) must be a multiple of kv_heads (2)");
  refuses(good + "d_model=0\n", "must be >= 1");
  refuses(good + "layers=-1\n", "must be >= 1");
  refuses(good + "activation=tanh\n", "activation must be relu, gelu");
  refuses("", "must be >= 1");
  // The manifest obeys the layer spec's rules (checkLayerConfig): values a
  // hostile or foreign artifact could carry, each accepted before.
  refuses(good + "norm_eps=inf\n", "norm_eps must be finite and > 0");
  refuses(good + "rope_base=nan\n", "rope_base must be finite and > 0");
  refuses(good + "attention_kind=bogus\n", "attention kind must be softmax");
  refuses(good + "layers=1048576\nshared_weights=1\n",
          "layers (1048576) must be at most 4096");
  refuses(good + "ffn_hidden=1099511627777\n",
          "ffn_hidden (1099511627777) must be at most 2^40");
  refuses(good + "d_model=1048576\nffn_hidden=1048576\n",
          "larger than 2^40 bytes");
  refuses(good + "attention_kind=linformer\n", "has no causal form");
  refuses(good + "type=encoder\n", "memory_length (Transformer-XL memory) "
                                   "needs type decoder");
  refuses(good + "shares_query_key=1\n", "shares_query_key is set for");
}
