//===- Weights.cpp - the tensors of a layer stack -------------------------===//
#include "Weights.h"
#include "attn/Compiler/Transformer.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Runtime/LayerStack.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace attnrt;
using attnspec::LayerSpec;

std::string attnrt::layerPrefix(const LayerSpec &spec, int64_t index) {
  LayerConfig config;
  config.sharedWeights = spec.layer.sharedWeights;
  return layerPrefix(config, index); // one naming rule (LayerStack.h)
}

bool attnrt::sharesQueryKey(const LayerSpec &spec) {
  return attnspec::layerConfigFields(spec.layer).sharesQueryKey;
}

WeightList attnrt::variantOperands(const LayerSpec &spec, int64_t length) {
  const attnspec::LayerShape &l = spec.layer;
  const attnspec::AttentionShape &a = l.attention;
  WeightList list;
  if (a.kind == "linformer") {
    std::vector<int64_t> shape = {a.rank, length};
    if (a.perHeadProjections)
      shape.insert(shape.begin(), l.kvHeads);
    list.push_back({"e_proj", shape});
    list.push_back({"f_proj", shape});
  } else if (a.kind == "kernelized" && a.features) {
    list.push_back({"omega", {a.features, l.headDim}});
  } else if (a.kind == "lsh") {
    list.push_back({"rotations", {a.rounds, l.headDim, a.buckets / 2}});
  } else if (a.kind == "routing") {
    list.push_back({"centroids", {a.clusters, l.headDim}});
  }
  if (l.positions == "relative")
    list.push_back({"rel_table", {l.heads, l.relativeBuckets}});
  return list;
}

std::vector<std::pair<std::string, std::vector<int64_t>>>
attnrt::expectedWeights(const LayerSpec &spec, int64_t length) {
  const attnspec::LayerShape &l = spec.layer;
  int64_t d = l.dModel, q = l.heads * l.headDim, kv = l.kvHeads * l.headDim;
  bool layerNormBias = l.norm == "layernorm" && l.bias;
  WeightList list;
  auto linear = [&](const std::string &name, int64_t out, int64_t in) {
    list.push_back({name + ".weight", {out, in}});
    if (l.bias)
      list.push_back({name + ".bias", {out}});
  };
  auto norm = [&](const std::string &name) {
    list.push_back({name + ".weight", {d}});
    if (layerNormBias)
      list.push_back({name + ".bias", {d}});
  };
  if (l.positions == "learned")
    list.push_back({"pos_embedding", {l.maxPositions, d}});
  int64_t distinct = l.sharedWeights ? 1 : l.layers;
  for (int64_t i = 0; i < distinct; ++i) {
    std::string p = layerPrefix(spec, i);
    linear(p + "self_attn.q_proj", q, d);
    if (!sharesQueryKey(spec))
      linear(p + "self_attn.k_proj", kv, d);
    linear(p + "self_attn.v_proj", kv, d);
    linear(p + "self_attn.o_proj", d, q);
    for (auto &[name, shape] : variantOperands(spec, length))
      list.push_back({p + "self_attn." + name, shape});
    norm(p + "norm1");
    norm(p + "norm2");
    if (l.hasCrossAttention()) {
      linear(p + "cross_attn.q_proj", q, d);
      linear(p + "cross_attn.k_proj", kv, d);
      linear(p + "cross_attn.v_proj", kv, d);
      linear(p + "cross_attn.o_proj", d, q);
      norm(p + "norm3");
    }
    linear(p + "linear1", l.ffnHidden, d);
    if (l.activation == "swiglu")
      linear(p + "linear_gate", l.ffnHidden, d);
    linear(p + "linear2", d, l.ffnHidden);
  }
  if (l.finalNorm)
    norm("final_norm");
  return list;
}

double attnrt::layerStackFlops(const LayerSpec &spec, int64_t batch,
                               int64_t length, int64_t keyLength,
                               int64_t memoryLength) {
  const attnspec::LayerShape &l = spec.layer;
  double rows = double(batch) * length, d = l.dModel;
  double q = l.heads * l.headDim, kv = l.kvHeads * l.headDim;
  double self = 2 * rows * d * (2 * q + (sharesQueryKey(spec) ? 1 : 2) * kv);
  double scores = 4.0 * batch * l.heads * length * keyLength * l.headDim;
  self += l.isDecoder() ? scores / 2 : scores;
  double cross = 0;
  if (l.hasCrossAttention())
    cross = 2 * rows * d * 2 * q + 2.0 * batch * memoryLength * d * 2 * kv +
            4.0 * batch * l.heads * length * memoryLength * l.headDim;
  double ffn = 2 * rows * d * l.ffnHidden * (l.activation == "swiglu" ? 3 : 2);
  return l.layers * (self + cross + ffn);
}

LayerConfig attnrt::layerConfig(const LayerSpec &spec) {
  LayerConfig c = attnspec::layerConfigFields(spec.layer);
  c.name = spec.name;
  for (auto &[name, shape] : variantOperands(spec, 1))
    c.variantOperands.push_back(name);
  return c;
}

bool attnrt::attentionTakesAnyLength(const LayerSpec &spec,
                                     attnspec::AttentionRole role) {
  return role == attnspec::AttentionRole::Cross ||
         spec.layer.attention.kind == "softmax";
}

/// Whether `mods` (attribute list text) holds soft-capping only, the one
/// score modifier that is the same function for every head.
static bool onlyHeadIndependentMods(llvm::StringRef mods) {
  std::string rest = mods.str();
  for (size_t at; (at = rest.find("#attn.softcap<")) != std::string::npos;) {
    size_t end = rest.find('>', at);
    if (end == std::string::npos)
      return false;
    rest.erase(at, end + 1 - at);
  }
  return llvm::all_of(rest, [](char c) {
    return c == '[' || c == ']' || c == ',' || llvm::isSpace(c);
  });
}

std::optional<attnspec::Spec>
attnrt::oneKvHeadAttentionSpec(const LayerSpec &spec, int64_t batch,
                               int64_t queryLen, int64_t keyLen) {
  const attnspec::LayerShape &l = spec.layer;
  if (!l.isDecoder() || l.attention.kind != "softmax" ||
      !onlyHeadIndependentMods(l.attention.mods) || l.positions == "alibi")
    return std::nullopt;
  attnspec::Spec s = attnspec::attentionSpec(
      spec, attnspec::AttentionRole::Self, batch, queryLen, keyLen);
  s.name = "self_attention_one_kv_head";
  s.attention.queryHeads = l.heads / l.kvHeads;
  s.attention.keyHeads = 1;
  return s;
}

mlir::OwningOpRef<mlir::ModuleOp> attnrt::buildLayerAttention(
    attnspec::Spec attention, bool &bf16, llvm::SourceMgr &sourceMgr,
    mlir::MLIRContext *context, std::vector<std::string> &operands) {
  bf16 = bf16 && attention.attention.kind == "softmax";
  attention.dtype = bf16 ? "bf16" : "f32";
  operands.clear();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      attnspec::buildModule(attention, sourceMgr, context, &operands);
  if (!module || !bf16 || llvm::all_of(operands, [](const std::string &n) {
        return n == "q" || n == "k" || n == "v" || n == "qk";
      }))
    return module;
  bf16 = false;
  attention.dtype = "f32";
  operands.clear();
  return attnspec::buildModule(attention, sourceMgr, context, &operands);
}

bool attnrt::pageKeysAndValues(mlir::ModuleOp module,
                               std::vector<std::string> &operands,
                               int64_t poolPages, int64_t tablePages,
                               int64_t pageRows, int64_t batch) {
  using namespace mlir;
  auto functions = module.getOps<func::FuncOp>();
  if (functions.empty())
    return false;
  func::FuncOp fn = *functions.begin();
  auto position = [&](llvm::StringRef name) -> int64_t {
    auto it = llvm::find(operands, name);
    return it == operands.end() ? -1 : it - operands.begin();
  };
  int64_t kIndex = position("k"), vIndex = position("v");
  if (kIndex < 0 || vIndex < 0 || fn.getNumArguments() != operands.size())
    return false;
  // k and v [batch or ?, Hkv, ?, D], one type.
  auto keyType = dyn_cast<RankedTensorType>(fn.getArgument(kIndex).getType());
  if (!keyType || keyType.getRank() != 4 ||
      fn.getArgument(vIndex).getType() != keyType || keyType.isDynamicDim(1) ||
      keyType.isDynamicDim(3) || !keyType.isDynamicDim(2) ||
      (!keyType.isDynamicDim(0) && keyType.getDimSize(0) != batch))
    return false;
  MLIRContext *context = module.getContext();
  int64_t dyn = ShapedType::kDynamic, heads = keyType.getDimSize(1),
          dim = keyType.getDimSize(3);
  Type element = keyType.getElementType();
  auto sizeOr = [&](int64_t size) { return size < 0 ? dyn : size; };
  auto poolType =
      RankedTensorType::get({sizeOr(poolPages), heads, pageRows, dim}, element);
  auto rowsType = RankedTensorType::get({batch, heads, dyn, dim}, element);
  auto tableType = RankedTensorType::get({batch, sizeOr(tablePages)},
                                         IntegerType::get(context, 32));
  auto lengthType = RankedTensorType::get({1}, IntegerType::get(context, 32));
  Location loc = fn.getLoc();
  unsigned end = fn.getNumArguments();
  if (failed(fn.insertArguments({end, end}, {tableType, lengthType},
                                {DictionaryAttr(), DictionaryAttr()},
                                {loc, loc})))
    return false;
  Block &entry = fn.getBody().front();
  OpBuilder b(context);
  b.setInsertionPointToStart(&entry);
  Value table = entry.getArgument(end);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value length = arith::IndexCastOp::create(
      b, loc, b.getIndexType(),
      tensor::ExtractOp::create(b, loc, entry.getArgument(end + 1),
                                ValueRange{zero}));
  for (int64_t index : {kIndex, vIndex}) {
    BlockArgument arg = entry.getArgument(index);
    arg.setType(poolType);
    auto paged = attn::PagedKvOp::create(b, loc, rowsType, arg, table, length);
    Value rows = paged.getResult();
    if (rowsType != keyType) // a dynamic batch: the type the uses expect
      rows = tensor::CastOp::create(b, loc, keyType, rows);
    arg.replaceAllUsesExcept(rows, paged.getOperation());
  }
  fn.setFunctionType(FunctionType::get(context, entry.getArgumentTypes(),
                                       fn.getFunctionType().getResults()));
  operands[kIndex] = "k_pages";
  operands[vIndex] = "v_pages";
  operands.push_back("page_table");
  operands.push_back("kv_length");
  return true;
}
