//===- LayerConfig.cpp - a layer stack's description as text --------------===//
//
// Ahead-of-time layer artifacts carry their LayerConfig as "key=value"
// lines (the `_attn_layer_manifest` string, written by attn-compile). The
// reader is strict: a library built by another attn may not match.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/InputLimits.h"
#include "attn/Runtime/LayerStack.h"
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

using namespace attnrt;

namespace {
/// Every field, by key: how to print it and how to read it back.
struct Field {
  std::function<std::string(const LayerConfig &)> print;
  std::function<bool(const std::string &, LayerConfig &)> read;
};

bool readInt(const std::string &text, int64_t &into) {
  if (text.empty() || text.size() > 18)
    return false;
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno || *end)
    return false;
  into = value;
  return true;
}

bool readDouble(const std::string &text, double &into) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  into = std::strtod(text.c_str(), &end);
  return !errno && !*end;
}

std::string printDouble(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

Field intField(int64_t LayerConfig::*member) {
  return {[=](const LayerConfig &c) { return std::to_string(c.*member); },
          [=](const std::string &t, LayerConfig &c) {
            return readInt(t, c.*member);
          }};
}
Field doubleField(double LayerConfig::*member) {
  return {[=](const LayerConfig &c) { return printDouble(c.*member); },
          [=](const std::string &t, LayerConfig &c) {
            return readDouble(t, c.*member);
          }};
}
Field boolField(bool LayerConfig::*member) {
  return {[=](const LayerConfig &c) { return std::string(c.*member ? "1" : "0"); },
          [=](const std::string &t, LayerConfig &c) {
            c.*member = t == "1";
            return t == "0" || t == "1";
          }};
}
Field stringField(std::string LayerConfig::*member) {
  return {[=](const LayerConfig &c) { return c.*member; },
          [=](const std::string &t, LayerConfig &c) {
            c.*member = t;
            return true;
          }};
}

const std::map<std::string, Field> &fields() {
  static const std::map<std::string, Field> all = {
      {"name", stringField(&LayerConfig::name)},
      {"type", stringField(&LayerConfig::type)},
      {"d_model", intField(&LayerConfig::dModel)},
      {"heads", intField(&LayerConfig::heads)},
      {"kv_heads", intField(&LayerConfig::kvHeads)},
      {"head_dim", intField(&LayerConfig::headDim)},
      {"ffn_hidden", intField(&LayerConfig::ffnHidden)},
      {"activation", stringField(&LayerConfig::activation)},
      {"norm", stringField(&LayerConfig::norm)},
      {"norm_position", stringField(&LayerConfig::normPosition)},
      {"norm_eps", doubleField(&LayerConfig::normEps)},
      {"bias", boolField(&LayerConfig::bias)},
      {"layers", intField(&LayerConfig::layers)},
      {"shared_weights", boolField(&LayerConfig::sharedWeights)},
      {"cross_attention", boolField(&LayerConfig::crossAttention)},
      {"final_norm", boolField(&LayerConfig::finalNorm)},
      {"positions", stringField(&LayerConfig::positions)},
      {"max_positions", intField(&LayerConfig::maxPositions)},
      {"rope_base", doubleField(&LayerConfig::ropeBase)},
      {"rope_style", stringField(&LayerConfig::ropeStyle)},
      {"memory_length", intField(&LayerConfig::memoryLength)},
      {"attention_kind", stringField(&LayerConfig::attentionKind)},
      {"shares_query_key", boolField(&LayerConfig::sharesQueryKey)},
      {"variant_operands",
       {[](const LayerConfig &c) {
          std::string list;
          for (const std::string &name : c.variantOperands)
            list += (list.empty() ? "" : ",") + name;
          return list;
        },
        [](const std::string &t, LayerConfig &c) {
          c.variantOperands.clear();
          std::stringstream names(t);
          for (std::string name; std::getline(names, name, ',');)
            if (!name.empty())
              c.variantOperands.push_back(name);
          return true;
        }}},
  };
  return all;
}

/// Whether `value` is one of `allowed`.
bool oneOf(const std::string &value,
           std::initializer_list<const char *> allowed) {
  for (const char *a : allowed)
    if (value == a)
      return true;
  return false;
}
} // namespace

std::string attnrt::serializeLayerConfig(const LayerConfig &config) {
  std::string text;
  for (const auto &[key, field] : fields())
    text += key + "=" + field.print(config) + "\n";
  return text;
}

Status attnrt::parseLayerConfig(const std::string &text, LayerConfig &config) {
  config = LayerConfig();
  std::stringstream lines(text);
  int64_t lineNumber = 0;
  for (std::string line; std::getline(lines, line);) {
    ++lineNumber;
    if (line.empty())
      continue;
    size_t eq = line.find('=');
    auto it = fields().find(line.substr(0, eq));
    std::string where = "layer manifest line " + std::to_string(lineNumber);
    if (eq == std::string::npos || it == fields().end())
      return Status::error(where + ": unknown entry '" + line + "'");
    if (!it->second.read(line.substr(eq + 1), config))
      return Status::error(where + ": malformed value for '" + it->first +
                           "'");
  }
  if (std::string problem = checkLayerConfig(config); !problem.empty())
    return Status::error("layer manifest: " + problem);
  return Status::ok();
}

std::string attnrt::checkLayerConfig(const LayerConfig &l) {
  if (!oneOf(l.type, {"encoder", "decoder"}))
    return "type must be encoder or decoder, got '" + l.type + "'";
  if (l.dModel < 1 || l.heads < 1 || l.ffnHidden < 1 || l.layers < 1)
    return "d_model, heads, ffn_hidden and layers must be >= 1";
  // Checked before weights are read or allocated: every weight must fit
  // in memory, and stacks deeper than 4096 layers are not models.
  if (l.layers > 4096)
    return "layers (" + std::to_string(l.layers) + ") must be at most 4096";
  if (l.heads > 65536)
    return "heads must be at most 65536";
  if (l.kvHeads < 1 || l.heads % l.kvHeads != 0)
    return "heads (" + std::to_string(l.heads) +
           ") must be a multiple of kv_heads (" + std::to_string(l.kvHeads) +
           ")";
  if (l.headDim < 1)
    return "head_dim must be >= 1";
  for (auto [name, size] :
       {std::pair<const char *, int64_t>{"d_model", l.dModel},
        {"head_dim", l.headDim},
        {"ffn_hidden", l.ffnHidden},
        {"max_positions", l.maxPositions},
        {"memory_length", l.memoryLength}})
    if (size > kMaxSize)
      return std::string(name) + " (" + std::to_string(size) +
             ") must be at most 2^40";
  // The largest weights: the feed-forward's, a projection, the learned
  // positions.
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{l.dModel, l.ffnHidden, 2},
        {l.heads, l.headDim, l.dModel},
        {std::max<int64_t>(l.maxPositions, 0), l.dModel}})
    if (!tensorBytes(shape.data(), shape.size(), sizeof(float)))
      return "the sizes make a tensor larger than 2^40 bytes (1 TiB)";
  if (!oneOf(l.activation, {"relu", "gelu", "gelu_tanh", "swiglu"}))
    return "activation must be relu, gelu, gelu_tanh or swiglu, got '" +
           l.activation + "'";
  if (!oneOf(l.norm, {"layernorm", "rmsnorm"}))
    return "norm must be layernorm or rmsnorm, got '" + l.norm + "'";
  if (!oneOf(l.normPosition, {"pre", "post"}))
    return "norm_position must be pre or post, got '" + l.normPosition + "'";
  // An infinite epsilon makes every norm's output zero: not a model.
  if (!(l.normEps > 0) || !std::isfinite(l.normEps))
    return "norm_eps must be finite and > 0";
  if (!oneOf(l.positions,
             {"none", "sinusoidal", "learned", "rope", "alibi", "relative"}))
    return "positions must be none, sinusoidal, learned, rope, alibi or "
           "relative, got '" +
           l.positions + "'";
  if ((l.positions == "learned") != (l.maxPositions != 0) || l.maxPositions < 0)
    return "max_positions (>= 1) is required by, and only taken by, "
           "positions: learned";
  if (l.positions == "rope" && l.headDim % 2 != 0)
    return "positions: rope needs an even head_dim";
  if (!oneOf(l.ropeStyle, {"half", "interleaved"}))
    return "rope_style must be half or interleaved";
  if (!(l.ropeBase > 0) || !std::isfinite(l.ropeBase))
    return "rope_base must be finite and > 0";
  if (l.memoryLength < 0)
    return "memory_length must be >= 0";
  if (l.memoryLength && !l.isDecoder())
    return "memory_length (Transformer-XL memory) needs type decoder: its "
           "queries attend causally to the kept keys";
  const std::string &kind = l.attentionKind;
  if (!oneOf(kind, {"softmax", "linformer", "nystrom", "kernelized", "lsh",
                    "routing"}))
    return "attention kind must be softmax, linformer, nystrom, kernelized, "
           "lsh or routing, got '" +
           kind + "'";
  if (kind != "softmax" &&
      (l.positions == "alibi" || l.positions == "relative"))
    return "positions " + l.positions +
           " are score mods and need attention kind softmax";
  if (l.isDecoder() && (kind == "linformer" || kind == "nystrom"))
    return "attention kind " + kind +
           " has no causal form; a decoder's self-attention is causal";
  if (l.isDecoder() && kind == "lsh")
    return "attention kind lsh shares queries and keys, which a KV cache "
           "does not; use it in an encoder";
  if (l.sharesQueryKey != (kind == "lsh"))
    return "shares_query_key is set for, and only for, attention kind lsh";
  return "";
}

std::string attnrt::shapeText(const std::vector<int64_t> &shape) {
  std::string text;
  for (int64_t s : shape)
    text += (text.empty() ? "" : ", ") + std::to_string(s);
  return "[" + text + "]";
}

std::string attnrt::layerPrefix(const LayerConfig &config, int64_t index) {
  return "layers." + std::to_string(config.sharedWeights ? 0 : index) + ".";
}
