//===- DecomposeNystrom.cpp - attn.nystrom to landmarks + attention -------===//
//
// O = F pinv(A) (Bm V) with m landmarks, in O(L m):
//
//   Q~ = W_q Q, K~ = W_k K     segment means as contractions with averaging
//                              matrices built from indices (no constants)
//   Bm V = attn.attention(Q~, K, V)            [m, Dv]   softmax kernel
//   A = softmax(scale Q~ K~^T)                 [m, m]    explicit, small
//   Z = pinv(A)                the iterative Moore-Penrose method (scf.for)
//   X = Z (Bm V)                               [m, Dv]
//   O = attn.attention(Q, K~, X)               [Lq, Dv]  = F X
//
// so both L-sized softmax products run on the attention kernels.
//
//===----------------------------------------------------------------------===//
#include "Decomposition.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/EinsumBuilder.h"
#include "attn/Transforms/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNDECOMPOSENYSTROM
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

using Reduction = EinsumBuilder::Reduction;
using IndexFn = EinsumBuilder::IndexFn;

int64_t dimOf(Value v, unsigned d) {
  return cast<RankedTensorType>(v.getType()).getDimSize(d);
}

/// W [m, L]: W[s, l] = 1 / |segment s| when row l lies in segment s =
/// [floor(s L / m), floor((s + 1) L / m)), else 0.
Value averagingMatrix(EinsumBuilder &eb, int64_t m, int64_t length) {
  return eb.map(
      "->sl", {},
      [&](OpBuilder &nb, Location l, ValueRange, IndexFn indexOf) {
        Value s = indexOf('s'), row = indexOf('l');
        Value lengthV = eb.index(length), mV = eb.index(m);
        Value begin = arith::DivUIOp::create(
            nb, l, arith::MulIOp::create(nb, l, s, lengthV), mV);
        Value next = arith::AddIOp::create(nb, l, s, eb.index(1));
        Value end = arith::DivUIOp::create(
            nb, l, arith::MulIOp::create(nb, l, next, lengthV), mV);
        Value inside = arith::AndIOp::create(
            nb, l,
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::uge, row, begin),
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, row, end));
        Value size = arith::IndexCastUIOp::create(
            nb, l, nb.getI64Type(), arith::SubIOp::create(nb, l, end, begin));
        Value weight = arith::DivFOp::create(
            nb, l, eb.f32(1),
            arith::UIToFPOp::create(nb, l, nb.getF32Type(), size));
        return arith::SelectOp::create(nb, l, inside, weight, eb.f32(0))
            .getResult();
      },
      {{'s', eb.index(m)}, {'l', eb.index(length)}});
}

/// Row-wise softmax of x [B, H, s, t] over t.
Value softmaxRows(EinsumBuilder &eb, Value x) {
  Value max = eb.reduce("bhst->bhs", x, Reduction::Max);
  Value e = eb.map("bhst,bhs->bhst", {x, max},
                   [](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
                     return math::ExpOp::create(
                                nb, l, arith::SubFOp::create(nb, l, a[0], a[1]))
                         .getResult();
                   });
  Value sum = eb.reduce("bhst->bhs", e, Reduction::Sum);
  return eb.map("bhst,bhs->bhst", {e, sum},
                [](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
                  return arith::DivFOp::create(nb, l, a[0], a[1]).getResult();
                });
}

/// c I - x for square x [B, H, s, u].
Value diagonalMinus(EinsumBuilder &eb, double c, Value x) {
  return eb.map("bhsu->bhsu", x,
                [&](OpBuilder &nb, Location l, ValueRange a, IndexFn indexOf) {
                  Value diagonal =
                      arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                            indexOf('s'), indexOf('u'));
                  Value d = arith::SelectOp::create(nb, l, diagonal, eb.f32(c),
                                                    eb.f32(0));
                  return arith::SubFOp::create(nb, l, d, a[0]).getResult();
                });
}

Value matmul(EinsumBuilder &eb, Value x, Value y) {
  return eb.contract("bhst,bhtu->bhsu", {x, y}, "bhstu");
}

/// The iterative Moore-Penrose pseudo-inverse of a [B, H, m, m]:
/// Z0 = A^T / (max row sum * max column sum) of |A| (A >= 0 here: softmax),
/// Z <- Z/4 (13 I - A Z (15 I - A Z (7 I - A Z))).
Value pseudoInverse(OpBuilder &b, Location loc, EinsumBuilder &eb, Value a,
                    int64_t iterations) {
  Value rowMax = eb.reduce("bhs->bh", eb.reduce("bhst->bhs", a, Reduction::Sum),
                           Reduction::Max);
  Value colMax = eb.reduce("bht->bh", eb.reduce("bhst->bht", a, Reduction::Sum),
                           Reduction::Max);
  Value z =
      eb.map("bhts,bh,bh->bhst", {a, rowMax, colMax},
             [](OpBuilder &nb, Location l, ValueRange v, IndexFn) {
               Value norm = arith::MulFOp::create(nb, l, v[1], v[2]);
               return arith::DivFOp::create(nb, l, v[0], norm).getResult();
             });
  // An scf.for rather than unrolled steps: the IR (and LLVM's compile
  // time) stays the same size whatever the number of steps.
  auto loop = scf::ForOp::create(
      b, loc, eb.index(0), eb.index(iterations), eb.index(1), ValueRange{z},
      [&](OpBuilder &nb, Location l, Value, ValueRange iter) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value zi = iter[0];
        Value az = matmul(eb, a, zi);
        Value inner = matmul(eb, az, diagonalMinus(eb, 7, az));
        Value middle = matmul(eb, az, diagonalMinus(eb, 15, inner));
        Value outer = matmul(eb, zi, diagonalMinus(eb, 13, middle));
        Value next =
            eb.map("bhsu->bhsu", outer,
                   [&](OpBuilder &mb, Location ml, ValueRange v, IndexFn) {
                     return arith::MulFOp::create(mb, ml, v[0], eb.f32(0.25))
                         .getResult();
                   });
        scf::YieldOp::create(b, l, next);
      });
  return loop.getResult(0);
}

FailureOr<Value> buildNystrom(NystromOp op) {
  if (failed(checkDecomposable(op, "attn-decompose-nystrom")))
    return failure();
  auto type = cast<RankedTensorType>(op.getType());
  OpBuilder b(op);
  Location loc = op.getLoc();
  EinsumBuilder eb(b, loc);
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  int64_t batch = dimOf(q, 0), heads = dimOf(q, 1), lq = dimOf(q, 2),
          d = dimOf(q, 3), lk = dimOf(k, 2), dv = dimOf(v, 3);
  int64_t m = op.getLandmarks();
  double scale = op.getScale() ? double(op.getScale()->convertToFloat())
                               : 1.0 / std::sqrt(double(d));

  Value qLand =
      eb.contract("sl,bhld->bhsd", {averagingMatrix(eb, m, lq), q}, "bhsld");
  Value kLand = eb.repeatHeads(
      eb.contract("sl,bhld->bhsd", {averagingMatrix(eb, m, lk), k}, "bhsld"),
      heads);
  auto landmarkType = [&](int64_t cols) {
    return RankedTensorType::get({batch, heads, m, cols}, b.getF32Type());
  };

  Value bmV = createSoftmaxAttention(b, loc, landmarkType(dv), qLand, k, v,
                                     op.getScaleAttr());
  Value logits = eb.map(
      "bhst->bhst", eb.contract("bhsd,bhtd->bhst", {qLand, kLand}, "bhstd"),
      [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
        return arith::MulFOp::create(nb, l, a[0], eb.f32(scale)).getResult();
      });
  Value z = pseudoInverse(b, loc, eb, softmaxRows(eb, logits),
                          op.getPinvIterations());
  Value x = eb.contract("bhst,bhte->bhse", {z, bmV}, "bhste");
  return createSoftmaxAttention(b, loc, type, q, kLand, x, op.getScaleAttr());
}

struct AttnDecomposeNystromPass
    : attn::impl::AttnDecomposeNystromBase<AttnDecomposeNystromPass> {
  void runOnOperation() override {
    if (failed(decomposeAll<NystromOp>(getOperation(), decomposeNystrom)))
      signalPassFailure();
  }
};

} // namespace

FailureOr<Value> mlir::attn::decomposeNystrom(NystromOp op) {
  return buildNystrom(op);
}
