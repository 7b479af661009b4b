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
  c.attentionKind = "linformer";
  c.variantOperands = {"e_proj", "f_proj"};
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
  EXPECT_EQ(read.attentionKind, "linformer");
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
  refuses(good + "heads=7\n", "sizes out of range"); // not a multiple of 2
  refuses(good + "d_model=0\n", "sizes out of range");
  refuses(good + "layers=-1\n", "sizes out of range");
  refuses(good + "activation=tanh\n", "unknown type, activation");
  refuses("", "sizes out of range");
}
