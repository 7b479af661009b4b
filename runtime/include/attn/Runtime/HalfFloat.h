//===- HalfFloat.h - f16 and bf16 conversions on the host -------*- C++ -*-===//
//
// IEEE binary16 (f16) and bfloat16 (bf16) to and from f32, rounding to
// nearest even (as the kernels' arith.truncf does), for the operands and
// results of 16-bit kernels and for references computed "in that type".
// Written out bit by bit: no compiler extension (_Float16) needed.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_HALFFLOAT_H
#define ATTN_RUNTIME_HALFFLOAT_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace attnrt {

enum class FloatFormat { F32, F16, BF16 };

/// The format a spec's dtype ("f32", "f16", "bf16") names.
inline FloatFormat floatFormatOf(const std::string &dtype) {
  return dtype == "bf16" ? FloatFormat::BF16
         : dtype == "f16" ? FloatFormat::F16
                          : FloatFormat::F32;
}

inline uint32_t floatBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

inline float floatFromBits(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

inline uint16_t floatToHalfBits(float f) {
  uint32_t x = floatBits(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t magnitude = x & 0x7fffffff;
  if (magnitude >= 0x7f800000) // inf, or NaN (kept quiet)
    return sign | 0x7c00 | (magnitude > 0x7f800000 ? 0x200 : 0);
  if (magnitude >= 0x477ff000) // 65520 and above round to inf
    return sign | 0x7c00;
  if (magnitude < 0x38800000) {
    // Below 2^-14: a subnormal f16, a multiple of 2^-24. Scaling by 2^24
    // is exact; nearbyint rounds to nearest even (the default mode).
    float scaled = floatFromBits(magnitude) * 16777216.0f;
    return sign | uint16_t(std::nearbyint(scaled));
  }
  // Rebias the exponent (127 - 15 = 112) and round 13 mantissa bits away;
  // a carry out of the mantissa bumps the exponent, as it should.
  uint32_t rebiased = magnitude - 0x38000000;
  return sign |
         uint16_t((rebiased + 0xfff + ((rebiased >> 13) & 1)) >> 13);
}

inline float halfBitsToFloat(uint16_t h) {
  int exponent = (h >> 10) & 0x1f;
  int mantissa = h & 0x3ff;
  float magnitude =
      exponent == 0    ? std::ldexp(float(mantissa), -24)
      : exponent == 31 ? (mantissa ? NAN : INFINITY)
                       : std::ldexp(float(mantissa | 0x400), exponent - 25);
  return (h & 0x8000) ? -magnitude : magnitude;
}

inline uint16_t floatToBFloat16Bits(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffff) > 0x7f800000) // NaN: keep it quiet
    return uint16_t((x >> 16) | 0x40);
  return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

inline float bfloat16BitsToFloat(uint16_t h) {
  return floatFromBits(uint32_t(h) << 16);
}

inline uint16_t toBits(FloatFormat format, float f) {
  return format == FloatFormat::BF16 ? floatToBFloat16Bits(f)
                                     : floatToHalfBits(f);
}

inline float fromBits(FloatFormat format, uint16_t h) {
  return format == FloatFormat::BF16 ? bfloat16BitsToFloat(h)
                                     : halfBitsToFloat(h);
}

/// `x` rounded to `format` (through f32 first: the double rounding this
/// can cause is far below the errors such references measure).
inline double roundTo(FloatFormat format, double x) {
  if (format == FloatFormat::F32)
    return float(x);
  return fromBits(format, toBits(format, float(x)));
}

} // namespace attnrt

#endif // ATTN_RUNTIME_HALFFLOAT_H
