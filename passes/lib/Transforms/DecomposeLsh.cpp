//===- DecomposeLsh.cpp - attn.lsh (Reformer) to sort + chunked attention -===//
//
// For each hash round r (all rounds at once, as a tensor dimension):
//
//   bucket[l]  = argmax([x R_r, -x R_r])                (first index on ties)
//   order, rank = stable counting sort of the positions by bucket
//                (runtime: attn_counting_sort, O(L) per row)
//   the sorted sequence is cut into chunks of C; chunk n's queries see the
//   2C sorted keys of chunks n - 1 and n (gathered through `order`), masked
//   to the same bucket, not the query itself and, when causal, not later
//   positions; softmax per row gives o_r and its log-sum-exp lse_r;
//   both are gathered back to sequence order through `rank`.
//
// Rounds combine as sum_r exp(lse_r - LSE) o_r, LSE = logsumexp_r lse_r. A
// query with no key in any round attends to itself: its output is its value
// row. Cost O(L (buckets D + C D)) per round plus the sort.
//
//===----------------------------------------------------------------------===//
#include "Decomposition.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/EinsumBuilder.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/RuntimeCall.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNDECOMPOSELSH
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

class LshDecomposition {
public:
  LshDecomposition(LshOp op)
      : op(op), b(op), eb(b, op.getLoc()), loc(op.getLoc()) {}

  FailureOr<Value> run();

private:
  Value buckets(Value projections);
  Value gatherRows(Value rows, Value order, int64_t width, int64_t offset);
  Value chunkPositions(Value order, int64_t width, int64_t offset);
  Value bucketsAt(Value bucket, Value positions);
  Value inSequenceOrder(Value chunked, Value rank);
  std::pair<Value, Value> sortedIndex(OpBuilder &nb, Location l,
                                      IndexFn indexOf, int64_t offset);

  Value index(OpBuilder &nb, Location l, Value i64) {
    return arith::IndexCastOp::create(nb, l, nb.getIndexType(), i64);
  }

  LshOp op;
  OpBuilder b;
  EinsumBuilder eb;
  Location loc;
  int64_t batch = 0, heads = 0, length = 0, rounds = 0, chunk = 0, chunks = 0;
};

/// bucket[b, h, r, l] (i64) = argmax over [p, -p] of the projections
/// p = proj[b, h, r, l, :], the first maximum on ties.
Value LshDecomposition::buckets(Value proj) {
  int64_t half = dimOf(proj, 4);
  Type i64 = b.getI64Type();
  return eb.map(
      "->bhrl", {},
      [&](OpBuilder &nb, Location l, ValueRange, IndexFn indexOf) {
        Value halfV = eb.index(half);
        // linalg.index must sit directly in the generic, not in the loop.
        Value batchIv = indexOf('b'), headIv = indexOf('h'),
              roundIv = indexOf('r'), rowIv = indexOf('l');
        Value init[] = {eb.f32(-INFINITY), arith::ConstantOp::create(
                                               nb, l, nb.getI64IntegerAttr(0))};
        auto loop = scf::ForOp::create(
            nb, l, eb.index(0), eb.index(2 * half), eb.index(1), init,
            [&](OpBuilder &fb, Location fl, Value n, ValueRange best) {
              Value negated = arith::CmpIOp::create(
                  fb, fl, arith::CmpIPredicate::uge, n, halfV);
              Value column = arith::SelectOp::create(
                  fb, fl, negated, arith::SubIOp::create(fb, fl, n, halfV), n);
              Value p = tensor::ExtractOp::create(
                  fb, fl, proj,
                  ValueRange{batchIv, headIv, roundIv, rowIv, column});
              Value x = arith::SelectOp::create(
                  fb, fl, negated, arith::NegFOp::create(fb, fl, p), p);
              Value better = arith::CmpFOp::create(
                  fb, fl, arith::CmpFPredicate::OGT, x, best[0]);
              Value nI64 = arith::IndexCastOp::create(fb, fl, i64, n);
              scf::YieldOp::create(
                  fb, fl,
                  ValueRange{
                      arith::SelectOp::create(fb, fl, better, x, best[0]),
                      arith::SelectOp::create(fb, fl, better, nI64, best[1])});
            });
        return loop.getResult(1);
      },
      {{'b', eb.index(batch)},
       {'h', eb.index(heads)},
       {'r', eb.index(rounds)},
       {'l', eb.index(length)}},
      "", i64);
}

/// For row w of chunk n, `offset` rows before the chunk's start: whether
/// its sorted index t = n C + w - offset lies in [0, L), and t clamped into
/// [0, L) so that the discarded loads of missing rows stay in bounds.
std::pair<Value, Value> LshDecomposition::sortedIndex(OpBuilder &nb, Location l,
                                                      IndexFn indexOf,
                                                      int64_t offset) {
  Value t = arith::AddIOp::create(
      nb, l, arith::MulIOp::create(nb, l, indexOf('n'), eb.index(chunk)),
      indexOf('w'));
  Value valid = arith::AndIOp::create(
      nb, l,
      arith::CmpIOp::create(nb, l, arith::CmpIPredicate::uge, t,
                            eb.index(offset)),
      arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, t,
                            eb.index(length + offset)));
  Value sorted = arith::MinUIOp::create(
      nb, l,
      arith::SubIOp::create(nb, l,
                            arith::MaxUIOp::create(nb, l, t, eb.index(offset)),
                            eb.index(offset)),
      eb.index(length - 1));
  return {valid, sorted};
}

/// x[b, h, r, n, w, :] = rows[b, h, order[b, h, r, t], :] for the sorted
/// index t = n C + w - offset when 0 <= t < L, else 0: chunk n's `width`
/// rows starting `offset` rows before it.
Value LshDecomposition::gatherRows(Value rows, Value order, int64_t width,
                                   int64_t offset) {
  int64_t d = dimOf(rows, 3);
  return eb.map(
      "->bhrnwd", {},
      [&](OpBuilder &nb, Location l, ValueRange, IndexFn indexOf) {
        auto [valid, sorted] = sortedIndex(nb, l, indexOf, offset);
        Value position = index(
            nb, l,
            tensor::ExtractOp::create(
                nb, l, order,
                ValueRange{indexOf('b'), indexOf('h'), indexOf('r'), sorted}));
        Value x = tensor::ExtractOp::create(
            nb, l, rows,
            ValueRange{indexOf('b'), indexOf('h'), position, indexOf('d')});
        return arith::SelectOp::create(nb, l, valid, x, eb.f32(0)).getResult();
      },
      {{'b', eb.index(batch)},
       {'h', eb.index(heads)},
       {'r', eb.index(rounds)},
       {'n', eb.index(chunks)},
       {'w', eb.index(width)},
       {'d', eb.index(d)}});
}

/// The sequence positions of gatherRows' rows (i64), -1 for missing rows.
Value LshDecomposition::chunkPositions(Value order, int64_t width,
                                       int64_t offset) {
  return eb.map(
      "->bhrnw", {},
      [&](OpBuilder &nb, Location l, ValueRange, IndexFn indexOf) {
        auto [valid, sorted] = sortedIndex(nb, l, indexOf, offset);
        Value position = tensor::ExtractOp::create(
            nb, l, order,
            ValueRange{indexOf('b'), indexOf('h'), indexOf('r'), sorted});
        Value missing =
            arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(-1));
        return arith::SelectOp::create(nb, l, valid, position, missing)
            .getResult();
      },
      {{'b', eb.index(batch)},
       {'h', eb.index(heads)},
       {'r', eb.index(rounds)},
       {'n', eb.index(chunks)},
       {'w', eb.index(width)}},
      "", b.getI64Type());
}

/// bucket[b, h, r, positions[...]] (i64), -1 where the position is -1.
Value LshDecomposition::bucketsAt(Value bucket, Value positions) {
  return eb.map(
      "bhrnw->bhrnw", positions,
      [&](OpBuilder &nb, Location l, ValueRange a, IndexFn indexOf) {
        Value zero = arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(0));
        Value valid =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, a[0], zero);
        Value position =
            index(nb, l, arith::MaxSIOp::create(nb, l, a[0], zero));
        Value id = tensor::ExtractOp::create(
            nb, l, bucket,
            ValueRange{indexOf('b'), indexOf('h'), indexOf('r'), position});
        return arith::SelectOp::create(nb, l, valid, id, a[0]).getResult();
      },
      {}, "", b.getI64Type());
}

/// Chunked per-round values [b, h, r, n, i(, d)] back in sequence order
/// [b, h, r, p(, d)]: sorted index rank[b, h, r, p] = n C + i.
Value LshDecomposition::inSequenceOrder(Value chunked, Value rank) {
  bool rows = cast<RankedTensorType>(chunked.getType()).getRank() == 6;
  SmallVector<std::pair<char, Value>> sizes;
  if (rows)
    sizes.push_back({'d', eb.index(dimOf(chunked, 5))});
  return eb.map(
      rows ? "bhrp->bhrpd" : "bhrp->bhrp", rank,
      [&](OpBuilder &nb, Location l, ValueRange a, IndexFn indexOf) {
        Value sorted = index(nb, l, a[0]);
        SmallVector<Value> at = {
            indexOf('b'), indexOf('h'), indexOf('r'),
            arith::DivUIOp::create(nb, l, sorted, eb.index(chunk)),
            arith::RemUIOp::create(nb, l, sorted, eb.index(chunk))};
        if (rows)
          at.push_back(indexOf('d'));
        return tensor::ExtractOp::create(nb, l, chunked, at).getResult();
      },
      sizes);
}

FailureOr<Value> LshDecomposition::run() {
  if (failed(checkDecomposable(op, "attn-decompose-lsh")))
    return failure();
  Value qk = op.getQueryKey(), v = op.getValue();
  batch = dimOf(qk, 0);
  heads = dimOf(qk, 1);
  length = dimOf(qk, 2);
  rounds = op.getRounds();
  chunk = op.getChunk();
  chunks = (length + chunk - 1) / chunk;
  int64_t d = dimOf(qk, 3);
  if (length == 0) {
    return v; // an empty result
  }
  double scale = op.getScale() ? double(op.getScale()->convertToFloat())
                               : 1.0 / std::sqrt(double(d));
  Type i64 = b.getI64Type();
  auto div = [&](OpBuilder &nb, Location l, Value x, Value y) -> Value {
    return arith::DivFOp::create(nb, l, x, y);
  };

  // Keys: the rows of qk at unit length (a zero row stays zero).
  Value norm2 = eb.contract("bhld,bhld->bhl", {qk, qk});
  Value keys =
      eb.map("bhld,bhl->bhld", {qk, norm2},
             [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
               Value zero = arith::CmpFOp::create(
                   nb, l, arith::CmpFPredicate::OEQ, a[1], eb.f32(0));
               Value unit = div(nb, l, a[0], math::SqrtOp::create(nb, l, a[1]));
               return arith::SelectOp::create(nb, l, zero, eb.f32(0), unit)
                   .getResult();
             });
  Value queries = eb.map(
      "bhld->bhld", qk, [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
        return arith::MulFOp::create(nb, l, a[0], eb.f32(scale)).getResult();
      });

  // Hashing and the sort.
  Value bucket = buckets(
      eb.contract("bhld,rdn->bhrln", {qk, op.getRotations()}, "bhrlnd"));
  auto flatType = RankedTensorType::get({batch * heads * rounds, length}, i64);
  SmallVector<ReassociationIndices> flatten = {{0, 1, 2}, {3}};
  Value flatBuckets =
      tensor::CollapseShapeOp::create(b, loc, flatType, bucket, flatten);
  SmallVector<Value> sorted = createRuntimeCall(
      b, loc, "attn_counting_sort", flatBuckets,
      {flatType, flatType,
       RankedTensorType::get({batch * heads * rounds, 0}, i64)});
  auto roundType = RankedTensorType::get({batch, heads, rounds, length}, i64);
  Value order =
      tensor::ExpandShapeOp::create(b, loc, roundType, sorted[0], flatten);
  Value rank =
      tensor::ExpandShapeOp::create(b, loc, roundType, sorted[1], flatten);

  // Chunked attention: queries n C + i, keys (n - 1) C + w.
  Value q = gatherRows(queries, order, chunk, 0);
  Value k = gatherRows(keys, order, 2 * chunk, chunk);
  Value vw = gatherRows(v, order, 2 * chunk, chunk);
  Value qPos = chunkPositions(order, chunk, 0);
  Value kPos = chunkPositions(order, 2 * chunk, chunk);
  Value qBucket = bucketsAt(bucket, qPos), kBucket = bucketsAt(bucket, kPos);
  bool causal = op.getCausal();
  Value scores = eb.map(
      "bhrniw,bhrni,bhrnw,bhrni,bhrnw->bhrniw",
      {eb.contract("bhrnid,bhrnwd->bhrniw", {q, k}), qPos, kPos, qBucket,
       kBucket},
      [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
        auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) -> Value {
          return arith::CmpIOp::create(nb, l, p, x, y);
        };
        Value zero = arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(0));
        Value keep = arith::AndIOp::create(
            nb, l, cmp(arith::CmpIPredicate::sge, a[2], zero),
            arith::AndIOp::create(nb, l,
                                  cmp(arith::CmpIPredicate::eq, a[3], a[4]),
                                  cmp(arith::CmpIPredicate::ne, a[1], a[2])));
        if (causal)
          keep = arith::AndIOp::create(
              nb, l, keep, cmp(arith::CmpIPredicate::sle, a[2], a[1]));
        return arith::SelectOp::create(nb, l, keep, a[0], eb.f32(-INFINITY))
            .getResult();
      });
  // Softmax with empty rows: shift by 0 when the row max is -inf.
  Value shift = eb.negInfToZero(
      "bhrni->bhrni", eb.reduce("bhrniw->bhrni", scores, Reduction::Max));
  Value e = eb.expDifference("bhrniw,bhrni->bhrniw", scores, shift);
  Value sum = eb.reduce("bhrniw->bhrni", e, Reduction::Sum);
  Value numerator = eb.contract("bhrniw,bhrnwd->bhrnid", {e, vw}, "bhrniwd");
  Value chunkOut = eb.divideOrZero("bhrnid,bhrni->bhrnid", numerator, sum);
  auto logSumExp = [&](OpBuilder &nb, Location l, Value s, Value m) -> Value {
    Value empty =
        arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, s, eb.f32(0));
    Value lse = arith::AddFOp::create(nb, l, m, math::LogOp::create(nb, l, s));
    return arith::SelectOp::create(nb, l, empty, eb.f32(-INFINITY), lse);
  };
  Value chunkLse =
      eb.map("bhrni,bhrni->bhrni", {sum, shift},
             [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
               return logSumExp(nb, l, a[0], a[1]);
             });

  // Rounds combined by their log-sum-exps.
  Value roundOut = inSequenceOrder(chunkOut, rank);
  Value roundLse = inSequenceOrder(chunkLse, rank);
  Value lseShift = eb.negInfToZero(
      "bhp->bhp", eb.reduce("bhrp->bhp", roundLse, Reduction::Max));
  Value weights = eb.expDifference("bhrp,bhp->bhrp", roundLse, lseShift);
  Value total = eb.reduce("bhrp->bhp", weights, Reduction::Sum);
  Value mixed = eb.contract("bhrp,bhrpd->bhpd", {weights, roundOut}, "bhprd");
  Value out = eb.map("bhpd,bhp,bhpd->bhpd", {mixed, total, v},
                     [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
                       // No key in any round: the query attends to itself
                       // alone.
                       Value alone = arith::CmpFOp::create(
                           nb, l, arith::CmpFPredicate::OEQ, a[1], eb.f32(0));
                       return arith::SelectOp::create(nb, l, alone, a[2],
                                                      div(nb, l, a[0], a[1]))
                           .getResult();
                     });
  return out;
}

struct AttnDecomposeLshPass
    : attn::impl::AttnDecomposeLshBase<AttnDecomposeLshPass> {
  void runOnOperation() override {
    if (failed(decomposeAll<LshOp>(getOperation(), decomposeLsh)))
      signalPassFailure();
  }
};

} // namespace

FailureOr<Value> mlir::attn::decomposeLsh(LshOp op) {
  return LshDecomposition(op).run();
}
