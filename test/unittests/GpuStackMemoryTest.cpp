//===- GpuStackMemoryTest.cpp - a new memory replaces the device's copy ---===//
//
// A GPU layer stack keeps cross-attention's memory keys and values on the
// device, one copy per owner (the layer's KvRows) and version, and its
// cross-attention chain reads that copy (AttentionKernel::deviceCopy). A
// memory given again, after reset() or in the middle of a sequence, keeps
// the owner and the sizes and changes only the version: the stack must
// then read the new memory, not the copy of the old. These run a small
// decoder with cross-attention on lavapipe and on the CPU with the same
// weights and memories, and compare.
//
//===----------------------------------------------------------------------===//
#include "attn/Compiler/Transformer.h"
#include "attn/Runtime/Gpu.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include <cmath>
#include <gtest/gtest.h>
#include <random>

using namespace attnrt;

namespace {

constexpr const char *kSpec = R"(name: memory_decoder
layer:
  type: decoder
  d_model: 32
  heads: 4
  ffn_hidden: 48
  activation: gelu
  norm: layernorm
  norm_position: pre
  positions: rope
  cross_attention: true
)";

Activations random(int64_t batch, int64_t length, int64_t width,
                   uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Activations a(batch, length, width);
  for (float &v : a.data)
    v = normal(rng);
  return a;
}

/// max |a - b| / max |b|.
double scaledError(const Activations &a, const Activations &b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.data.size(); ++i) {
    diff = std::max(diff, double(std::fabs(a.data[i] - b.data[i])));
    scale = std::max(scale, double(std::fabs(b.data[i])));
  }
  return diff / scale;
}

TEST(GpuStackMemory, NewMemoryReplacesTheDeviceCopy) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "lavapipe is not run under the sanitizers (as the lit "
                  "tests that need Vulkan)";
#endif
#endif
  std::string error;
  if (!sharedGpuDevice(/*spirv=*/true, error))
    GTEST_SKIP() << "no Vulkan device: " << error;

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(kSpec, "spec"),
                               llvm::SMLoc());
  std::optional<attnspec::LayerSpec> spec = attnspec::readLayerSpec(sourceMgr);
  ASSERT_TRUE(spec);
  int64_t d = spec->layer.dModel;
  // Weights in the ranges PyTorch initializes them in.
  std::mt19937_64 rng(7);
  std::vector<NamedTensor> tensors;
  for (auto &[name, shape] : expectedWeights(*spec, 8)) {
    NamedTensor t{name, shape, {}};
    int64_t count = 1;
    for (int64_t s : shape)
      count *= s;
    bool gain = llvm::StringRef(name).contains("norm") &&
                llvm::StringRef(name).ends_with(".weight");
    double bound = gain ? 0.2 : 1.0 / std::sqrt(double(shape.back()));
    std::uniform_real_distribution<float> dist(-bound, bound);
    for (int64_t i = 0; i < count; ++i)
      t.data.push_back(float((gain ? 1.0 : 0.0) + dist(rng)));
    tensors.push_back(std::move(t));
  }
  llvm::SmallString<128> path;
  ASSERT_FALSE(
      llvm::sys::fs::createTemporaryFile("memory", "safetensors", path));
  ASSERT_FALSE(bool(writeSafetensors(path, tensors)));
  auto weights = SafetensorsFile::open(path);
  ASSERT_TRUE(bool(weights)) << llvm::toString(weights.takeError());

  TransformerOptions onGpu;
  onGpu.gpuTarget = "vulkan";
  auto gpu = TransformerStack::create(*spec, *weights, onGpu);
  auto cpu = TransformerStack::create(*spec, *weights, {});
  llvm::sys::fs::remove(path);
  ASSERT_TRUE(bool(gpu)) << llvm::toString(gpu.takeError());
  ASSERT_TRUE(bool(cpu)) << llvm::toString(cpu.takeError());

  // Memories of the same sizes (the device copy's owner and bytes stay).
  Activations prompt = random(2, 5, d, 1), step = random(2, 1, d, 2),
              memoryA = random(2, 7, d, 3), memoryB = random(2, 7, d, 4),
              memoryC = random(2, 7, d, 5);
  // Each of (a prompt with memory A; after reset(), the prompt with memory
  // B; then a step given memory C) on both stacks.
  auto run = [&](TransformerStack &stack) {
    std::vector<Activations> outputs;
    auto keep = [&](llvm::Expected<Activations> y) {
      if (!y) {
        ADD_FAILURE() << llvm::toString(y.takeError());
        return;
      }
      outputs.push_back(std::move(*y));
    };
    stack.reset();
    keep(stack.forward(prompt, &memoryA));
    stack.reset();
    keep(stack.forward(prompt, &memoryB));
    keep(stack.forward(step, &memoryC));
    return outputs;
  };
  std::vector<Activations> onDevice = run(**gpu), onHost = run(**cpu);
  ASSERT_EQ(onDevice.size(), 3u);
  ASSERT_EQ(onHost.size(), 3u);
  ASSERT_GT((*gpu)->deviceProducts()->crossBlocks, 0)
      << "the cross-attention did not run as a chain";
  // Each stack is within 1e-5 of the output's scale of the f64 reference
  // layer (test/layers/gpu.test), so within 2e-5 of each other. A stale
  // copy of the other memory gives another attention: 1e-2 and more.
  for (int i = 0; i < 3; ++i)
    EXPECT_LE(scaledError(onDevice[i], onHost[i]), 2e-5) << "call " << i;
  // The memories matter: the same prompt with memory A or B differs.
  EXPECT_GT(scaledError(onHost[1], onHost[0]), 1e-2);
}

} // namespace
