//===- HalfFloatTest.cpp - f16 and bf16 conversions -----------------------===//
//
// The runtime's bit-level conversions against LLVM's APFloat (an
// independent implementation of IEEE rounding): every 16-bit pattern
// widened, and f32 values from every exponent (random mantissas, ties,
// the overflow and subnormal edges) rounded to nearest even.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/HalfFloat.h"
#include "llvm/ADT/APFloat.h"
#include <gtest/gtest.h>
#include <random>

using namespace attnrt;

namespace {

const llvm::fltSemantics &semantics(FloatFormat format) {
  return format == FloatFormat::BF16 ? llvm::APFloat::BFloat()
                                     : llvm::APFloat::IEEEhalf();
}

uint16_t apfloatRound(FloatFormat format, float f) {
  llvm::APFloat value(f);
  bool lost;
  value.convert(semantics(format), llvm::APFloat::rmNearestTiesToEven, &lost);
  return uint16_t(value.bitcastToAPInt().getZExtValue());
}

float apfloatWiden(FloatFormat format, uint16_t bits) {
  return llvm::APFloat(semantics(format), llvm::APInt(16, bits))
      .convertToFloat();
}

class HalfFloat : public testing::TestWithParam<FloatFormat> {};

TEST_P(HalfFloat, WidensEveryPattern) {
  FloatFormat format = GetParam();
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    float ours = fromBits(format, uint16_t(bits));
    float theirs = apfloatWiden(format, uint16_t(bits));
    if (std::isnan(theirs))
      EXPECT_TRUE(std::isnan(ours)) << bits;
    else
      EXPECT_EQ(floatBits(ours), floatBits(theirs)) << bits;
  }
}

TEST_P(HalfFloat, RoundsToNearestEven) {
  FloatFormat format = GetParam();
  std::mt19937 rng(11);
  std::vector<float> values = {0.0f, -0.0f, 1.0f, 0.1f, 65504.0f, 65519.0f,
                               65520.0f, 1e-8f, 2.9802322e-8f, 5.9604645e-8f,
                               6.0975552e-5f, 3.4e38f, INFINITY, -INFINITY};
  // Every f32 exponent with random mantissas, and exact ties (the 16-bit
  // pattern's last kept bit set or clear, the dropped bits 1000...).
  for (uint32_t exponent = 0; exponent < 255; ++exponent)
    for (int n = 0; n < 64; ++n) {
      uint32_t mantissa = rng() & 0x7fffff;
      uint32_t sign = (rng() & 1) << 31;
      values.push_back(floatFromBits(sign | exponent << 23 | mantissa));
      uint32_t tie = format == FloatFormat::BF16 ? 0x8000 : 0x1000;
      uint32_t keep = format == FloatFormat::BF16 ? ~0xffffu : ~0x1fffu;
      values.push_back(
          floatFromBits(sign | exponent << 23 | ((mantissa & keep) | tie)));
    }
  for (float f : values)
    EXPECT_EQ(toBits(format, f), apfloatRound(format, f))
        << "f32 bits " << std::hex << floatBits(f);
  EXPECT_TRUE(std::isnan(fromBits(format, toBits(format, NAN))));
}

INSTANTIATE_TEST_SUITE_P(Formats, HalfFloat,
                         testing::Values(FloatFormat::F16, FloatFormat::BF16));

} // namespace
