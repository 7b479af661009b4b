//===- ScoreModCodegen.cpp - score mods as run-time arithmetic ------------===//
#include "attn/Transforms/ScoreModCodegen.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

bool mlir::attn::areScoreModsVectorizable(ArrayAttr mods, bool withGathers) {
  // Table-operand mods gather per element; the others are lane-wise math.
  return withGathers || !mods || llvm::none_of(mods, [](Attribute mod) {
    return isa<ShawBiasAttr, T5BiasAttr>(mod);
  });
}

bool mlir::attn::isScoreModCodegenSupported(ArrayAttr mods, int64_t numHeads,
                                            std::string &reason) {
  if (!mods || mods.empty())
    return true;
  if (ShapedType::isDynamic(numHeads)) {
    reason = "score mods need a static number of query heads";
    return false;
  }
  return true;
}

namespace {
/// Scalar f32 / index helpers.
/// Scalar f32 / index helpers; with `lanes` > 0 every value is a vector of
/// that many lanes (one logit per query of a kernel's register).
struct ModBuilder {
  OpBuilder &b;
  Location loc;
  int64_t lanes = 0;
  const ScoreModLanes &gathers;

  Type typeOf(Type element) {
    return lanes ? Type(VectorType::get({lanes}, element)) : element;
  }
  Value splat(Type element, Attribute value) {
    if (!lanes)
      return arith::ConstantOp::create(b, loc, cast<TypedAttr>(value));
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(VectorType::get({lanes}, element), value));
  }
  Value f32(double v) {
    return splat(b.getF32Type(), b.getF32FloatAttr(float(v)));
  }
  Value idx(int64_t v) { return splat(b.getIndexType(), b.getIndexAttr(v)); }
  /// A scalar spread over the lanes.
  Value lanesOf(Value scalar) {
    if (!lanes)
      return scalar;
    return vector::BroadcastOp::create(
        b, loc, VectorType::get({lanes}, scalar.getType()), scalar);
  }
  Value toF32(Value index) {
    Value i64 =
        arith::IndexCastOp::create(b, loc, typeOf(b.getI64Type()), index);
    return arith::SIToFPOp::create(b, loc, typeOf(b.getF32Type()), i64);
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  /// A constant f32 table looked up at `at` (index, or lanes of them).
  Value table(ArrayRef<float> values, Value at) {
    if (lanes)
      return gathers.constant(values, at);
    auto type = RankedTensorType::get({int64_t(values.size())},
                                      b.getF32Type());
    Value t = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, values));
    return tensor::ExtractOp::create(b, loc, t, ValueRange{at});
  }
  /// A per-head table entry (the head is one scalar), spread over lanes.
  Value headTable(ArrayRef<float> values, Value head) {
    auto type = RankedTensorType::get({int64_t(values.size())},
                                      b.getF32Type());
    Value t = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, values));
    return lanesOf(tensor::ExtractOp::create(b, loc, t, ValueRange{head}));
  }
  /// relTable[head, column], per lane when vectorized.
  Value relTable(Value tableTensor, Value head, Value column) {
    if (lanes)
      return gathers.relTable(head, column);
    // GPU kernels pass the table as a buffer.
    if (isa<MemRefType>(tableTensor.getType()))
      return memref::LoadOp::create(b, loc, tableTensor,
                                    ValueRange{head, column});
    return tensor::ExtractOp::create(b, loc, tableTensor,
                                     ValueRange{head, column});
  }
  /// Per-head parameter: the head's entry, or the only entry.
  Value perHead(ArrayRef<APFloat> values, Value head, int64_t numHeads) {
    SmallVector<float> table;
    for (int64_t h = 0; h < numHeads; ++h)
      table.push_back(
          values[values.size() == 1 ? 0 : h].convertToFloat());
    return headTable(table, head);
  }
};

double alibiSlope(double maxBias, int64_t head, int64_t numHeads) {
  int64_t n = 1;
  while (n * 2 <= numHeads)
    n *= 2;
  if (head < n)
    return std::pow(2.0, -maxBias * double(head + 1) / double(n));
  return std::pow(2.0, -maxBias * double(2 * (head - n) + 1) / double(2 * n));
}

/// T5's bucket of distance d >= 0 within one direction of nb buckets.
int64_t t5DirectionBucket(int64_t d, int64_t nb, int64_t maxDistance) {
  int64_t exact = nb / 2;
  if (d < exact)
    return d;
  int64_t large = exact + int64_t(std::floor(
                              std::log(double(d) / exact) /
                              std::log(double(maxDistance) / exact) *
                              double(nb - exact)));
  return std::min(large, nb - 1);
}
} // namespace

namespace {
/// The rel_table column mod `attr` reads at signed distance `distance`
/// (index, or lanes of them): Shaw's clamped distance, T5's bucket; null
/// for mods without a table.
Value relTableColumn(ModBuilder &m, Attribute attr, Value distance) {
  OpBuilder &b = m.b;
  Location loc = m.loc;
  if (auto a = dyn_cast<ShawBiasAttr>(attr)) {
    int64_t k = a.getMaxDistance();
    Value clamped = arith::MinSIOp::create(
        b, loc, arith::MaxSIOp::create(b, loc, distance, m.idx(-k)), m.idx(k));
    return arith::AddIOp::create(b, loc, clamped, m.idx(k));
  }
  auto a = dyn_cast<T5BiasAttr>(attr);
  if (!a)
    return Value();
  // Buckets of |r| in one direction from a table computed with the
  // documented formula; past max_distance the last bucket.
  int64_t buckets = a.getBuckets(), maxD = a.getMaxDistance();
  int64_t nb = a.getBidirectional() ? buckets / 2 : buckets;
  SmallVector<float> bucketOf;
  for (int64_t d = 0; d <= maxD; ++d)
    bucketOf.push_back(float(t5DirectionBucket(d, nb, maxD)));
  Value d;
  if (a.getBidirectional())
    d = arith::MaxSIOp::create(
        b, loc, distance, arith::SubIOp::create(b, loc, m.idx(0), distance));
  else // only the past counts: d = max(-r, 0)
    d = arith::MaxSIOp::create(
        b, loc, arith::SubIOp::create(b, loc, m.idx(0), distance), m.idx(0));
  d = arith::MinSIOp::create(b, loc, d, m.idx(maxD));
  Value bucketF = m.table(bucketOf, d);
  Value bucket = arith::IndexCastOp::create(
      b, loc, m.typeOf(b.getIndexType()),
      arith::FPToSIOp::create(b, loc, m.typeOf(b.getI64Type()), bucketF));
  if (!a.getBidirectional())
    return bucket;
  Value later = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                      distance, m.idx(0));
  return arith::AddIOp::create(
      b, loc, bucket,
      arith::SelectOp::create(b, loc, later, m.idx(nb), m.idx(0)));
}
} // namespace

Value mlir::attn::emitRelTableColumn(OpBuilder &b, Location loc,
                                     ArrayAttr mods, Value distance) {
  ModBuilder m{b, loc, 0, {}};
  for (Attribute attr : mods ? mods : ArrayAttr())
    if (Value column = relTableColumn(m, attr, distance))
      return column;
  return Value();
}

Value mlir::attn::emitSoftcap(OpBuilder &b, Location loc, ArrayAttr mods,
                              Value x) {
  if (!mods)
    return x;
  auto vectorType = dyn_cast<VectorType>(x.getType());
  ModBuilder m{b, loc, vectorType ? vectorType.getDimSize(0) : 0, {}};
  for (Attribute attr : mods)
    if (auto softcap = dyn_cast<SoftcapAttr>(attr)) {
      Value cap = m.f32(softcap.getCap().convertToDouble());
      x = m.mul(cap, math::TanhOp::create(b, loc, m.div(x, cap)));
    }
  return x;
}

Value mlir::attn::emitScoreMods(OpBuilder &b, Location loc, ArrayAttr mods,
                                Value x, Value distance, Value head,
                                Value relTable, int64_t numHeads,
                                const ScoreModLanes &lanes) {
  if (!mods)
    return x;
  auto vectorType = dyn_cast<VectorType>(distance.getType());
  ModBuilder m{b, loc, vectorType ? vectorType.getDimSize(0) : 0, lanes};
  Value r = m.toF32(distance);
  Value absR = math::AbsFOp::create(b, loc, r);
  for (Attribute attr : mods) {
    x = llvm::TypeSwitch<Attribute, Value>(attr)
            .Case([&](AlibiAttr a) {
              SmallVector<float> slopes;
              for (int64_t h = 0; h < numHeads; ++h)
                slopes.push_back(float(alibiSlope(
                    a.getMaxBias().convertToDouble(), h, numHeads)));
              Value slope = m.headTable(slopes, head);
              return arith::SubFOp::create(b, loc, x, m.mul(slope, absR));
            })
            .Case([&](SoftcapAttr) { return x; }) // emitSoftcap
            .Case<ShawBiasAttr, T5BiasAttr>([&](Attribute a) {
              return m.add(x, m.relTable(relTable, head,
                                         relTableColumn(m, a, distance)));
            })
            .Case([&](DistanceWeightAttr a) {
              double v = a.getThreshold().convertToDouble();
              Value weight = m.perHead(a.getWeights(), head, numHeads);
              Value rw = m.mul(weight, absR);
              Value denom = m.add(
                  m.f32(1.0),
                  math::ExpOp::create(b, loc,
                                      arith::SubFOp::create(b, loc, m.f32(v),
                                                            rw)));
              Value factor = m.div(m.f32(1.0 + std::exp(v)), denom);
              Value relu = arith::MaximumFOp::create(b, loc, x, m.f32(0.0));
              return m.mul(relu, factor);
            })
            .Case([&](AdaptiveSpanAttr a) {
              double ramp = a.getRamp().convertToDouble();
              Value span = m.perHead(a.getSpans(), head, numHeads);
              Value raw = m.div(
                  arith::SubFOp::create(b, loc, m.add(m.f32(ramp), span),
                                        absR),
                  m.f32(ramp));
              Value weight = arith::MinimumFOp::create(
                  b, loc, arith::MaximumFOp::create(b, loc, raw, m.f32(0.0)),
                  m.f32(1.0));
              // log(0) = -inf removes the key; the approximated log need not
              // reach -inf by itself.
              Value zero = arith::CmpFOp::create(
                  b, loc, arith::CmpFPredicate::OLE, weight, m.f32(0.0));
              Value logged = m.add(x, math::LogOp::create(b, loc, weight));
              return arith::SelectOp::create(b, loc, zero, m.f32(-INFINITY),
                                             logged);
            })
            .Default([&](Attribute) { return x; });
  }
  return x;
}
