//===- Weights.h - the tensors of a layer stack -----------------*- C++ -*-===//
//
// Names and shapes of every weight a layer spec needs (docs/Transformer.md,
// "Weights"), shared by the executor, the reference and the weight writer.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_TRANSFORMER_WEIGHTS_H
#define ATTN_RUNTIME_TRANSFORMER_WEIGHTS_H

#include "attn/Spec/LayerSpec.h"
#include <string>
#include <vector>

namespace attnrt {

using WeightList = std::vector<std::pair<std::string, std::vector<int64_t>>>;

/// The prefix of layer `index`'s tensors: "layers.<i>." (always
/// "layers.0." with shared weights).
std::string layerPrefix(const attnspec::LayerSpec &spec, int64_t index);

/// The attention variant's extra operands (argument name -> shape) for a
/// self-attention over `length` keys: e_proj / f_proj (linformer), omega
/// (kernelized favor, rfa), rotations (lsh), centroids (routing), rel_table
/// (relative positions).
WeightList variantOperands(const attnspec::LayerSpec &spec, int64_t length);

/// Whether the self-attention shares one projection for queries and keys
/// (kind lsh): then there is no k_proj.
bool sharesQueryKey(const attnspec::LayerSpec &spec);

} // namespace attnrt

#endif // ATTN_RUNTIME_TRANSFORMER_WEIGHTS_H
