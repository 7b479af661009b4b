//===- DecomposeRouting.cpp - attn.routing to top-k + clustered attention -===//
//
// Routing Transformer attention with balanced clusters:
//
//   score[c, l] = x_l . mu_c / |mu_c|        for queries and keys (linalg)
//   members     = the top_k positions of each centroid's scores (runtime:
//                 attn_top_k_f32)
//   o[c, s]     = softmax over cluster c's keys for the cluster's s-th
//                 query, on gathered [c, top_k] blocks: an attn.attention
//                 with (head, cluster) as heads (the attention kernels), or,
//                 causal (j <= i by the gathered positions), a masked
//                 softmax written in linalg
//   out[i]      = mean of o[c, s] over the members (c, s) that are query i,
//                 0 when none: the members grouped by position with the
//                 runtime's counting sort (attn_counting_sort)
//
// Cost O(C L D) for routing, O(C top_k^2 D) for attention (O(L^1.5 D) at
// C = top_k = sqrt(L)), O(L Dv + C top_k) for the mean.
//
//===----------------------------------------------------------------------===//
#include "Decomposition.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/EinsumBuilder.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/RuntimeCall.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

  FailureOr<Value> run();

private:
  Value members(Value x, Value unitCentroids);
  Value gatherMembers(Value rows, Value indices, int64_t group, double scale);
  Value memberPositions(Value indices, int64_t group);
  Value meanOverClusters(Value clusterOut, Value queryMembers, int64_t length);
  Value clusterAttention(Value qc, Value kc, Value vc);
  Value causalClusterAttention(Value qc, Value kc, Value vc, Value queryMembers,
                               Value keyMembers, int64_t group);

  Value index(OpBuilder &nb, Location l, Value i64) {
    return arith::IndexCastOp::create(nb, l, nb.getIndexType(), i64);
  }

  RoutingOp op;
  OpBuilder b;
  EinsumBuilder eb;
  Location loc;
  int64_t batch = 0, heads = 0, clusters = 0, topK = 0;
};

/// The positions [B, Hx, C, top_k] (increasing) of each cluster's members
/// among the rows of x [B, Hx, L, D].
Value RoutingDecomposition::members(Value x, Value unitCentroids) {
  int64_t xHeads = dimOf(x, 1), length = dimOf(x, 2);
  Value scores = eb.contract("bhld,cd->bhcl", {x, unitCentroids}, "bhcld");
  int64_t rows = batch * xHeads * clusters;
  SmallVector<ReassociationIndices> flatten = {{0, 1, 2}, {3}};
  Value flat = tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get({rows, length}, b.getF32Type()), scores,
      flatten);
  Value selected =
      createRuntimeCall(b, loc, "attn_top_k_f32", flat,
                        RankedTensorType::get({rows, topK}, b.getI64Type()))
          .front();
  return tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get({batch, xHeads, clusters, topK}, b.getI64Type()),
      selected, flatten);
}

/// out[b, h, c, s, :] = scale * rows[b, h / group, indices[b, h / group, c,
/// s], :] for the `heads` query heads.
Value RoutingDecomposition::gatherMembers(Value rows, Value indices,
                                          int64_t group, double scale) {
  return eb.map(
      "->bhcsd", {},
      [&](OpBuilder &nb, Location l, ValueRange, IndexFn indexOf) {
        Value head =
            arith::DivUIOp::create(nb, l, indexOf('h'), eb.index(group));
        Value position = index(
            nb, l,
            tensor::ExtractOp::create(
                nb, l, indices,
                ValueRange{indexOf('b'), head, indexOf('c'), indexOf('s')}));
        Value x = tensor::ExtractOp::create(
            nb, l, rows,
            ValueRange{indexOf('b'), head, position, indexOf('d')});
        if (scale == 1.0)
          return x;
        return arith::MulFOp::create(nb, l, x, eb.f32(scale)).getResult();
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
            arith::DivUIOp::create(nb, l, indexOf('h'), eb.index(group));
        return tensor::ExtractOp::create(
                   nb, l, indices,
                   ValueRange{indexOf('b'), head, indexOf('c'), indexOf('s')})
            .getResult();
      },
      {{'b', eb.index(batch)},
       {'h', eb.index(heads)},
       {'c', eb.index(clusters)},
       {'s', eb.index(topK)}},
      "", b.getI64Type());
}

/// out[b, h, i, :] = mean of clusterOut[b, h, c, s, :] over the members
/// (c, s) that are query i, 0 when there is none. The members are grouped
/// by position with the runtime's counting sort (CSR: starts [B, H, L + 1]
/// into the sorted flat member indices c top_k + s), so the mean reads only
/// the rows it sums: O(L Dv + C top_k).
Value RoutingDecomposition::meanOverClusters(Value clusterOut,
                                             Value queryMembers,
                                             int64_t length) {
  int64_t members = clusters * topK, dv = dimOf(clusterOut, 4);
  Type i64 = b.getI64Type();
  SmallVector<ReassociationIndices> flatten = {{0, 1}, {2, 3}};
  Value flat = tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get({batch * heads, members}, i64),
      queryMembers, flatten);
  SmallVector<Value> grouped = createRuntimeCall(
      b, loc, "attn_counting_sort", flat,
      {RankedTensorType::get({batch * heads, members}, i64),
       RankedTensorType::get({batch * heads, 0}, i64),
       RankedTensorType::get({batch * heads, length + 1}, i64)});
  SmallVector<ReassociationIndices> split = {{0, 1}, {2}};
  Value order = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({batch, heads, members}, i64), grouped[0],
      split);
  Value starts = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({batch, heads, length + 1}, i64),
      grouped[2], split);
  Value rows = tensor::CollapseShapeOp::create(
      b, loc,
      RankedTensorType::get({batch, heads, members, dv}, b.getF32Type()),
      clusterOut, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}, {4}});
  return eb.map(
      "->bhid", {},
      [&](OpBuilder &nb, Location l, ValueRange, IndexFn indexOf) {
        // linalg.index must sit directly in the generic, not in the loop.
        Value batchIv = indexOf('b'), headIv = indexOf('h'), row = indexOf('i'),
              column = indexOf('d');
        auto startAt = [&](Value position) {
          return index(
              nb, l,
              tensor::ExtractOp::create(nb, l, starts,
                                        ValueRange{batchIv, headIv, position}));
        };
        Value first = startAt(row);
        Value last = startAt(arith::AddIOp::create(nb, l, row, eb.index(1)));
        auto loop = scf::ForOp::create(
            nb, l, first, last, eb.index(1), ValueRange{eb.f32(0)},
            [&](OpBuilder &fb, Location fl, Value t, ValueRange sum) {
              Value member =
                  index(fb, fl,
                        tensor::ExtractOp::create(
                            fb, fl, order, ValueRange{batchIv, headIv, t}));
              Value x = tensor::ExtractOp::create(
                  fb, fl, rows, ValueRange{batchIv, headIv, member, column});
              scf::YieldOp::create(
                  fb, fl, ValueRange{arith::AddFOp::create(fb, fl, sum[0], x)});
            });
        Value count = arith::SubIOp::create(nb, l, last, first);
        Value none = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                           count, eb.index(0));
        Value countF = arith::UIToFPOp::create(
            nb, l, nb.getF32Type(),
            arith::IndexCastUIOp::create(nb, l, nb.getI64Type(), count));
        Value mean = arith::DivFOp::create(nb, l, loop.getResult(0), countF);
        return arith::SelectOp::create(nb, l, none, eb.f32(0), mean)
            .getResult();
      },
      {{'b', eb.index(batch)},
       {'h', eb.index(heads)},
       {'i', eb.index(length)},
       {'d', eb.index(dv)}});
}

/// Causal attention inside each [top_k] block: the mask compares the
/// gathered positions, which attn.attention cannot express, so the block
/// softmax is written here (q already scaled).
Value RoutingDecomposition::causalClusterAttention(Value qc, Value kc, Value vc,
                                                   Value queryMembers,
                                                   Value keyMembers,
                                                   int64_t group) {
  Value qPos = memberPositions(queryMembers, 1);
  Value kPos = memberPositions(keyMembers, group);
  Value scores = eb.map(
      "bhcst,bhcs,bhct->bhcst",
      {eb.contract("bhcsd,bhctd->bhcst", {qc, kc}, "bhcstd"), qPos, kPos},
      [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
        Value later =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sgt, a[2], a[1]);
        return arith::SelectOp::create(nb, l, later, eb.f32(-INFINITY), a[0])
            .getResult();
      });
  // A row with every key later than its query is 0.
  Value shift = eb.negInfToZero(
      "bhcs->bhcs", eb.reduce("bhcst->bhcs", scores, Reduction::Max));
  Value e = eb.expDifference("bhcst,bhcs->bhcst", scores, shift);
  Value sum = eb.reduce("bhcst->bhcs", e, Reduction::Sum);
  return eb.divideOrZero("bhcse,bhcs->bhcse",
                         eb.contract("bhcst,bhcte->bhcse", {e, vc}, "bhcste"),
                         sum);
}

/// Non-causal attention inside each block: dense softmax attention of
/// top_k queries on top_k keys, with (head, cluster) as the attention op's
/// head dimension, so the attention kernels run it on all cores.
Value RoutingDecomposition::clusterAttention(Value qc, Value kc, Value vc) {
  SmallVector<ReassociationIndices> heads = {{0}, {1, 2}, {3}, {4}};
  auto merged = [&](Value x) -> Value {
    return tensor::CollapseShapeOp::create(b, loc, x, heads);
  };
  auto vcType = cast<RankedTensorType>(vc.getType());
  auto outType = RankedTensorType::get(
      {batch, this->heads * clusters, topK, vcType.getDimSize(4)},
      b.getF32Type());
  Value out = createSoftmaxAttention(b, loc, outType, merged(qc), merged(kc),
                                     merged(vc), op.getScaleAttr());
  return tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get(
          {batch, this->heads, clusters, topK, vcType.getDimSize(4)},
          b.getF32Type()),
      out, heads);
}

FailureOr<Value> RoutingDecomposition::run() {
  if (failed(checkDecomposable(op, "attn-decompose-routing")))
    return failure();
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
  Value unit = eb.map(
      "cd,c->cd", {centroids, norm2},
      [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
        Value zero = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                           a[1], eb.f32(0));
        Value x = arith::DivFOp::create(nb, l, a[0],
                                        math::SqrtOp::create(nb, l, a[1]));
        return arith::SelectOp::create(nb, l, zero, eb.f32(0), x).getResult();
      });
  Value queryMembers = members(q, unit);
  Value keyMembers = members(k, unit);

  // Attention inside each cluster, [B, H, C, top_k] blocks.
  bool causal = op.getCausal();
  Value qc = gatherMembers(q, queryMembers, 1, causal ? scale : 1.0);
  Value kc = gatherMembers(k, keyMembers, group, 1.0);
  Value vc = gatherMembers(v, keyMembers, group, 1.0);
  Value clusterOut = causal ? causalClusterAttention(qc, kc, vc, queryMembers,
                                                     keyMembers, group)
                            : clusterAttention(qc, kc, vc);
  Value out = meanOverClusters(clusterOut, queryMembers, dimOf(q, 2));
  return out;
}

struct AttnDecomposeRoutingPass
    : attn::impl::AttnDecomposeRoutingBase<AttnDecomposeRoutingPass> {
  void runOnOperation() override {
    if (failed(decomposeAll<RoutingOp>(getOperation(), decomposeRouting)))
      signalPassFailure();
  }
};

} // namespace

FailureOr<Value> mlir::attn::decomposeRouting(RoutingOp op) {
  return RoutingDecomposition(op).run();
}
