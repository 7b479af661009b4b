//===- LayerConfig.cpp - a layer stack's description as text --------------===//
//
// Ahead-of-time layer artifacts carry their LayerConfig as "key=value"
// lines (the `_attn_layer_manifest` string, written by attn-compile). The
// reader is strict: a library built by another attn may not match.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/LayerStack.h"
#include <cerrno>
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
  // Sizes a stack cannot have would make the executor's buffers wrong.
  auto positive = [](int64_t v) { return v >= 1 && v <= (int64_t(1) << 20); };
  if (!positive(config.dModel) || !positive(config.heads) ||
      !positive(config.kvHeads) || !positive(config.headDim) ||
      !positive(config.ffnHidden) || !positive(config.layers) ||
      config.heads % config.kvHeads || config.maxPositions < 0 ||
      config.memoryLength < 0 || !(config.normEps >= 0))
    return Status::error("layer manifest: sizes out of range");
  if (!oneOf(config.type, {"encoder", "decoder"}) ||
      !oneOf(config.activation, {"relu", "gelu", "gelu_tanh", "swiglu"}) ||
      !oneOf(config.norm, {"layernorm", "rmsnorm"}) ||
      !oneOf(config.normPosition, {"pre", "post"}) ||
      !oneOf(config.positions, {"none", "sinusoidal", "learned", "rope",
                                "alibi", "relative"}) ||
      !oneOf(config.ropeStyle, {"half", "interleaved"}))
    return Status::error("layer manifest: unknown type, activation, norm or "
                         "positions");
  return Status::ok();
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
