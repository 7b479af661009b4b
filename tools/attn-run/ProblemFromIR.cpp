//===- ProblemFromIR.cpp - reference problems from attn ops ---------------===//
//
// A field-by-field copy of attribute parameters into the reference's plain
// data. No semantics live here: the meaning of each field is implemented
// once, in tooling/lib/Reference.cpp.
//
//===----------------------------------------------------------------------===//
#include "ProblemFromIR.h"
#include "ScoreRegionProgram.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using RefPattern = attnrt::reference::Pattern;
using RefMod = attnrt::reference::ScoreMod;

static std::vector<double> toDoubles(ArrayRef<APFloat> values) {
  std::vector<double> result;
  for (const APFloat &v : values)
    result.push_back(v.convertToDouble());
  return result;
}

static RefPattern patternFromAttr(MaskAttrInterface attr) {
  RefPattern p;
  using K = RefPattern::Kind;
  llvm::TypeSwitch<Attribute>(attr)
      .Case([&](CausalAttr) { p.kind = K::Causal; })
      .Case([&](WindowAttr a) {
        p.kind = K::Window;
        p.a = a.getLeft();
        p.b = a.getRight();
      })
      .Case([&](DilatedAttr a) {
        p.kind = K::Dilated;
        p.a = a.getLeft();
        p.b = a.getRight();
        p.c = a.getDilation();
      })
      .Case([&](StridedAttr a) {
        p.kind = K::Strided;
        p.a = a.getStride();
      })
      .Case([&](FixedAttr a) {
        p.kind = K::Fixed;
        p.a = a.getStride();
        p.b = a.getSummary();
      })
      .Case([&](GlobalAttr a) {
        p.kind = K::Global;
        p.indices.assign(a.getIndices().begin(), a.getIndices().end());
      })
      .Case([&](RandomBlocksAttr a) {
        p.kind = K::RandomBlocks;
        p.a = a.getBlock();
        p.b = a.getCount();
        p.c = a.getSeed();
      })
      .Case([&](BlockLayoutAttr a) {
        p.kind = K::BlockLayout;
        p.a = a.getBlock();
        ArrayRef<int64_t> dims = a.getLayout().getType().getShape();
        p.layoutHeads = dims[0];
        p.layoutRows = dims[1];
        p.layoutCols = dims[2];
        for (const APInt &v : a.getLayout().getValues<APInt>())
          p.layout.push_back(v.isZero() ? 0 : 1);
      })
      .Case([&](SegmentsAttr) { p.kind = K::Segments; })
      .Case<OrAttr, AndAttr>([&](Attribute a) {
        bool isOr = isa<OrAttr>(a);
        p.kind = isOr ? K::Or : K::And;
        ArrayAttr members =
            isOr ? cast<OrAttr>(a).getMembers() : cast<AndAttr>(a).getMembers();
        for (Attribute m : members)
          p.members.push_back(patternFromAttr(cast<MaskAttrInterface>(m)));
      });
  return p;
}

static RefMod modFromAttr(Attribute attr) {
  RefMod m;
  using K = RefMod::Kind;
  llvm::TypeSwitch<Attribute>(attr)
      .Case([&](AlibiAttr a) {
        m.kind = K::Alibi;
        m.x = a.getMaxBias().convertToDouble();
      })
      .Case([&](SoftcapAttr a) {
        m.kind = K::Softcap;
        m.x = a.getCap().convertToDouble();
      })
      .Case([&](ShawBiasAttr a) {
        m.kind = K::ShawBias;
        m.n = a.getMaxDistance();
      })
      .Case([&](T5BiasAttr a) {
        m.kind = K::T5Bias;
        m.n = a.getBuckets();
        m.m = a.getMaxDistance();
        m.flag = a.getBidirectional();
      })
      .Case([&](DistanceWeightAttr a) {
        m.kind = K::DistanceWeight;
        m.perHead = toDoubles(a.getWeights());
        m.x = a.getThreshold().convertToDouble();
      })
      .Case([&](AdaptiveSpanAttr a) {
        m.kind = K::AdaptiveSpan;
        m.perHead = toDoubles(a.getSpans());
        m.x = a.getRamp().convertToDouble();
      });
  return m;
}

FailureOr<attnrt::reference::AttentionProblem>
attnrt::problemFromAttention(AttentionOp op) {
  auto qType = cast<RankedTensorType>(op.getQuery().getType());
  auto kType = cast<RankedTensorType>(op.getKey().getType());
  auto vType = cast<RankedTensorType>(op.getValue().getType());
  if (!qType.hasStaticShape() || !kType.hasStaticShape() ||
      !vType.hasStaticShape())
    return op.emitOpError("--check needs static shapes");
  reference::AttentionProblem pb;
  if (!op.getScore().empty()) {
    FailureOr<reference::ScoreFunction> score = scoreFunctionOf(op.getScore());
    if (failed(score))
      return failure();
    pb.score = std::move(*score);
  }
  pb.batch = qType.getDimSize(0);
  pb.queryHeads = qType.getDimSize(1);
  pb.queryLen = qType.getDimSize(2);
  pb.headDim = qType.getDimSize(3);
  pb.keyHeads = kType.getDimSize(1);
  pb.keyLen = kType.getDimSize(2);
  pb.valueDim = vType.getDimSize(3);
  pb.scale = op.getScale() ? op.getScale()->convertToDouble()
                           : 1.0 / std::sqrt(double(pb.headDim));
  pb.bottomRight = op.getAlignment() == Alignment::bottom_right;
  if (IntegerAttr offset = op.getQueryOffsetAttr())
    pb.queryOffset = offset.getInt();
  if (IntegerAttr offset = op.getKeyOffsetAttr())
    pb.keyOffset = offset.getInt();
  if (MaskAttrInterface pattern = op.getPatternAttr())
    pb.pattern = patternFromAttr(pattern);
  if (std::optional<ArrayAttr> mods = op.getMods())
    for (Attribute mod : *mods)
      pb.mods.push_back(modFromAttr(mod));
  auto dim = [](Value v, int64_t d) {
    return cast<RankedTensorType>(v.getType()).getDimSize(d);
  };
  if (Value mask = op.getMask()) {
    pb.maskBatch = dim(mask, 0);
    pb.maskHeads = dim(mask, 1);
    pb.maskPerKey = dim(mask, 2) == 1 && dim(op.getQuery(), 2) != 1;
  }
  if (Value bias = op.getBias()) {
    pb.biasBatch = dim(bias, 0);
    pb.biasHeads = dim(bias, 1);
    pb.biasPerKey = dim(bias, 2) == 1 && dim(op.getQuery(), 2) != 1;
  }
  return pb;
}

attnrt::RoleList attnrt::attentionRoles(AttentionOp op) {
  RoleList roles = {{op.getQuery(), "q"},
                    {op.getKey(), "k"},
                    {op.getValue(), "v"},
                    {op.getMask(), "mask"},
                    {op.getBias(), "bias"},
                    {op.getQSegments(), "q_segments"},
                    {op.getKvSegments(), "kv_segments"},
                    {op.getRelTable(), "rel_table"}};
  // The score region's captured tensors that are not constants.
  for (auto [n, tensor] : llvm::enumerate(capturedFloatTensors(op.getScore())))
    if (!matchPattern(tensor, m_Constant()))
      roles.push_back({tensor, capturedRole(n)});
  return roles;
}

void attnrt::bindCapturedData(
    reference::AttentionProblem &pb,
    llvm::function_ref<const float *(llvm::StringRef)> dataOf) {
  if (!pb.score)
    return;
  for (size_t n = 0; n < pb.score->captured.size(); ++n)
    if (pb.score->constantData[n].empty())
      pb.score->captured[n] = dataOf(capturedRole(n));
}
