//===- DecomposeRope.cpp - attn.rope to one linalg.generic ----------------===//
//
//   y[b,h,l,d] = x[b,h,l,d] cos(theta) + s(d) x[b,h,l,partner(d)] sin(theta)
//   theta = t(b, l) base^(-2n / D)
//
// with n the pair of d, partner(d) the other element of the pair and
// s = -1 on a pair's first element, +1 on its second (docs/Dialect.md). The
// angle, its cosine and sine are f64: positions reach 1e5 and more, where an
// f32 angle is off by ~1e-2 rad. The rest is f32 (16-bit inputs widen); the
// partner element is a tensor.extract in the body.
//
//===----------------------------------------------------------------------===//
#include "Decomposition.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNDECOMPOSEROPE
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

Value buildRope(RopeOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value x = op.getInput();
  auto type = cast<RankedTensorType>(x.getType());
  Type element = type.getElementType(), f32 = b.getF32Type(),
       f64 = b.getF64Type();
  Value empty = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, x), element);
  Value dim = tensor::DimOp::create(b, loc, x, 3);
  Value positions = op.getPositions();
  bool interleaved = op.getStyle() == RopeStyle::interleaved;
  double logBase = std::log(op.getBase().convertToDouble());
  AffineMap id = b.getMultiDimIdentityMap(4);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{x}, ValueRange{empty}, {id, id},
      SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        auto index = [&](int64_t v) -> Value {
          return arith::ConstantIndexOp::create(nb, nl, v);
        };
        Value bIv = linalg::IndexOp::create(nb, nl, 0);
        Value hIv = linalg::IndexOp::create(nb, nl, 1);
        Value lIv = linalg::IndexOp::create(nb, nl, 2);
        Value dIv = linalg::IndexOp::create(nb, nl, 3);
        // The pair n of d, whether d is its first element, and the other.
        Value n, first, partner;
        if (interleaved) {
          n = arith::DivUIOp::create(nb, nl, dIv, index(2));
          first = arith::CmpIOp::create(
              nb, nl, arith::CmpIPredicate::eq,
              arith::RemUIOp::create(nb, nl, dIv, index(2)), index(0));
          partner = arith::SelectOp::create(
              nb, nl, first, arith::AddIOp::create(nb, nl, dIv, index(1)),
              arith::SubIOp::create(nb, nl, dIv, index(1)));
        } else {
          Value half = arith::DivUIOp::create(nb, nl, dim, index(2));
          first = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, dIv,
                                        half);
          n = arith::SelectOp::create(nb, nl, first, dIv,
                                      arith::SubIOp::create(nb, nl, dIv, half));
          partner = arith::SelectOp::create(
              nb, nl, first, arith::AddIOp::create(nb, nl, dIv, half), n);
        }
        // theta = t exp(-(2n / D) log(base)), in f64.
        Value t;
        if (positions) {
          bool perBatch =
              cast<RankedTensorType>(positions.getType()).getRank() == 2;
          Value raw = tensor::ExtractOp::create(nb, nl, positions,
                                                perBatch ? ValueRange{bIv, lIv}
                                                         : ValueRange{lIv});
          t = arith::SIToFPOp::create(nb, nl, f64, raw);
        } else {
          t = arith::UIToFPOp::create(
              nb, nl, f64,
              arith::IndexCastUIOp::create(nb, nl, nb.getI64Type(), lIv));
        }
        auto toF64 = [&](Value i) -> Value {
          return arith::UIToFPOp::create(
              nb, nl, f64,
              arith::IndexCastUIOp::create(nb, nl, nb.getI64Type(), i));
        };
        Value exponent = arith::MulFOp::create(
            nb, nl,
            arith::DivFOp::create(
                nb, nl,
                arith::MulFOp::create(nb, nl, toF64(n),
                                      arith::ConstantOp::create(
                                          nb, nl, nb.getF64FloatAttr(-2.0))),
                toF64(dim)),
            arith::ConstantOp::create(nb, nl, nb.getF64FloatAttr(logBase)));
        Value theta = arith::MulFOp::create(
            nb, nl, t, math::ExpOp::create(nb, nl, exponent));
        Value cos = arith::TruncFOp::create(nb, nl, f32,
                                            math::CosOp::create(nb, nl, theta));
        Value sin = arith::TruncFOp::create(nb, nl, f32,
                                            math::SinOp::create(nb, nl, theta));
        auto widen = [&](Value v) -> Value {
          return v.getType() == f32 ? v : arith::ExtFOp::create(nb, nl, f32, v);
        };
        Value self = widen(args[0]);
        Value other = widen(tensor::ExtractOp::create(
            nb, nl, x, ValueRange{bIv, hIv, lIv, partner}));
        // First element: x_a cos - x_b sin; second: x_b cos + x_a sin.
        Value signedOther = arith::SelectOp::create(
            nb, nl, first, arith::NegFOp::create(nb, nl, other), other);
        Value y = arith::AddFOp::create(
            nb, nl, arith::MulFOp::create(nb, nl, self, cos),
            arith::MulFOp::create(nb, nl, signedOther, sin));
        if (element != f32)
          y = arith::TruncFOp::create(nb, nl, element, y);
        linalg::YieldOp::create(nb, nl, ValueRange{y});
      });
  return generic.getResult(0);
}

struct AttnDecomposeRopePass
    : attn::impl::AttnDecomposeRopeBase<AttnDecomposeRopePass> {
  void runOnOperation() override {
    if (failed(decomposeAll<RopeOp>(getOperation(), decomposeRope)))
      signalPassFailure();
  }
};

} // namespace

FailureOr<Value> mlir::attn::decomposeRope(RopeOp op) { return buildRope(op); }
