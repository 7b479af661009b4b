//===- GpuDescriptorTest.cpp - kernel descriptors as JSON -----------------===//
//
// writeGpuDescriptors and parseGpuDescriptors (runtime/lib/Gpu): a round
// trip keeps every field, dynamic shared memory included; files without it
// (older artifacts, SPIR-V kernels) read as 0; bad values are refused.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/Gpu.h"
#include <gtest/gtest.h>

using namespace attnrt;

namespace {

GpuKernelDescriptor sample() {
  GpuKernelDescriptor d;
  d.name = "wgmma";
  d.grid = {4, 2, 1};
  d.workgroup = {128, 1, 1};
  d.tiling = {64, 0, 64};
  d.sharedBytes = 82944;
  d.bindings = {{"arg0", false, 1024}, {"result0", true, 1024}};
  d.constants = {{"schedule", {1, 0, 2}}};
  return d;
}

TEST(GpuDescriptor, RoundTripKeepsSharedBytes) {
  std::vector<GpuKernelDescriptor> read;
  std::string error;
  ASSERT_TRUE(parseGpuDescriptors(writeGpuDescriptors({sample()}), read, error))
      << error;
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].name, "wgmma");
  EXPECT_EQ(read[0].sharedBytes, 82944u);
  EXPECT_EQ(read[0].workgroup[0], 128u);
  EXPECT_EQ(read[0].tiling[2], 64);
  ASSERT_EQ(read[0].bindings.size(), 2u);
  EXPECT_TRUE(read[0].bindings[1].written);
  ASSERT_NE(read[0].constant("schedule"), nullptr);
  EXPECT_EQ(read[0].constant("schedule")->size(), 3u);
}

TEST(GpuDescriptor, NoSharedBytesIsNone) {
  GpuKernelDescriptor d = sample();
  d.sharedBytes = 0;
  std::string text = writeGpuDescriptors({d});
  EXPECT_EQ(text.find("shared_bytes"), std::string::npos);
  std::vector<GpuKernelDescriptor> read;
  std::string error;
  ASSERT_TRUE(parseGpuDescriptors(text, read, error)) << error;
  EXPECT_EQ(read[0].sharedBytes, 0u);
}

TEST(GpuDescriptor, RefusesBadSharedBytes) {
  for (const char *value : {"-1", "1.5", "\"big\"", "2097152"}) {
    std::string text = std::string("{\"kernels\": [{\"name\": \"k\", "
                                   "\"grid\": [1, 1, 1], \"workgroup\": "
                                   "[1, 1, 1], \"shared_bytes\": ") +
                       value + ", \"bindings\": []}]}";
    std::vector<GpuKernelDescriptor> read;
    std::string error;
    EXPECT_FALSE(parseGpuDescriptors(text, read, error)) << value;
    EXPECT_EQ(error, "kernel 'k': \"shared_bytes\" is a byte count up to 1 MiB")
        << value;
  }
}

} // namespace
