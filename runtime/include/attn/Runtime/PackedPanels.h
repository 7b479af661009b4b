//===- PackedPanels.h - where attn's GEMM reads a packed weight -*- C++ -*-===//
//
// attn's GEMM (attn-matmul-to-cpu-gemm) reads a layer weight from panels of
// `width` columns, [ceil(out / width)][in][width], zeros past `out`. bf16
// products of rounded x (AMX tiles, vdpbf16ps) read the k's in pairs,
// [ceil(out / width)][ceil(in / 2)][2 width]: panels of 16 columns on AMX,
// in whole 2 x 2 blocks of tiles ([2 ceil(out / 32)][16 ceil(in / 32)][32]),
// of 32 for vdpbf16ps (a pair row is two zmm). Packing needs nothing of LLVM:
// the JIT's CompiledLinear and the C API's ahead-of-time stacks share it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_PACKEDPANELS_H
#define ATTN_RUNTIME_PACKEDPANELS_H

#include "attn/Runtime/HalfFloat.h"
#include "attn/Runtime/HugePages.h"
#include <cstdint>
#include <vector>

namespace attnrt {

struct PanelLayout {
  int64_t in = 0, out = 0;
  int64_t width = 0;  ///< columns per panel
  bool pairs = false; ///< k's in pairs inside the panels (bf16 products)
  bool amxTiles = false; ///< pairs padded to whole 2 x 2 blocks of AMX tiles

  /// The packed buffer's shape.
  std::vector<int64_t> shape() const {
    if (amxTiles)
      return {2 * ((out + 31) / 32), 16 * ((in + 31) / 32), 2 * width};
    if (pairs)
      return {(out + width - 1) / width, (in + 1) / 2, 2 * width};
    return {(out + width - 1) / width, in, width};
  }
  int64_t elements() const {
    std::vector<int64_t> s = shape();
    return s[0] * s[1] * s[2];
  }
  /// Writes W, stored [out, in], converted by `convert`, into `packed`
  /// (elements() of them); zeros (converted) past out and in.
  template <typename T, typename Convert>
  void pack(const float *outByIn, T *packed, Convert convert) const {
    int64_t depth = pairs ? 2 * shape()[1] : in;
    T zero = convert(0.0f);
    for (int64_t i = 0, e = elements(); i < e; ++i)
      packed[i] = zero;
    for (int64_t n = 0; n < out; ++n)
      for (int64_t k = 0; k < in; ++k) {
        int64_t at = pairs ? ((n / width) * depth + k - k % 2) * width +
                                 (n % width) * 2 + k % 2
                           : ((n / width) * depth + k) * width + n % width;
        packed[at] = convert(outByIn[n * in + k]);
      }
  }
};

/// A weight packed into `layout`'s panels once, in f32 or rounded to nearest
/// even into bf16 / f16, on huge pages: the GEMM streams them (HugePages.h).
struct PackedWeightPanels {
  PackedWeightPanels(const PanelLayout &layout, FloatFormat format,
                     const float *outByIn)
      : layout(layout), format(format) {
    if (format == FloatFormat::F32) {
      floats.resize(layout.elements());
      layout.pack(outByIn, floats.data(), [](float v) { return v; });
    } else {
      halves.resize(layout.elements());
      layout.pack(outByIn, halves.data(),
                  [format](float v) { return toBits(format, v); });
    }
  }
  const void *data() const {
    return format == FloatFormat::F32
               ? static_cast<const void *>(floats.data())
               : static_cast<const void *>(halves.data());
  }
  int64_t bytes() const {
    return int64_t(floats.size() * sizeof(float) +
                   halves.size() * sizeof(uint16_t));
  }

  PanelLayout layout;
  FloatFormat format;
  std::vector<float, HugePageAllocator<float>> floats;
  std::vector<uint16_t, HugePageAllocator<uint16_t>> halves;
};

} // namespace attnrt

#endif // ATTN_RUNTIME_PACKEDPANELS_H
