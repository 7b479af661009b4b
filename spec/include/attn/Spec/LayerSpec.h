//===- LayerSpec.h - Transformer layer specs in YAML ------------*- C++ -*-===//
//
// A layer spec (docs/Spec.md, "Layer specs") describes a stack of encoder or
// decoder layers: sizes, feed-forward, norms, positions and the attention
// variant, the last with the attention spec's own keys. It is read with
// LLVM's YAML I/O (JSON, a subset of YAML, reads too), so every error
// carries file:line:col.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_SPEC_LAYERSPEC_H
#define ATTN_SPEC_LAYERSPEC_H

#include "attn/Spec/Spec.h"
#include "llvm/Support/SourceMgr.h"
#include <optional>
#include <string>

namespace attnrt {
struct LayerConfig;
} // namespace attnrt

namespace attnspec {

struct LayerShape {
  std::string type = "encoder"; ///< encoder | decoder
  int64_t dModel = 0;
  int64_t heads = 0;
  int64_t kvHeads = 0; ///< 0: same as heads
  int64_t headDim = 0; ///< 0: d_model / heads
  int64_t ffnHidden = 0;
  std::string activation = "gelu";  ///< relu | gelu | gelu_tanh | swiglu
  std::string norm = "layernorm";   ///< layernorm | rmsnorm
  std::string normPosition = "post"; ///< pre | post
  double normEps = 1e-5;
  bool bias = true;         ///< linear and norm biases
  double dropout = 0;       ///< accepted and ignored (inference)
  int64_t layers = 1;
  bool sharedWeights = false; ///< one set of layer weights (Universal T.)
  bool crossAttention = true; ///< decoder: attend to the encoder memory
  bool finalNorm = false;     ///< a norm after the last layer
  /// none | sinusoidal | learned | rope | alibi | relative
  std::string positions = "none";
  int64_t maxPositions = 0;          ///< learned: rows of pos_embedding
  double ropeBase = 10000;
  std::string ropeStyle = "half";    ///< half (NeoX, Llama) | interleaved
  double alibiMaxBias = 8;
  int64_t relativeBuckets = 32;
  int64_t relativeMaxDistance = 128;
  /// Transformer-XL: keys and values of the last `memory_length` positions
  /// are kept across forward calls (0: the cache is cleared, except while
  /// decoding).
  int64_t memoryLength = 0;
  /// The variant, with the attention spec's keys; sizes come from the layer.
  AttentionShape attention;

  bool isDecoder() const { return type == "decoder"; }
  bool hasCrossAttention() const { return isDecoder() && crossAttention; }
};

struct LayerSpec {
  std::string name;
  std::string dtype = "f32";
  LayerShape layer;
};

/// `layer` as the executor and artifact manifests describe it
/// (attnrt::LayerConfig, LayerStack.h): sizes, kinds and positions, without
/// the spec's name and the variant's operands.
attnrt::LayerConfig layerConfigFields(const LayerShape &layer);

/// Whether the YAML in `sourceMgr`'s main buffer is a layer spec (has a
/// top-level `layer:` key) rather than an attention spec.
bool isLayerSpec(const llvm::SourceMgr &sourceMgr);

/// Reads and checks a layer spec; errors are printed as file:line:col.
std::optional<LayerSpec> readLayerSpec(llvm::SourceMgr &sourceMgr);

enum class AttentionRole { Self, Cross };

/// The attention spec of one attention block of `layer` for `queryLen`
/// queries against `keyLen` keys (either may be ShapedType::kDynamic for
/// kind softmax): sizes from the layer, the decoder's causality (bottom-right
/// aligned, so a query block continues a KV cache), ALiBi and relative
/// positions as score mods.
Spec attentionSpec(const LayerSpec &spec, AttentionRole role, int64_t batch,
                   int64_t queryLen, int64_t keyLen);

} // namespace attnspec

#endif // ATTN_SPEC_LAYERSPEC_H
