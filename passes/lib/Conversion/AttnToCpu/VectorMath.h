//===- VectorMath.h - exp for softmax weights on vectors ---------*- C++
//-*-===//
//
// The CPU kernels' exponential: the forward's softmax weights and the
// backward's recomputed probabilities come from the same function, so the
// backward's P is the forward's to the last bit. And the lane offsets of
// position vectors both kernels build.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOCPU_VECTORMATH_H
#define ATTN_CONVERSION_ATTNTOCPU_VECTORMATH_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::attn {

/// 2^y lane-wise for a vector of f32 y <= 0 (softmax weights): exact 0 at
/// y = -inf, NaN kept, relative error under 1e-7.
///
/// 2^y = 2^n 2^f with n = round(y) and f = y - n in [-1/2, 1/2]: adding
/// 1.5 * 2^23 + 127 rounds y to an integer held in the low mantissa bits,
/// n + 127, which shifted by 23 are the exponent bits of 2^n. 2^f is a
/// degree-5 minimax polynomial (relative error 7.5e-8, under half an f32
/// ulp). y is clamped at -127, whose 2^n has zero bits: y = -inf gives an
/// exact 0 and no denormals arise. Replaces math.exp's general expansion
/// (range checks for both signs) with 11 vector operations.
inline Value buildExp2(ImplicitLocOpBuilder &b, Value y) {
  auto vec = cast<VectorType>(y.getType());
  auto splat = [&](float v) -> Value {
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(vec, b.getF32FloatAttr(v)));
  };
  VectorType ints = VectorType::get(vec.getShape(), b.getI32Type());
  Value floor = splat(-127.0f);
  Value below = arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, y, floor);
  y = arith::SelectOp::create(b, below, floor, y);
  Value magic = splat(12582912.0f + 127.0f); // 1.5 * 2^23 + 127
  Value shifted = arith::AddFOp::create(b, y, magic);
  Value n = arith::SubFOp::create(b, shifted, magic);
  Value f = arith::SubFOp::create(b, y, n);
  const float coefficients[] = {1.3276472e-3f, 9.6755413e-3f, 5.5507133e-2f,
                                2.4022120e-1f, 6.9314697e-1f, 1.0000001f};
  Value poly = splat(coefficients[0]);
  for (float c : ArrayRef<float>(coefficients).drop_front())
    poly = vector::FMAOp::create(b, poly, f, splat(c));
  Value bits = arith::ShLIOp::create(
      b, arith::BitcastOp::create(b, ints, shifted),
      arith::ConstantOp::create(
          b, DenseElementsAttr::get(ints, b.getI32IntegerAttr(23))));
  return arith::MulFOp::create(b, poly, arith::BitcastOp::create(b, vec, bits));
}

/// The constant vector of index [first, first + lanes): the lane offsets of
/// the positions a vector of scores covers.
inline Value buildLaneOffsets(ImplicitLocOpBuilder &b, int64_t first,
                              int64_t lanes) {
  SmallVector<int64_t> iota(lanes);
  for (int64_t n = 0; n < lanes; ++n)
    iota[n] = first + n;
  return arith::ConstantOp::create(
      b, DenseElementsAttr::get(VectorType::get({lanes}, b.getIndexType()),
                                ArrayRef<int64_t>(iota)));
}

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOCPU_VECTORMATH_H
