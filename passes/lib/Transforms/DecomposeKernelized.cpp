//===- DecomposeKernelized.cpp - attn.kernelized to linear-time linalg ----===//
//
// Feature-map attention O_i = phi(q_i) S / (phi(q_i) . z) in O(L m Dv):
//
//   non-causal:  S = phi(K)^T V [m, Dv] and z = sum_j phi(k_j) first, then
//                one contraction per query row;
//   causal:      the sequence is cut into chunks of C rows (padded with zero
//                features, which add nothing); chunk c adds its quadratic
//                intra-chunk term (j <= i inside the chunk) to phi(Q_c) S_c,
//                where S_c, z_c sum the chunks before it (an scf.for carries
//                them), so the cost is L (C (m + Dv) + 2 m Dv).
//
// FAVOR+ subtracts the row maximum of the exponent from query features and
// the (batch, head) maximum from key features: constant factors that cancel
// in the quotient but keep exp() in range. Key-side tensors of GQA are
// repeated to the query heads.
//
// Non-causal FAVOR+ is two softmax attentions instead (favorAsAttention):
// with x' = s x, s = D^(-1/4), and t_fj = w_f . k'_j - |k'_j|^2 / 2,
//
//   S_f = sum_j exp(t_fj) v_j = exp(lse_f) V'_f,  z_f = exp(lse_f)
//
// where (V'_f, lse_f) is softmax attention (scale s) of "query" w_f over
// the keys with the per-key bias -|k'_j|^2 / 2, and
//
//   O_i = sum_f exp(w_f . q'_i) S_f / sum_f exp(w_f . q'_i) z_f
//       = softmax_f(w_f . q'_i + lse_f) V'_f
//
// is softmax attention of q_i over m "keys" w_f with the per-key bias
// lse_f (the query's per-row factors exp(-|q'|^2 / 2 - max) / sqrt(m)
// cancel). Both run on the attention kernels, no [L, m] feature map is
// stored, and the online softmax replaces the maxima.
//
//===----------------------------------------------------------------------===//
#include "Decomposition.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/EinsumBuilder.h"
#include "attn/Transforms/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNDECOMPOSEKERNELIZED
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

using Reduction = EinsumBuilder::Reduction;
using IndexFn = EinsumBuilder::IndexFn;

/// Rows per chunk of the causal form: the intra-chunk term costs C per row,
/// the state update 2 m Dv / C per row.
constexpr int64_t kCausalChunk = 64;

class KernelizedDecomposition {
public:
  KernelizedDecomposition(KernelizedOp op)
      : op(op), b(op), eb(b, op.getLoc()), loc(op.getLoc()) {}

  FailureOr<Value> run();

private:
  Value features(Value x, bool isQuery);
  Value quotient(Value num, Value den);
  Value add(StringRef spec, Value x, Value y);
  Value nonCausal(Value phiQ, Value phiK, Value value);
  Value causal(Value phiQ, Value phiK, Value value);
  Value favorAsAttention();

  KernelizedOp op;
  OpBuilder b;
  EinsumBuilder eb;
  Location loc;
};

int64_t dimOf(Value v, unsigned d) {
  return cast<RankedTensorType>(v.getType()).getDimSize(d);
}

/// phi(x) for rows x of `x` [B, H, L, D]: [B, H, L, features].
Value KernelizedDecomposition::features(Value x, bool isQuery) {
  FeatureMap map = op.getFeatureMap();
  if (map == FeatureMap::relu)
    return eb.map(
        "bhld->bhld", x, [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
          return arith::MaximumFOp::create(nb, l, a[0], eb.f32(0)).getResult();
        });
  if (map == FeatureMap::elu_plus_one)
    return eb.map(
        "bhld->bhld", x, [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
          Value positive = arith::CmpFOp::create(
              nb, l, arith::CmpFPredicate::OGT, a[0], eb.f32(0));
          Value plusOne = arith::AddFOp::create(nb, l, a[0], eb.f32(1));
          Value exp = math::ExpOp::create(nb, l, a[0]);
          return arith::SelectOp::create(nb, l, positive, plusOne, exp)
              .getResult();
        });

  // Random features: W x' with x' = x D^(-1/4).
  Value omega = op.getOmega();
  int64_t m = dimOf(omega, 0);
  double s = std::pow(double(dimOf(x, 3)), -0.25);
  double norm = 1.0 / std::sqrt(double(m));
  Value proj = eb.contract("bhld,fd->bhlf", {x, omega}, "bhlfd");
  if (map == FeatureMap::favor) {
    // t = W x' - |x'|^2 / 2, then phi = exp(t - max) / sqrt(m).
    Value halfSquare = eb.map(
        "bhld->bhld", x, [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
          Value sq = arith::MulFOp::create(nb, l, a[0], a[0]);
          return arith::MulFOp::create(nb, l, sq, eb.f32(s * s / 2))
              .getResult();
        });
    Value sqNorm = eb.reduce("bhld->bhl", halfSquare, Reduction::Sum);
    Value t =
        eb.map("bhlf,bhl->bhlf", {proj, sqNorm},
               [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
                 Value scaled = arith::MulFOp::create(nb, l, a[0], eb.f32(s));
                 return arith::SubFOp::create(nb, l, scaled, a[1]).getResult();
               });
    StringRef maxSpec = isQuery ? "bhlf->bhl" : "bhlf->bh";
    StringRef applySpec = isQuery ? "bhlf,bhl->bhlf" : "bhlf,bh->bhlf";
    Value max = eb.reduce(maxSpec, t, Reduction::Max);
    return eb.map(
        applySpec, {t, max},
        [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
          Value shifted = arith::SubFOp::create(nb, l, a[0], a[1]);
          Value e = math::ExpOp::create(nb, l, shifted);
          return arith::MulFOp::create(nb, l, e, eb.f32(norm)).getResult();
        });
  }
  // RFA: [sin(W x'), cos(W x')] / sqrt(m), the sines first.
  auto trig = [&](bool cosine) {
    return eb.map(
        "bhlf->bhlf", proj,
        [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
          Value arg = arith::MulFOp::create(nb, l, a[0], eb.f32(s));
          Value y = cosine ? math::CosOp::create(nb, l, arg).getResult()
                           : math::SinOp::create(nb, l, arg).getResult();
          return arith::MulFOp::create(nb, l, y, eb.f32(norm)).getResult();
        });
  };
  auto projType = cast<RankedTensorType>(proj.getType());
  SmallVector<int64_t> shape(projType.getShape());
  shape[3] = 2 * m;
  Value both = tensor::EmptyOp::create(b, loc, shape, b.getF32Type());
  SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0)),
      sizes = tensor::getMixedSizes(b, loc, proj),
      strides(4, b.getIndexAttr(1));
  both = tensor::InsertSliceOp::create(b, loc, trig(false), both, offsets,
                                       sizes, strides);
  offsets[3] = b.getIndexAttr(m);
  return tensor::InsertSliceOp::create(b, loc, trig(true), both, offsets, sizes,
                                       strides);
}

/// num / den per row, 0 where den is 0.
Value KernelizedDecomposition::quotient(Value num, Value den) {
  return eb.map(
      "bhie,bhi->bhie", {num, den},
      [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
        Value zero = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                           a[1], eb.f32(0));
        Value q = arith::DivFOp::create(nb, l, a[0], a[1]);
        return arith::SelectOp::create(nb, l, zero, eb.f32(0), q).getResult();
      });
}

Value KernelizedDecomposition::add(StringRef letters, Value x, Value y) {
  std::string spec = (letters + "," + letters + "->" + letters).str();
  return eb.map(spec, {x, y},
                [](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
                  return arith::AddFOp::create(nb, l, a[0], a[1]).getResult();
                });
}

Value KernelizedDecomposition::nonCausal(Value phiQ, Value phiK, Value value) {
  int64_t heads = dimOf(phiQ, 1);
  Value state = eb.repeatHeads(
      eb.contract("bhjf,bhje->bhfe", {phiK, value}, "bhjfe"), heads);
  Value sum =
      eb.repeatHeads(eb.reduce("bhjf->bhf", phiK, Reduction::Sum), heads);
  Value num = eb.contract("bhif,bhfe->bhie", {phiQ, state}, "bhife");
  Value den = eb.contract("bhif,bhf->bhi", {phiQ, sum}, "bhif");
  return quotient(num, den);
}

Value KernelizedDecomposition::causal(Value phiQ, Value phiK, Value value) {
  int64_t batch = dimOf(phiQ, 0), heads = dimOf(phiQ, 1);
  int64_t lq = dimOf(phiQ, 2), lk = dimOf(phiK, 2), m = dimOf(phiQ, 3),
          dv = dimOf(value, 3);
  phiK = eb.repeatHeads(phiK, heads);
  value = eb.repeatHeads(value, heads);
  int64_t chunks = (std::max(lq, lk) + kCausalChunk - 1) / kCausalChunk;
  int64_t padded = chunks * kCausalChunk;
  Type f32 = b.getF32Type();

  // Zero-padded copies: zero key features add nothing; padded query rows
  // are cut off at the end.
  auto zeros = [&](ArrayRef<int64_t> shape) {
    Value empty = tensor::EmptyOp::create(b, loc, shape, f32);
    return linalg::FillOp::create(b, loc, eb.f32(0), empty).getResult(0);
  };
  auto offsetsAt = [&](OpFoldResult row) {
    return SmallVector<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0), row,
                                     b.getIndexAttr(0)};
  };
  SmallVector<OpFoldResult> unit(4, b.getIndexAttr(1));
  auto pad = [&](Value x) {
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[2] = padded;
    return tensor::InsertSliceOp::create(b, loc, x, zeros(shape),
                                         offsetsAt(b.getIndexAttr(0)),
                                         tensor::getMixedSizes(b, loc, x), unit)
        .getResult();
  };
  phiQ = pad(phiQ);
  phiK = pad(phiK);
  value = pad(value);

  Value state0 = zeros({batch, heads, m, dv});
  Value sum0 = zeros({batch, heads, m});
  Value out0 = zeros({batch, heads, padded, dv});
  auto loop = scf::ForOp::create(
      b, loc, eb.index(0), eb.index(padded), eb.index(kCausalChunk),
      ValueRange{state0, sum0, out0},
      [&](OpBuilder &nb, Location l, Value row, ValueRange iter) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        auto chunkOf = [&](Value x) {
          auto type = cast<RankedTensorType>(x.getType());
          SmallVector<int64_t> shape(type.getShape());
          shape[2] = kCausalChunk;
          SmallVector<OpFoldResult> sizes;
          for (int64_t s : shape)
            sizes.push_back(b.getIndexAttr(s));
          return tensor::ExtractSliceOp::create(
                     b, l, RankedTensorType::get(shape, f32), x, offsetsAt(row),
                     sizes, unit)
              .getResult();
        };
        Value q = chunkOf(phiQ), k = chunkOf(phiK), v = chunkOf(value);
        Value state = iter[0], sum = iter[1], out = iter[2];

        // Intra-chunk: scores phi(q_i) . phi(k_j) for j <= i.
        Value scores = eb.contract("bhif,bhjf->bhij", {q, k}, "bhijf");
        Value lower = eb.map(
            "bhij->bhij", scores,
            [&](OpBuilder &mb, Location ml, ValueRange a, IndexFn indexOf) {
              Value keep =
                  arith::CmpIOp::create(mb, ml, arith::CmpIPredicate::ule,
                                        indexOf('j'), indexOf('i'));
              return arith::SelectOp::create(mb, ml, keep, a[0], eb.f32(0))
                  .getResult();
            });
        Value num =
            add("bhie", eb.contract("bhij,bhje->bhie", {lower, v}, "bhije"),
                eb.contract("bhif,bhfe->bhie", {q, state}, "bhife"));
        Value den = add("bhi", eb.reduce("bhij->bhi", lower, Reduction::Sum),
                        eb.contract("bhif,bhf->bhi", {q, sum}, "bhif"));
        Value chunkOut = quotient(num, den);
        SmallVector<OpFoldResult> outSizes = {
            b.getIndexAttr(batch), b.getIndexAttr(heads),
            b.getIndexAttr(kCausalChunk), b.getIndexAttr(dv)};
        Value nextOut = tensor::InsertSliceOp::create(
            b, l, chunkOut, out, offsetsAt(row), outSizes, unit);

        // The state now covers this chunk too.
        Value nextState =
            add("bhfe", state, eb.contract("bhjf,bhje->bhfe", {k, v}, "bhjfe"));
        Value nextSum =
            add("bhf", sum, eb.reduce("bhjf->bhf", k, Reduction::Sum));
        scf::YieldOp::create(b, l, ValueRange{nextState, nextSum, nextOut});
      });
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(batch),
                                     b.getIndexAttr(heads), b.getIndexAttr(lq),
                                     b.getIndexAttr(dv)};
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({batch, heads, lq, dv}, f32),
      loop.getResult(2), offsetsAt(b.getIndexAttr(0)), sizes, unit);
}

/// Non-causal FAVOR+ as two attentions (see the file comment).
Value KernelizedDecomposition::favorAsAttention() {
  Value query = op.getQuery(), key = op.getKey(), value = op.getValue();
  Value omega = op.getOmega();
  int64_t batch = dimOf(query, 0), heads = dimOf(query, 1),
          kvHeads = dimOf(key, 1);
  int64_t d = dimOf(query, 3), m = dimOf(omega, 0);
  double s = std::pow(double(d), -0.25);
  Type f32 = b.getF32Type();
  FloatAttr scale = b.getF32FloatAttr(float(s));
  auto perKey = [&](Value x) {
    auto type = cast<RankedTensorType>(x.getType());
    auto shape = type.getShape();
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({shape[0], shape[1], 1, shape[2]}, f32),
        x, SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}});
  };

  // w_f for every (batch, kv head): the "queries" of the key side and the
  // "keys" of the query side.
  Value features =
      eb.map("fd->bhfd", omega,
             [](OpBuilder &, Location, ValueRange a, IndexFn) { return a[0]; },
             {{'b', eb.index(batch)}, {'h', eb.index(kvHeads)}});

  // Key side: s w_f . k_j - s^2 |k_j|^2 / 2, the second term a per-key bias.
  Value halfSquare =
      eb.map("bhl->bhl", eb.contract("bhld,bhld->bhl", {key, key}),
             [&](OpBuilder &nb, Location l, ValueRange a, IndexFn) {
               return arith::MulFOp::create(nb, l, a[0], eb.f32(-s * s / 2))
                   .getResult();
             });
  auto stateType =
      RankedTensorType::get({batch, kvHeads, m, dimOf(value, 3)}, f32);
  auto lseType = RankedTensorType::get({batch, kvHeads, m}, f32);
  auto state = AttentionOp::create(
      b, loc, stateType, lseType, features, key, value, Value(),
      perKey(halfSquare), Value(), Value(), Value(), MaskAttrInterface(), scale,
      AlignmentAttr(), ArrayAttr(), IntegerAttr(), IntegerAttr());

  // Query side: s q_i . w_f + lse_f, lse_f a per-key bias of each query
  // head's kv head.
  Value lse = perKey(eb.repeatHeads(state.getLse(), heads));
  return AttentionOp::create(b, loc, op.getResult().getType(), Type(), query,
                             features, state.getOutput(), Value(), lse, Value(),
                             Value(), Value(), MaskAttrInterface(), scale,
                             AlignmentAttr(), ArrayAttr(), IntegerAttr(),
                             IntegerAttr())
      .getOutput();
}

FailureOr<Value> KernelizedDecomposition::run() {
  if (failed(checkDecomposable(op, "attn-decompose-kernelized")))
    return failure();
  if (op.getFeatureMap() == FeatureMap::favor && !op.getCausal()) {
    Value out = favorAsAttention();
    return out;
  }
  Value phiQ = features(op.getQuery(), /*isQuery=*/true);
  Value phiK = features(op.getKey(), /*isQuery=*/false);
  Value out = op.getCausal() ? causal(phiQ, phiK, op.getValue())
                             : nonCausal(phiQ, phiK, op.getValue());
  return out;
}

struct AttnDecomposeKernelizedPass
    : attn::impl::AttnDecomposeKernelizedBase<AttnDecomposeKernelizedPass> {
  void runOnOperation() override {
    if (failed(decomposeAll<KernelizedOp>(getOperation(), decomposeKernelized)))
      signalPassFailure();
  }
};

} // namespace

FailureOr<Value> mlir::attn::decomposeKernelized(KernelizedOp op) {
  return KernelizedDecomposition(op).run();
}
