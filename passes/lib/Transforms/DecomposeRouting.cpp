//===- DecomposeRouting.cpp - attn.routing to top-k + clustered attention -===//
//
// Routing Transformer attention with balanced clusters:
//
//   score[c, l] = x_l . mu_c / |mu_c|        for queries and keys (linalg)
//   members     = the top_k positions of each centroid's scores (runtime:
//                 attn_top_k_f32, which also gives each position's slot in
//                 the list, -1 when not a member)
//   o[c, s]     = softmax over cluster c's keys (j <= i when causal) for the
//                 cluster's s-th query i, by gathered [c, top_k] blocks
//   out[i]      = mean of o[c, slot[c, i]] over the clusters c holding i,
//                 0 when none
//
// Cost O(C L D) for routing, O(C top_k^2 D) for attention (O(L^1.5 D) at
// C = top_k = sqrt(L)), O(C L D) for the gather back.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/EinsumBuilder.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/RuntimeCall.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNDECOMPOSEROUTING
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

class RoutingDecomposition {
public:
  RoutingDecomposition(RoutingOp op)
      : op(op), b(op), eb(b, op.getLoc()), loc(op.getLoc()) {}

  LogicalResult run();

private:
  std::pair<Value, Value> members(Value x, Value unitCentroids,
                                  bool withSlots);
  Value gatherMembers(Value rows, Value indices, int64_t group, double scale);
  Value memberPositions(Value indices, int64_t group);
  Value meanOverClusters(Value clusterOut, Value slot);

  Value index(OpBuilder &nb, Location l, Value i64) {
    return nb.create<arith::IndexCastOp>(l, nb.getIndexType(), i64);
  }

  RoutingOp op;
  OpBuilder b;
  EinsumBuilder eb;
  Location loc;
  int64_t batch = 0, heads = 0, clusters = 0, topK = 0;
};

/// Members of each cluster among the rows of x [B, Hx, L, D]: their
/// positions [B, Hx, C, top_k] (increasing) and each position's slot
/// [B, Hx, C, L] (-1 outside the cluster; [B, Hx, C, 0] unless
/// `withSlots`).
std::pair<Value, Value> RoutingDecomposition::members(Value x,
                                                      Value unitCentroids,
                                                      bool withSlots) {
  int64_t xHeads = dimOf(x, 1), length = dimOf(x, 2);
  Value scores = eb.contract("bhld,cd->bhcl", {x, unitCentroids}, "bhcld");
  int64_t rows = batch * xHeads * clusters;
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  SmallVector<ReassociationIndices> flatten = {{0, 1, 2}, {3}};
  Value flat = b.create<tensor::CollapseShapeOp>(
      loc, RankedTensorType::get({rows, length}, f32), scores, flatten);
  SmallVector<Value> selected = createRuntimeCall(
      b, loc, "attn_top_k_f32", flat,
      {RankedTensorType::get({rows, topK}, i64),
       RankedTensorType::get({rows, withSlots ? length : 0}, i64)});
  auto expand = [&](Value v, int64_t last) -> Value {
    return b.create<tensor::ExpandShapeOp>(
        loc, RankedTensorType::get({batch, xHeads, clusters, last}, i64), v,
        flatten);
  };
  return {expand(selected[0], topK),
          expand(selected[1], withSlots ? length : 0)};
}

/// out[b, h, c, s, :] = scale * rows[b, h / group, indices[b, h / group, c,
/// s], :] for the `heads` query heads.
Value RoutingDecomposition::gatherMembers(Value rows, Value indices,
                                          int64_t group, double scale) {
  return eb.map(
      "->bhcsd", {},
      [&](OpBuilder &nb, Location l, ValueRange, IndexFn indexOf) {
        Value head =
            nb.create<arith::DivUIOp>(l, indexOf('h'), eb.index(group));
        Value position = index(
            nb, l,
            nb.create<tensor::ExtractOp>(
                l, indices,
                ValueRange{indexOf('b'), head, indexOf('c'), indexOf('s')}));
        Value x = nb.create<tensor::ExtractOp>(
            l, rows, ValueRange{indexOf('b'), head, position, indexOf('d')});
        if (scale == 1.0)
          return x;
        return nb.create<arith::MulFOp>(l, x, eb.f32(scale)).getResult();
      },
      {{'b', eb.index(batch)},
       {'h', eb.index(heads)},
       {'c', eb.index(clusters)},
       {'s', eb.index(topK)},
       {'d', eb.index(dimOf(rows, 3))}});
}

/// positions[b, h, c, s] = indices[b, h / group, c, s] for the query heads.
Value RoutingDecomposition::memberPositions(Value indices, int64_t group) {
  return eb.map(
      "->bhcs", {},
      [&](OpBuilder &nb, Location l, ValueRange, IndexFn indexOf) {
        Value head =
            nb.create<arith::DivUIOp>(l, indexOf('h'), eb.index(group));
        return nb
            .create<tensor::ExtractOp>(
                l, indices,
                ValueRange{indexOf('b'), head, indexOf('c'), indexOf('s')})
            .getResult();
      },
      {{'b', eb.index(batch)},
       {'h', eb.index(heads)},
       {'c', eb.index(clusters)},
       {'s', eb.index(topK)}},
      "", b.getI64Type());
}

/// out[b, h, i, :] = mean over the clusters c with slot[b, h, c, i] >= 0 of
/// clusterOut[b, h, c, slot, :], 0 when there is none. One reduction over c
/// (loops b, h, i, c, d) reading the members' rows in place.
Value RoutingDecomposition::meanOverClusters(Value clusterOut, Value slot) {
  int64_t length = dimOf(slot, 3), dv = dimOf(clusterOut, 4);
  MLIRContext *ctx = b.getContext();
  AffineExpr bd, hd, id, cd, dd;
  bindDims(ctx, bd, hd, id, cd, dd);
  Value init = b.create<linalg::FillOp>(
                    loc, eb.f32(0),
                    b.create<tensor::EmptyOp>(
                         loc, ArrayRef<int64_t>{batch, heads, length, dv},
                         b.getF32Type())
                        .getResult())
                   .getResult(0);
  using utils::IteratorType;
  auto sum = b.create<linalg::GenericOp>(
      loc, init.getType(), slot, init,
      ArrayRef<AffineMap>{AffineMap::get(5, 0, {bd, hd, cd, id}, ctx),
                          AffineMap::get(5, 0, {bd, hd, id, dd}, ctx)},
      ArrayRef<IteratorType>{IteratorType::parallel, IteratorType::parallel,
                             IteratorType::parallel, IteratorType::reduction,
                             IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value zero = nb.create<arith::ConstantOp>(l, nb.getI64IntegerAttr(0));
        Value member =
            nb.create<arith::CmpIOp>(l, arith::CmpIPredicate::sge, a[0], zero);
        Value s = index(nb, l, nb.create<arith::MaxSIOp>(l, a[0], zero));
        Value x = nb.create<tensor::ExtractOp>(
            l, clusterOut,
            ValueRange{nb.create<linalg::IndexOp>(l, 0),
                       nb.create<linalg::IndexOp>(l, 1),
                       nb.create<linalg::IndexOp>(l, 3), s,
                       nb.create<linalg::IndexOp>(l, 4)});
        Value add = nb.create<arith::AddFOp>(l, a[1], x);
        nb.create<linalg::YieldOp>(
            l, ValueRange{nb.create<arith::SelectOp>(l, member, add, a[1])});
      });
  Value count = eb.reduce(
      "bhci->bhi",
      eb.map("bhci->bhci", slot,
             [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
               Value zero =
                   nb.create<arith::ConstantOp>(l, nb.getI64IntegerAttr(0));
               Value member = nb.create<arith::CmpIOp>(
                   l, arith::CmpIPredicate::sge, a[0], zero);
               return nb.create<arith::SelectOp>(l, member, eb.f32(1),
                                                 eb.f32(0))
                   .getResult();
             }),
      Reduction::Sum);
  return eb.map("bhid,bhi->bhid", {sum.getResult(0), count},
                [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
                  Value none = nb.create<arith::CmpFOp>(
                      l, arith::CmpFPredicate::OEQ, a[1], eb.f32(0));
                  return nb
                      .create<arith::SelectOp>(
                          l, none, eb.f32(0),
                          nb.create<arith::DivFOp>(l, a[0], a[1]))
                      .getResult();
                });
}

LogicalResult RoutingDecomposition::run() {
  auto type = cast<RankedTensorType>(op.getType());
  if (!type.getElementType().isF32())
    return op.emitOpError(
               "attn-decompose-routing handles f32 only for now, got ")
           << type.getElementType();
  for (Value operand : op->getOperands())
    if (!cast<RankedTensorType>(operand.getType()).hasStaticShape())
      return op.emitOpError("attn-decompose-routing needs static shapes");
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  batch = dimOf(q, 0);
  heads = dimOf(q, 1);
  clusters = dimOf(op.getCentroids(), 0);
  topK = op.getTopK();
  int64_t d = dimOf(q, 3), group = heads / dimOf(k, 1);
  double scale = op.getScale() ? double(op.getScale()->convertToFloat())
                               : 1.0 / std::sqrt(double(d));

  // Centroids at unit length (a zero centroid stays zero).
  Value centroids = op.getCentroids();
  Value norm2 = eb.contract("cd,cd->c", {centroids, centroids});
  Value unit = eb.map("cd,c->cd", {centroids, norm2},
                      [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
                        Value zero = nb.create<arith::CmpFOp>(
                            l, arith::CmpFPredicate::OEQ, a[1], eb.f32(0));
                        Value x = nb.create<arith::DivFOp>(
                            l, a[0], nb.create<math::SqrtOp>(l, a[1]));
                        return nb.create<arith::SelectOp>(l, zero, eb.f32(0), x)
                            .getResult();
                      });
  auto [queryMembers, querySlot] = members(q, unit, /*withSlots=*/true);
  Value keyMembers = members(k, unit, /*withSlots=*/false).first;

  // Attention inside each cluster, [B, H, C, top_k] blocks.
  Value qc = gatherMembers(q, queryMembers, 1, scale);
  Value kc = gatherMembers(k, keyMembers, group, 1.0);
  Value vc = gatherMembers(v, keyMembers, group, 1.0);
  Value scores = eb.contract("bhcsd,bhctd->bhcst", {qc, kc}, "bhcstd");
  if (op.getCausal()) {
    Value qPos = memberPositions(queryMembers, 1);
    Value kPos = memberPositions(keyMembers, group);
    scores = eb.map("bhcst,bhcs,bhct->bhcst", {scores, qPos, kPos},
                    [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
                      Value later = nb.create<arith::CmpIOp>(
                          l, arith::CmpIPredicate::sgt, a[2], a[1]);
                      return nb
                          .create<arith::SelectOp>(l, later,
                                                   eb.f32(-INFINITY), a[0])
                          .getResult();
                    });
  }
  // Softmax; a row with every key later than its query is 0.
  Value shift = eb.map(
      "bhcs->bhcs", eb.reduce("bhcst->bhcs", scores, Reduction::Max),
      [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
        Value empty = nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::OEQ,
                                               a[0], eb.f32(-INFINITY));
        return nb.create<arith::SelectOp>(l, empty, eb.f32(0), a[0])
            .getResult();
      });
  Value e = eb.map("bhcst,bhcs->bhcst", {scores, shift},
                   [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
                     return nb
                         .create<math::ExpOp>(
                             l, nb.create<arith::SubFOp>(l, a[0], a[1]))
                         .getResult();
                   });
  Value sum = eb.reduce("bhcst->bhcs", e, Reduction::Sum);
  Value clusterOut = eb.map(
      "bhcse,bhcs->bhcse",
      {eb.contract("bhcst,bhcte->bhcse", {e, vc}, "bhcste"), sum},
      [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
        Value empty = nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::OEQ,
                                               a[1], eb.f32(0));
        return nb
            .create<arith::SelectOp>(l, empty, eb.f32(0),
                                     nb.create<arith::DivFOp>(l, a[0], a[1]))
            .getResult();
      });
  Value out = meanOverClusters(clusterOut, querySlot);
  op.replaceAllUsesWith(out);
  op.erase();
  return success();
}

struct AttnDecomposeRoutingPass
    : attn::impl::AttnDecomposeRoutingBase<AttnDecomposeRoutingPass> {
  void runOnOperation() override {
    SmallVector<RoutingOp> ops;
    getOperation()->walk([&](RoutingOp op) { ops.push_back(op); });
    for (RoutingOp op : ops)
      if (failed(RoutingDecomposition(op).run()))
        return signalPassFailure();
  }
};

} // namespace
