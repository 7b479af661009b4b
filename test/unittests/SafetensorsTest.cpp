//===- SafetensorsTest.cpp - the safetensors reader -----------------------===//
//
// Files are built byte by byte here (not by writeSafetensors) so the reader
// is checked against the format, not against our own writer.
//
//===----------------------------------------------------------------------===//
#include "attn/Tooling/Safetensors.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>

using namespace attnrt;

namespace {
std::string writeFile(const std::string &header, const std::string &data) {
  llvm::SmallString<128> path;
  llvm::sys::fs::createTemporaryFile("safetensors", "st", path);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  uint64_t n = header.size();
  char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = char((n >> (8 * i)) & 0xff);
  os.write(length, 8);
  os << header << data;
  return std::string(path);
}

std::string bytesOf(const void *p, size_t n) {
  return std::string(static_cast<const char *>(p), n);
}

std::string errorOf(llvm::Expected<SafetensorsFile> file) {
  if (file)
    return "";
  return llvm::toString(file.takeError());
}
} // namespace

TEST(Safetensors, ConvertsHalfBfloatAndDouble) {
  // 1.0, -2.5, 65504 (largest f16) and 2^-24 (smallest subnormal f16).
  uint16_t half[4] = {0x3c00, 0xc100, 0x7bff, 0x0001};
  // bf16 is the top half of an f32: 1.0 and -3.0.
  uint16_t bf16[2] = {0x3f80, 0xc040};
  double f64[2] = {0.1, -7.0};
  std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("h":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},)"
      R"("d":{"dtype":"F64","shape":[2],"data_offsets":[12,28]}})";
  std::string path =
      writeFile(header, bytesOf(half, 8) + bytesOf(bf16, 4) + bytesOf(f64, 16));
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  auto h = file->read("h", {2, 2});
  ASSERT_TRUE(bool(h));
  EXPECT_EQ((*h)[0], 1.0f);
  EXPECT_EQ((*h)[1], -2.5f);
  EXPECT_EQ((*h)[2], 65504.0f);
  EXPECT_EQ((*h)[3], std::ldexp(1.0f, -24));
  auto b = file->read("b", {2});
  ASSERT_TRUE(bool(b));
  EXPECT_EQ((*b)[0], 1.0f);
  EXPECT_EQ((*b)[1], -3.0f);
  auto d = file->read("d", {2});
  ASSERT_TRUE(bool(d));
  EXPECT_EQ((*d)[0], 0.1f);
  EXPECT_EQ((*d)[1], -7.0f);
  // Wrong shape or name: errors naming both.
  auto wrong = file->read("h", {4});
  ASSERT_FALSE(bool(wrong));
  EXPECT_NE(llvm::toString(wrong.takeError())
                .find("tensor 'h' has shape [2, 2], expected [4]"),
            std::string::npos);
  auto absent = file->read("x", {1});
  ASSERT_FALSE(bool(absent));
  EXPECT_NE(llvm::toString(absent.takeError()).find("no tensor 'x'"),
            std::string::npos);
}

TEST(Safetensors, RejectsOverlapsAndBadEntries) {
  float data[4] = {1, 2, 3, 4};
  std::string overlap =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  EXPECT_NE(
      errorOf(SafetensorsFile::open(writeFile(overlap, bytesOf(data, 16))))
          .find("tensors 'a' and 'b' overlap"),
      std::string::npos);
  std::string negative =
      R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})";
  EXPECT_NE(
      errorOf(SafetensorsFile::open(writeFile(negative, bytesOf(data, 16))))
          .find("shape entries must be non-negative integers"),
      std::string::npos);
  std::string reversed =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})";
  EXPECT_NE(
      errorOf(SafetensorsFile::open(writeFile(reversed, bytesOf(data, 16))))
          .find("0 <= begin <= end"),
      std::string::npos);
  std::string huge = R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],)"
                     R"("data_offsets":[0,8]}})";
  EXPECT_NE(errorOf(SafetensorsFile::open(writeFile(huge, bytesOf(data, 16))))
                .find("too large"),
            std::string::npos);
  EXPECT_NE(errorOf(SafetensorsFile::open(writeFile("[1, 2]", "")))
                .find("header is not a JSON object"),
            std::string::npos);
}

TEST(Safetensors, WriterRoundTrips) {
  llvm::SmallString<128> path;
  llvm::sys::fs::createTemporaryFile("roundtrip", "st", path);
  std::vector<NamedTensor> tensors = {{"z", {3}, {1, 2, 3}},
                                      {"a", {1, 2}, {-1, 0.5}}};
  ASSERT_FALSE(bool(writeSafetensors(path, tensors)));
  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  EXPECT_EQ(file->names(), (std::vector<std::string>{"a", "z"}));
  auto z = file->read("z", {3});
  ASSERT_TRUE(bool(z));
  EXPECT_EQ(*z, (std::vector<float>{1, 2, 3}));
}
