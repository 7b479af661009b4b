//===- LayerSpec.cpp - Transformer layer specs in YAML --------------------===//
#include "attn/Spec/LayerSpec.h"
#include "YamlInput.h"
#include "attn/Runtime/LayerStack.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/YAMLTraits.h"
#include <cmath>
#include <limits>

using namespace attnspec;
using llvm::yaml::IO;

namespace {
/// The `attention:` mapping of a layer: variant keys only.
struct VariantKeys {
  AttentionShape shape;
};
} // namespace

namespace llvm::yaml {
template <> struct MappingTraits<VariantKeys> {
  static void mapping(IO &io, VariantKeys &v) {
    mapAttentionVariant(io, v.shape);
  }
};

template <> struct MappingTraits<LayerShape> {
  static void mapping(IO &io, LayerShape &l) {
    io.mapOptional("type", l.type);
    io.mapRequired("d_model", l.dModel);
    io.mapRequired("heads", l.heads);
    mapOptionalSize(io, "kv_heads", l.kvHeads);
    mapOptionalSize(io, "head_dim", l.headDim);
    io.mapRequired("ffn_hidden", l.ffnHidden);
    io.mapOptional("activation", l.activation);
    io.mapOptional("norm", l.norm);
    io.mapOptional("norm_position", l.normPosition);
    io.mapOptional("norm_eps", l.normEps);
    io.mapOptional("bias", l.bias);
    io.mapOptional("dropout", l.dropout);
    io.mapOptional("layers", l.layers);
    io.mapOptional("shared_weights", l.sharedWeights);
    io.mapOptional("cross_attention", l.crossAttention);
    io.mapOptional("final_norm", l.finalNorm);
    io.mapOptional("positions", l.positions);
    io.mapOptional("max_positions", l.maxPositions);
    io.mapOptional("rope_base", l.ropeBase);
    io.mapOptional("rope_style", l.ropeStyle);
    io.mapOptional("alibi_max_bias", l.alibiMaxBias);
    io.mapOptional("relative_buckets", l.relativeBuckets);
    io.mapOptional("relative_max_distance", l.relativeMaxDistance);
    io.mapOptional("memory_length", l.memoryLength);
    VariantKeys variant{l.attention};
    io.mapOptional("attention", variant);
    l.attention = variant.shape;
  }

  static std::string validate(IO &, LayerShape &l) {
    // Defaults that depend on other keys, then the rules a layer artifact's
    // manifest obeys too (attnrt::checkLayerConfig), then the keys only a
    // spec has.
    if (l.kvHeads == 0)
      l.kvHeads = l.heads;
    if (l.headDim == 0 && l.heads >= 1) {
      if (l.dModel % l.heads != 0)
        return llvm::formatv("d_model ({0}) is not a multiple of heads ({1}): "
                             "give head_dim",
                             l.dModel, l.heads);
      l.headDim = l.dModel / l.heads;
    }
    if (std::string problem = attnrt::checkLayerConfig(layerConfigFields(l));
        !problem.empty())
      return problem;
    if (l.relativeBuckets > 65536 || l.relativeMaxDistance > 65536)
      return "relative_buckets and relative_max_distance must be at most "
             "65536";
    if (l.dropout < 0 || l.dropout >= 1)
      return "dropout must be in [0, 1) (it is ignored at inference)";
    if (!(l.alibiMaxBias > 0) || !std::isfinite(l.alibiMaxBias) ||
        l.relativeBuckets < 2 || l.relativeMaxDistance < 1)
      return "alibi_max_bias must be finite and > 0, relative_buckets >= 2 "
             "and relative_max_distance >= 1";
    return validateVariant(l);
  }

  static std::string validateVariant(LayerShape &l) {
    AttentionShape a = l.attention;
    if (a.align != "top_left")
      return "attention: align is set by the layer (bottom_right for "
             "decoder self-attention)";
    if (a.causal)
      return "attention: causal is set by the layer (type decoder)";
    // The kind's own keys; sizes are only known at run time, so they are
    // checked large here and again by the op's verifier per call.
    a.batch = 1;
    a.queryHeads = l.heads;
    a.keyHeads = l.kvHeads;
    a.queryLen = a.keyLen = std::numeric_limits<int32_t>::max();
    a.headDim = a.valueDim = l.headDim;
    std::string message = validateAttentionKind(a);
    return message.empty() ? "" : "attention: " + message;
  }
};

template <> struct MappingTraits<LayerSpec> {
  static void mapping(IO &io, LayerSpec &s) {
    io.mapRequired("name", s.name);
    io.mapOptional("dtype", s.dtype);
    io.mapRequired("layer", s.layer);
  }
  static std::string validate(IO &, LayerSpec &s) {
    if (s.dtype != "f32" && s.dtype != "bf16" && s.dtype != "f16")
      return "dtype must be f32, bf16 or f16, got '" + s.dtype + "'";
    return "";
  }
};
} // namespace llvm::yaml

attnrt::LayerConfig attnspec::layerConfigFields(const LayerShape &l) {
  attnrt::LayerConfig c;
  c.type = l.type;
  c.dModel = l.dModel;
  c.heads = l.heads;
  c.kvHeads = l.kvHeads;
  c.headDim = l.headDim;
  c.ffnHidden = l.ffnHidden;
  c.activation = l.activation;
  c.norm = l.norm;
  c.normPosition = l.normPosition;
  c.normEps = l.normEps;
  c.bias = l.bias;
  c.layers = l.layers;
  c.sharedWeights = l.sharedWeights;
  c.crossAttention = l.crossAttention;
  c.finalNorm = l.finalNorm;
  c.positions = l.positions;
  c.maxPositions = l.maxPositions;
  c.ropeBase = l.ropeBase;
  c.ropeStyle = l.ropeStyle;
  c.memoryLength = l.memoryLength;
  c.attentionKind = l.attention.kind;
  // lsh projects queries and keys with one weight (q_proj).
  c.sharesQueryKey = l.attention.kind == "lsh";
  return c;
}

bool attnspec::isLayerSpec(const llvm::SourceMgr &sourceMgr) {
  llvm::StringRef text =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer();
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  return llvm::any_of(lines, [](llvm::StringRef line) {
    return line.starts_with("layer:") || line.contains("\"layer\":");
  });
}

std::optional<LayerSpec> attnspec::readLayerSpec(llvm::SourceMgr &sourceMgr) {
  return readYamlDocument<LayerSpec>(sourceMgr);
}

/// `mods` (attribute list text or "") with `mod` appended.
static std::string appendMod(llvm::StringRef mods, llvm::StringRef mod) {
  llvm::StringRef inner = mods.trim();
  if (inner.consume_front("["))
    inner.consume_back("]");
  inner = inner.trim();
  return "[" + (inner.empty() ? "" : inner.str() + ", ") + mod.str() + "]";
}

Spec attnspec::attentionSpec(const LayerSpec &spec, AttentionRole role,
                             int64_t batch, int64_t queryLen, int64_t keyLen) {
  const LayerShape &l = spec.layer;
  Spec s;
  // A layer's activations are f32 whatever its dtype (which says how its
  // matrix weights are kept): its attention runs in f32.
  s.dtype = "f32";
  // Cross-attention is plain softmax attention over the encoder memory: the
  // variants that share queries and keys or need causality do not apply.
  bool self = role == AttentionRole::Self;
  s.name = self ? "self_attention" : "cross_attention";
  AttentionShape &a = s.attention;
  if (self)
    a = l.attention;
  a.batch = batch;
  a.queryHeads = l.heads;
  a.keyHeads = l.kvHeads;
  a.queryLen = queryLen;
  a.keyLen = keyLen;
  a.headDim = a.valueDim = l.headDim;
  if (!self)
    return s;
  if (l.isDecoder()) {
    if (a.kind == "softmax") {
      std::string pattern = a.pattern;
      if (!pattern.empty() && pattern != "none" && pattern != "causal")
        pattern = "#attn.and<[#attn.causal, " +
                  (pattern[0] == '#' ? pattern : "#attn." + pattern) + "]>";
      else
        pattern = "causal";
      a.pattern = pattern;
      a.align = "bottom_right";
    } else {
      a.causal = true;
    }
  }
  if (l.positions == "alibi")
    a.mods = appendMod(a.mods, llvm::formatv("#attn.alibi<max_bias = {0:e}>",
                                             l.alibiMaxBias)
                                   .str());
  if (l.positions == "relative")
    a.mods = appendMod(
        a.mods, llvm::formatv("#attn.t5_bias<buckets = {0}, max_distance = "
                              "{1}, bidirectional = {2}>",
                              l.relativeBuckets, l.relativeMaxDistance,
                              l.isDecoder() ? "false" : "true")
                    .str());
  return s;
}
