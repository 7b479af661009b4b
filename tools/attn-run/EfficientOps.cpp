//===- EfficientOps.cpp - checking the efficient-attention ops ------------===//
#include "EfficientOps.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Tooling/ReferenceEfficient.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;
namespace ref = attnrt::reference;

namespace {

int64_t dimOf(Value v, unsigned d) {
  return cast<RankedTensorType>(v.getType()).getDimSize(d);
}

/// Sizes of the Q/K/V operands; false when one is dynamic.
bool readSizes(Value q, Value k, Value v, ref::QkvProblem &p) {
  for (Value x : {q, k, v})
    if (!cast<RankedTensorType>(x.getType()).hasStaticShape())
      return false;
  p.batch = dimOf(q, 0);
  p.queryHeads = dimOf(q, 1);
  p.queryLen = dimOf(q, 2);
  p.headDim = dimOf(q, 3);
  p.keyHeads = dimOf(k, 1);
  p.keyLen = dimOf(k, 2);
  p.valueDim = dimOf(v, 3);
  return true;
}

double scaleOf(std::optional<APFloat> scale, int64_t headDim) {
  return scale ? scale->convertToDouble() : 1.0 / std::sqrt(double(headDim));
}

template <typename Problem>
void bindQkv(Problem &p, llvm::function_ref<const float *(StringRef)> buffer) {
  p.query = buffer("q");
  p.key = buffer("k");
  p.value = buffer("v");
}

std::optional<attnrt::EfficientOpCheck> describe(LinformerOp op) {
  ref::LinformerProblem p;
  if (!readSizes(op.getQuery(), op.getKey(), op.getValue(), p))
    return std::nullopt;
  auto eType = cast<RankedTensorType>(op.getEProj().getType());
  p.scale = scaleOf(op.getScale(), p.headDim);
  p.perHead = eType.getRank() == 3;
  p.rank = eType.getDimSize(eType.getRank() - 2);
  attnrt::EfficientOpCheck check;
  check.roles = {{op.getQuery(), "q"},
                 {op.getKey(), "k"},
                 {op.getValue(), "v"},
                 {op.getEProj(), "e_proj"},
                 {op.getFProj(), "f_proj"}};
  double dims = double(p.headDim + p.valueDim);
  check.flops = 2.0 * p.batch * p.rank * dims *
                double(p.keyHeads * p.keyLen + p.queryHeads * p.queryLen);
  check.reference = [p](auto buffer) mutable {
    bindQkv(p, buffer);
    p.e = buffer("e_proj");
    p.f = buffer("f_proj");
    return ref::linformer(p);
  };
  return check;
}

std::optional<attnrt::EfficientOpCheck> describe(NystromOp op) {
  ref::NystromProblem p;
  if (!readSizes(op.getQuery(), op.getKey(), op.getValue(), p))
    return std::nullopt;
  p.scale = scaleOf(op.getScale(), p.headDim);
  p.landmarks = op.getLandmarks();
  p.iterations = op.getPinvIterations();
  attnrt::EfficientOpCheck check;
  check.roles = {
      {op.getQuery(), "q"}, {op.getKey(), "k"}, {op.getValue(), "v"}};
  // Two L x m softmax products, the m x m kernel and 4 m^3 products per
  // pseudo-inverse step, per query head.
  double m = double(p.landmarks), dims = double(p.headDim + p.valueDim);
  check.flops = 2.0 * p.batch * p.queryHeads *
                (m * dims * double(p.queryLen + p.keyLen) + m * m * dims +
                 4.0 * m * m * m * double(p.iterations));
  check.reference = [p](auto buffer) mutable {
    bindQkv(p, buffer);
    return ref::nystrom(p);
  };
  return check;
}

std::optional<attnrt::EfficientOpCheck> describe(KernelizedOp op) {
  ref::KernelizedProblem p;
  if (!readSizes(op.getQuery(), op.getKey(), op.getValue(), p))
    return std::nullopt;
  using Map = ref::KernelizedProblem::FeatureMap;
  switch (op.getFeatureMap()) {
  case FeatureMap::favor:
    p.featureMap = Map::Favor;
    break;
  case FeatureMap::rfa:
    p.featureMap = Map::Rfa;
    break;
  case FeatureMap::elu_plus_one:
    p.featureMap = Map::EluPlusOne;
    break;
  case FeatureMap::relu:
    p.featureMap = Map::Relu;
    break;
  }
  p.causal = op.getCausal();
  attnrt::EfficientOpCheck check;
  check.roles = {
      {op.getQuery(), "q"}, {op.getKey(), "k"}, {op.getValue(), "v"}};
  double projections = 0, features = double(p.headDim);
  if (Value omega = op.getOmega()) {
    p.features = dimOf(omega, 0);
    check.roles.push_back({omega, "omega"});
    projections = 2.0 * double(p.features * p.headDim);
    features = double(p.featureMap == Map::Rfa ? 2 * p.features : p.features);
  }
  // Features of every row, the state phi(K)^T V, and one state product per
  // query (plus half a chunk of 64 keys per query when causal).
  double rows = double(p.queryHeads * p.queryLen + p.keyHeads * p.keyLen);
  double perQuery = 2.0 * features * double(p.valueDim + 1);
  if (p.causal)
    perQuery += 32.0 * 2.0 * (features + double(p.valueDim));
  check.flops = double(p.batch) *
                (rows * projections +
                 2.0 * features * double(p.valueDim) * p.keyHeads * p.keyLen +
                 perQuery * double(p.queryHeads * p.queryLen));
  check.reference = [p](auto buffer) mutable {
    bindQkv(p, buffer);
    p.omega = buffer("omega");
    return ref::kernelized(p);
  };
  return check;
}

std::optional<attnrt::EfficientOpCheck> describe(LshOp op) {
  ref::LshProblem p;
  if (!readSizes(op.getQueryKey(), op.getQueryKey(), op.getValue(), p))
    return std::nullopt;
  p.scale = scaleOf(op.getScale(), p.headDim);
  p.buckets = op.getBuckets();
  p.rounds = op.getRounds();
  p.chunk = op.getChunk();
  p.causal = op.getCausal();
  attnrt::EfficientOpCheck check;
  check.roles = {{op.getQueryKey(), "qk"},
                 {op.getValue(), "v"},
                 {op.getRotations(), "rotations"}};
  // Per round and query: the hash projections, and the scores and value
  // products over the 2 C keys of its chunk and the previous one.
  check.flops = 2.0 * double(p.batch * p.queryHeads * p.queryLen) *
                double(p.rounds) *
                (double(p.headDim * p.buckets / 2) +
                 2.0 * double(p.chunk * (p.headDim + p.valueDim)));
  check.reference = [p](auto buffer) mutable {
    p.query = buffer("qk");
    p.value = buffer("v");
    p.rotations = buffer("rotations");
    return ref::lsh(p);
  };
  return check;
}

std::optional<attnrt::EfficientOpCheck> describe(RoutingOp op) {
  ref::RoutingProblem p;
  if (!readSizes(op.getQuery(), op.getKey(), op.getValue(), p))
    return std::nullopt;
  p.scale = scaleOf(op.getScale(), p.headDim);
  p.clusters = dimOf(op.getCentroids(), 0);
  p.topK = op.getTopK();
  p.causal = op.getCausal();
  attnrt::EfficientOpCheck check;
  check.roles = {{op.getQuery(), "q"},
                 {op.getKey(), "k"},
                 {op.getValue(), "v"},
                 {op.getCentroids(), "centroids"}};
  // Routing scores of every row against every centroid, then a top_k x
  // top_k attention block per (query head, cluster).
  double c = double(p.clusters), k = double(p.topK);
  check.flops =
      double(p.batch) *
      (2.0 * c * double(p.headDim) *
           double(p.queryHeads * p.queryLen + p.keyHeads * p.keyLen) +
       2.0 * double(p.queryHeads) * c * k * k * double(p.headDim + p.valueDim));
  check.reference = [p](auto buffer) mutable {
    bindQkv(p, buffer);
    p.centroids = buffer("centroids");
    return ref::routing(p);
  };
  return check;
}

std::optional<attnrt::EfficientOpCheck> describe(FourierMixOp op) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  if (!type.hasStaticShape())
    return std::nullopt;
  ref::FourierMixProblem p;
  p.batch = type.getDimSize(0);
  p.length = type.getDimSize(1);
  p.hidden = type.getDimSize(2);
  attnrt::EfficientOpCheck check;
  check.roles = {{op.getInput(), "x"}};
  // The usual FFT count, 2.5 N log2 N for a real transform of N points.
  double points = double(p.length * p.hidden);
  check.flops = 2.5 * double(p.batch) * points * std::log2(points);
  check.reference = [p](auto buffer) mutable {
    p.input = buffer("x");
    return ref::fourierMix(p);
  };
  return check;
}

std::optional<attnrt::EfficientOpCheck> describe(RopeOp op) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  if (!type.hasStaticShape() || !type.getElementType().isF32())
    return std::nullopt;
  ref::RopeProblem p;
  p.batch = type.getDimSize(0);
  p.heads = type.getDimSize(1);
  p.length = type.getDimSize(2);
  p.dim = type.getDimSize(3);
  p.base = op.getBase().convertToDouble();
  p.interleaved = op.getStyle() == RopeStyle::interleaved;
  attnrt::EfficientOpCheck check;
  check.roles = {{op.getInput(), "x"}};
  unsigned positionBits = 0;
  int64_t positionCount = 0;
  if (Value positions = op.getPositions()) {
    auto positionType = cast<RankedTensorType>(positions.getType());
    positionBits = positionType.getElementTypeBitWidth();
    positionCount = positionType.getNumElements();
    if (positionBits != 32 && positionBits != 64)
      return std::nullopt;
    check.roles.push_back({positions, "positions"});
  }
  // Two multiplies and an add per element (the angles are O(L D / 2)).
  check.flops = 3.0 * double(type.getNumElements());
  check.reference = [p, positionBits, positionCount](auto buffer) mutable {
    p.input = buffer("x");
    // The positions buffer holds integers (the lookup is by role, typed as
    // floats): read it as the op's integer type.
    if (positionBits) {
      const void *raw = buffer("positions");
      p.positions.resize(positionCount);
      for (int64_t e = 0; e < positionCount; ++e)
        p.positions[e] = positionBits == 32
                             ? static_cast<const int32_t *>(raw)[e]
                             : static_cast<const int64_t *>(raw)[e];
    }
    return ref::rope(p);
  };
  return check;
}

} // namespace

std::optional<attnrt::EfficientOpCheck>
attnrt::describeEfficientOp(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<EfficientOpCheck>>(op)
      .Case([](LinformerOp o) { return describe(o); })
      .Case([](NystromOp o) { return describe(o); })
      .Case([](KernelizedOp o) { return describe(o); })
      .Case([](LshOp o) { return describe(o); })
      .Case([](RoutingOp o) { return describe(o); })
      .Case([](FourierMixOp o) { return describe(o); })
      .Case([](RopeOp o) { return describe(o); })
      .Default([](Operation *) { return std::nullopt; });
}
