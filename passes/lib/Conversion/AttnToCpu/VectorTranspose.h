//===- VectorTranspose.h - lanes x lanes transposes in registers -*- C++ -*-===//
//
// The CPU emitters' transposing copies: lanes vectors of lanes floats
// (rows) become the columns, as log2(lanes) butterfly stages of two
// vector.shuffles per pair, instead of scalar stores or scatters.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOCPU_VECTORTRANSPOSE_H
#define ATTN_CONVERSION_ATTNTOCPU_VECTORTRANSPOSE_H

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::attn {

/// v[r] lane c becomes v[c] lane r, for v.size() == lanes of each vector.
inline void transposeInRegisters(ImplicitLocOpBuilder &b,
                                 SmallVector<Value> &v) {
  int64_t lanes = v.size();
  // Each stage swaps the off-diagonal blocks of size d = lanes / 2 .. 1.
  for (int64_t d = lanes / 2; d >= 1; d /= 2) {
    SmallVector<int64_t> lo, hi;
    for (int64_t l = 0; l < lanes; ++l) {
      bool upper = l & d;
      lo.push_back(upper ? lanes + l - d : l);
      hi.push_back(upper ? lanes + l : l + d);
    }
    for (int64_t i = 0; i < lanes; ++i) {
      if (i & d)
        continue;
      Value x = v[i], y = v[i + d];
      v[i] = vector::ShuffleOp::create(b, x, y, lo);
      v[i + d] = vector::ShuffleOp::create(b, x, y, hi);
    }
  }
}

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOCPU_VECTORTRANSPOSE_H
