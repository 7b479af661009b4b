//===- Spec.cpp - attention specs in YAML ---------------------------------===//
#include "attn/Spec/Spec.h"
#include "YamlInput.h"
#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Runtime/InputLimits.h"
#include "attn/Spec/LayerSpec.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/YAMLTraits.h"

using namespace attnspec;
using llvm::yaml::IO;

void attnspec::mapOptionalSize(IO &io, const char *key, int64_t &field) {
  std::optional<int64_t> value;
  io.mapOptional(key, value);
  // 0 means "not given" in the struct; a 0 written in the spec is an error
  // that validation reports (< 1), not a silent default.
  if (value)
    field = *value == 0 ? -1 : *value;
}

std::string attnspec::checkSizeLimits(
    std::initializer_list<std::pair<const char *, int64_t>> sizes,
    std::initializer_list<std::initializer_list<int64_t>> tensors) {
  for (auto [name, size] : sizes)
    if (size > kMaxSpecSize)
      return llvm::formatv("{0} ({1}) must be at most 2^40", name, size);
  for (std::initializer_list<int64_t> shape : tensors)
    if (!attnrt::tensorBytes(shape.begin(), shape.size(), 4))
      return "the sizes make a tensor larger than 2^40 bytes (1 TiB)";
  return "";
}

namespace llvm::yaml {
template <> struct MappingTraits<AttentionShape> {
  static void mapping(IO &io, AttentionShape &a) {
    io.mapOptional("batch", a.batch);
    io.mapRequired("q_heads", a.queryHeads);
    mapOptionalSize(io, "kv_heads", a.keyHeads);
    io.mapRequired("q_len", a.queryLen);
    mapOptionalSize(io, "kv_len", a.keyLen);
    io.mapRequired("head_dim", a.headDim);
    mapOptionalSize(io, "value_dim", a.valueDim);
    // An operand of the kernel, not of a layer: not in mapVariant.
    io.mapOptional("key_bias", a.keyBias);
    io.mapOptional("backward", a.backward);
    mapVariant(io, a);
  }
  /// The keys that choose the attention variant rather than its sizes; a
  /// layer spec's `attention:` mapping takes these only.
  static void mapVariant(IO &io, AttentionShape &a) {
    io.mapOptional("pattern", a.pattern);
    io.mapOptional("align", a.align);
    io.mapOptional("scale", a.scale);
    io.mapOptional("mods", a.mods);
    io.mapOptional("kind", a.kind);
    io.mapOptional("rank", a.rank);
    io.mapOptional("per_head_projections", a.perHeadProjections);
    io.mapOptional("landmarks", a.landmarks);
    io.mapOptional("pinv_iterations", a.pinvIterations);
    io.mapOptional("feature_map", a.featureMap);
    io.mapOptional("features", a.features);
    io.mapOptional("causal", a.causal);
    io.mapOptional("buckets", a.buckets);
    io.mapOptional("rounds", a.rounds);
    io.mapOptional("chunk", a.chunk);
    io.mapOptional("clusters", a.clusters);
    io.mapOptional("top_k", a.topK);
  }
  /// Shape consistency; the message is reported at the mapping's location.
  static std::string validate(IO &, AttentionShape &a) {
    auto positive = [](int64_t v) { return v >= 1; };
    if (!positive(a.batch) || !positive(a.queryHeads) ||
        !positive(a.queryLen) || !positive(a.headDim))
      return "batch, q_heads, q_len and head_dim must be >= 1";
    if (a.keyHeads == 0)
      a.keyHeads = a.queryHeads;
    if (a.keyLen == 0)
      a.keyLen = a.queryLen;
    if (a.valueDim == 0)
      a.valueDim = a.headDim;
    if (a.keyHeads < 1 || a.keyLen < 1 || a.valueDim < 1)
      return "kv_heads, kv_len and value_dim must be >= 1";
    // Sizes are checked before anything is built or allocated from them.
    std::string limits =
        checkSizeLimits({{"batch", a.batch},
                         {"q_heads", a.queryHeads},
                         {"kv_heads", a.keyHeads},
                         {"q_len", a.queryLen},
                         {"kv_len", a.keyLen},
                         {"head_dim", a.headDim},
                         {"value_dim", a.valueDim}},
                        {{a.batch, a.queryHeads, a.queryLen, a.headDim},
                         {a.batch, a.queryHeads, a.queryLen, a.valueDim},
                         {a.batch, a.keyHeads, a.keyLen, a.headDim},
                         {a.batch, a.keyHeads, a.keyLen, a.valueDim}});
    if (!limits.empty())
      return limits;
    if (a.queryHeads > 65536)
      return "q_heads must be at most 65536";
    if (a.queryHeads % a.keyHeads != 0)
      return llvm::formatv("q_heads ({0}) must be a multiple of kv_heads "
                           "({1})",
                           a.queryHeads, a.keyHeads);
    if (a.align != "top_left" && a.align != "bottom_right")
      return "align must be top_left or bottom_right, got '" + a.align + "'";
    if (a.scale && (!std::isfinite(*a.scale) || *a.scale == 0))
      return "scale must be finite and non-zero";
    return validateKind(a);
  }
  /// The keys each kind takes.
  static std::string validateKind(const AttentionShape &a) {
    bool softmax = a.kind == "softmax", linformer = a.kind == "linformer",
         nystrom = a.kind == "nystrom", kernelized = a.kind == "kernelized",
         lsh = a.kind == "lsh", routing = a.kind == "routing";
    if (!softmax && !linformer && !nystrom && !kernelized && !lsh &&
        !routing)
      return "kind must be softmax, linformer, nystrom, kernelized, lsh or "
             "routing, got '" +
             a.kind + "'";
    if (!softmax && (!a.pattern.empty() || !a.mods.empty() ||
                     a.align != "top_left"))
      return "pattern, mods and align apply to kind softmax only";
    if (!softmax && a.keyBias)
      return "key_bias applies to kind softmax only";
    if (!softmax && a.backward)
      return "backward applies to kind softmax only (the other kinds have "
             "no backward yet)";
    if (linformer != (a.rank != 0) || (a.perHeadProjections && !linformer))
      return "rank (>= 1) is required by, and per_head_projections only "
             "taken by, kind linformer";
    if (linformer && a.rank < 1)
      return "rank must be >= 1";
    if (nystrom != (a.landmarks != 0))
      return "landmarks is required by, and only taken by, kind nystrom";
    if (nystrom && (a.landmarks < 1 || a.landmarks > a.queryLen ||
                    a.landmarks > a.keyLen))
      return "landmarks must be between 1 and the sequence lengths";
    if (a.pinvIterations < 1)
      return "pinv_iterations must be >= 1";
    if (kernelized != !a.featureMap.empty())
      return "feature_map is required by, and only taken by, kind kernelized";
    if (a.causal && !kernelized && !lsh && !routing)
      return "causal (a key) is taken by kinds kernelized, lsh and routing; "
             "kind softmax takes pattern: causal";
    bool random = a.featureMap == "favor" || a.featureMap == "rfa";
    if (kernelized && !random && a.featureMap != "elu_plus_one" &&
        a.featureMap != "relu")
      return "feature_map must be favor, rfa, elu_plus_one or relu, got '" +
             a.featureMap + "'";
    if (random != (a.features != 0) || a.features < 0)
      return "features (>= 1) is required by, and only taken by, "
             "feature_map favor and rfa";
    if (kernelized && a.scale)
      return "kind kernelized takes no scale";
    if (lsh != (a.buckets != 0) || lsh != (a.chunk != 0) ||
        (a.rounds != 1 && !lsh))
      return "buckets and chunk are required by, and rounds only taken by, "
             "kind lsh";
    if (lsh && (a.buckets < 2 || a.buckets % 2 != 0 || a.rounds < 1 ||
                a.chunk < 1))
      return "buckets must be even and >= 2, rounds and chunk >= 1";
    if (lsh && (a.keyHeads != a.queryHeads || a.keyLen != a.queryLen))
      return "kind lsh shares queries and keys: kv_heads and kv_len must "
             "equal q_heads and q_len";
    if (routing != (a.clusters != 0) || routing != (a.topK != 0))
      return "clusters and top_k are required by, and only taken by, kind "
             "routing";
    if (routing && (a.clusters < 1 || a.topK < 1 || a.topK > a.queryLen ||
                    a.topK > a.keyLen))
      return "clusters must be >= 1 and top_k between 1 and the sequence "
             "lengths";
    return "";
  }
};

template <> struct MappingTraits<Spec> {
  static void mapping(IO &io, Spec &s) {
    io.mapRequired("name", s.name);
    io.mapOptional("dtype", s.dtype);
    io.mapOptional("target", s.target);
    io.mapRequired("attention", s.attention);
  }
  static std::string validate(IO &, Spec &s) {
    if (s.name.empty() || !(llvm::isAlpha(s.name[0]) || s.name[0] == '_') ||
        !llvm::all_of(s.name,
                      [](char c) { return llvm::isAlnum(c) || c == '_'; }))
      return "name must be a C identifier, got '" + s.name + "'";
    if (s.dtype != "f32" && s.dtype != "f16" && s.dtype != "bf16")
      return "dtype must be f32, f16 or bf16, got '" + s.dtype + "'";
    static const char *const targets[] = {
        "cpu",  "vulkan",    "vulkan-lavapipe", "vulkan-generic",
        "cuda", "cuda-sm80", "cuda-sm90", "cuda-sm90a"};
    if (!llvm::is_contained(targets, s.target))
      return "target must be cpu, vulkan, vulkan-lavapipe, vulkan-generic, "
             "cuda, cuda-sm80, cuda-sm90 or cuda-sm90a, got '" +
             s.target + "'";
    return "";
  }
};
} // namespace llvm::yaml

std::string attnspec::validateAttentionKind(const AttentionShape &shape) {
  return llvm::yaml::MappingTraits<AttentionShape>::validateKind(shape);
}

void attnspec::mapAttentionVariant(llvm::yaml::IO &io, AttentionShape &shape) {
  llvm::yaml::MappingTraits<AttentionShape>::mapVariant(io, shape);
}

void attnspec::registerToolDialects(mlir::DialectRegistry &registry) {
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<mlir::attn::AttnDialect>();
}

bool attnspec::isSpecFile(llvm::StringRef path) {
  return path.ends_with(".yaml") || path.ends_with(".yml");
}

std::optional<Spec> attnspec::readSpec(llvm::SourceMgr &sourceMgr) {
  return readYamlDocument<Spec>(sourceMgr);
}

/// The attribute text of a pattern value: shorthands or attn syntax.
static std::string patternText(llvm::StringRef pattern) {
  if (pattern.empty() || pattern == "none")
    return "";
  if (pattern.starts_with("#"))
    return pattern.str();
  return "#attn." + pattern.str(); // e.g. causal
}

/// The location of `key:` in the spec text (the first occurrence at the start
/// of a line), or the start of the file.
static llvm::SMLoc keyLocation(const llvm::SourceMgr &sourceMgr,
                               llvm::StringRef key) {
  llvm::StringRef text =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer();
  size_t pos = 0;
  while ((pos = text.find(key, pos)) != llvm::StringRef::npos) {
    llvm::StringRef before = text.take_front(pos);
    llvm::StringRef line = before.substr(before.rfind('\n') + 1);
    if (line.trim().empty() && text.substr(pos + key.size()).starts_with(":"))
      return llvm::SMLoc::getFromPointer(text.data() + pos);
    pos += key.size();
  }
  return llvm::SMLoc::getFromPointer(text.data());
}

/// Parses attribute text, reporting errors at `key` of the spec.
static bool checkAttribute(llvm::StringRef text, llvm::StringRef key,
                           llvm::StringRef what, llvm::SourceMgr &sourceMgr,
                           mlir::MLIRContext *context) {
  if (text.empty())
    return true;
  // The text is spliced into generated IR: a comment would swallow what
  // follows it on the line (e.g. the ALiBi mod a layer appends).
  if (text.contains("//") || text.contains('\n')) {
    sourceMgr.PrintMessage(keyLocation(sourceMgr, key),
                           llvm::SourceMgr::DK_Error,
                           key + ": comments ('//') and line breaks are not "
                                 "allowed inside the value");
    return false;
  }
  std::string message;
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &diag) {
    message = diag.str();
    return mlir::success();
  });
  mlir::Attribute attr = mlir::parseAttribute(text, context);
  if (attr && what == "pattern" &&
      attr.getDialect().getNamespace() != "attn")
    message = "not an attn mask pattern";
  if (!attr || !message.empty()) {
    sourceMgr.PrintMessage(keyLocation(sourceMgr, key),
                           llvm::SourceMgr::DK_Error,
                           key + " '" + text + "': " + message);
    return false;
  }
  return true;
}

mlir::OwningOpRef<mlir::ModuleOp>
attnspec::buildModule(const Spec &spec, llvm::SourceMgr &sourceMgr,
                      mlir::MLIRContext *context,
                      std::vector<std::string> *argumentNames) {
  const AttentionShape &a = spec.attention;
  if (!checkAttribute(patternText(a.pattern), "pattern", "pattern",
                      sourceMgr, context) ||
      !checkAttribute(a.mods, "mods", "mods", sourceMgr, context))
    return nullptr;
  // Sizes may be dynamic (the Transformer runtime's lengths): "?".
  auto size = [](int64_t v) {
    return mlir::ShapedType::isDynamic(v) ? std::string("?")
                                          : std::to_string(v);
  };
  auto tensor = [&](int64_t heads, int64_t len, int64_t dim) {
    return llvm::formatv("tensor<{0}x{1}x{2}x{3}x{4}>", size(a.batch), heads,
                         size(len), dim, spec.dtype)
        .str();
  };
  std::string q = tensor(a.queryHeads, a.queryLen, a.headDim);
  std::string k = tensor(a.keyHeads, a.keyLen, a.headDim);
  std::string v = tensor(a.keyHeads, a.keyLen, a.valueDim);
  std::string o = tensor(a.queryHeads, a.queryLen, a.valueDim);
  // Operands beyond q, k, v follow from the attributes: the per-key bias
  // with key_bias, segment ids [B, L] (i32) when the pattern uses
  // #attn.segments, the relative-position table [Hq, columns] when a mod
  // reads one.
  std::string extraArgs, extraTypes, attrs;
  // A per-key bias [B, 1, 1, Lk] first (a padding mask, added to every
  // query's scores).
  if (a.keyBias) {
    std::string bias = llvm::formatv("tensor<{0}x1x1x{1}x{2}>", size(a.batch),
                                     size(a.keyLen), spec.dtype);
    extraArgs += ", %bias: " + bias;
    extraTypes += ", " + bias;
    attrs += " bias(%bias)";
  }
  std::string p = patternText(a.pattern);
  auto pattern = mlir::dyn_cast_or_null<mlir::attn::MaskAttrInterface>(
      p.empty() ? mlir::Attribute() : mlir::parseAttribute(p, context));
  if (pattern && pattern.usesSegments()) {
    std::string qIds = llvm::formatv("tensor<{0}x{1}xi32>", size(a.batch),
                                     size(a.queryLen));
    std::string kvIds = llvm::formatv("tensor<{0}x{1}xi32>", size(a.batch),
                                      size(a.keyLen));
    extraArgs += ", %q_segments: " + qIds + ", %kv_segments: " + kvIds;
    extraTypes += ", " + qIds + ", " + kvIds;
    attrs += " segments(%q_segments, %kv_segments)";
  }
  int64_t tableColumns = 0;
  if (auto mods = mlir::dyn_cast_or_null<mlir::ArrayAttr>(
          a.mods.empty() ? mlir::Attribute()
                         : mlir::parseAttribute(a.mods, context)))
    for (mlir::Attribute mod : mods)
      if (auto m = mlir::dyn_cast<mlir::attn::ScoreModAttrInterface>(mod))
        tableColumns = std::max(tableColumns, m.getTableColumns());
  if (tableColumns) {
    std::string table = llvm::formatv("tensor<{0}x{1}x{2}>", a.queryHeads,
                                      tableColumns, spec.dtype);
    extraArgs += ", %rel_table: " + table;
    extraTypes += ", " + table;
    attrs += " rel_table(%rel_table)";
  }
  if (!p.empty())
    attrs += " pattern(" + p + ")";
  if (a.scale)
    attrs += llvm::formatv(" scale = {0:e}", *a.scale).str();
  if (a.align == "bottom_right")
    attrs += " align = bottom_right";
  if (!a.mods.empty())
    attrs += " mods = " + a.mods;
  // The other kinds: their extra operands and attributes.
  std::string opName = "attn.attention";
  std::string operands = "%q, %k, %v";
  std::string args = "%q: " + q + ", %k: " + k + ", %v: " + v;
  std::string argTypes = q + ", " + k + ", " + v;
  if (a.kind == "linformer") {
    opName = "attn.linformer";
    std::string proj =
        a.perHeadProjections
            ? llvm::formatv("tensor<{0}x{1}x{2}x{3}>", a.keyHeads, a.rank,
                            a.keyLen, spec.dtype)
                  .str()
            : llvm::formatv("tensor<{0}x{1}x{2}>", a.rank, a.keyLen,
                            spec.dtype)
                  .str();
    extraArgs += ", %e_proj: " + proj + ", %f_proj: " + proj;
    extraTypes += ", " + proj + ", " + proj;
    operands += " proj(%e_proj, %f_proj)";
  } else if (a.kind == "nystrom") {
    opName = "attn.nystrom";
    operands += llvm::formatv(" landmarks = {0}", a.landmarks).str();
    if (a.pinvIterations != 6)
      attrs += llvm::formatv(" {{pinv_iterations = {0} : i64}",
                             a.pinvIterations)
                   .str();
  } else if (a.kind == "kernelized") {
    opName = "attn.kernelized";
    if (a.features) {
      std::string omega = llvm::formatv("tensor<{0}x{1}x{2}>", a.features,
                                        a.headDim, spec.dtype);
      extraArgs += ", %omega: " + omega;
      extraTypes += ", " + omega;
      operands += " omega(%omega)";
    }
    operands += " feature_map = " + a.featureMap;
    if (a.causal)
      operands += " causal";
  } else if (a.kind == "lsh") {
    // Shared queries and keys: the function takes %qk, %v, %rotations.
    opName = "attn.lsh";
    args = "%qk: " + q + ", %v: " + v;
    argTypes = q + ", " + v;
    std::string rotations = llvm::formatv("tensor<{0}x{1}x{2}x{3}>", a.rounds,
                                          a.headDim, a.buckets / 2, spec.dtype);
    extraArgs += ", %rotations: " + rotations;
    extraTypes += ", " + rotations;
    operands = llvm::formatv("%qk, %v rotations(%rotations) buckets = {0} "
                             "rounds = {1} chunk = {2}",
                             a.buckets, a.rounds, a.chunk)
                   .str();
    if (a.causal)
      operands += " causal";
  } else if (a.kind == "routing") {
    opName = "attn.routing";
    std::string centroids = llvm::formatv("tensor<{0}x{1}x{2}>", a.clusters,
                                          a.headDim, spec.dtype);
    extraArgs += ", %centroids: " + centroids;
    extraTypes += ", " + centroids;
    operands += llvm::formatv(" centroids(%centroids) top_k = {0}", a.topK)
                    .str();
    if (a.causal)
      operands += " causal";
  }
  if (argumentNames) {
    argumentNames->clear();
    std::string signature = args + extraArgs;
    llvm::SmallVector<llvm::StringRef> pieces;
    llvm::StringRef(signature).split(pieces, ',');
    for (llvm::StringRef piece : pieces)
      argumentNames->push_back(
          piece.trim().drop_front().split(':').first.str());
  }
  std::string text = llvm::formatv(
      "func.func @{0}({1}{4}) -> {3} {{\n"
      "  %o = {6} {7}{8}\n"
      "      : ({2}{5}) -> {3}\n"
      "  return %o : {3}\n}\n",
      spec.name, args, argTypes, o, extraArgs, extraTypes, opName, operands,
      attrs);
  if (a.backward) {
    // Training: the forward with each row's log-sum-exp, and the backward
    // of the same attention from it (docs/Dialect.md, "Backward").
    std::string lse = llvm::formatv("tensor<{0}x{1}x{2}xf32>", size(a.batch),
                                    a.queryHeads, size(a.queryLen));
    text += llvm::formatv("func.func @{0}_forward({1}{4}) -> ({3}, {6}) {{\n"
                          "  %o, %lse = attn.attention {7}{8}\n"
                          "      : ({2}{5}) -> ({3}, {6})\n"
                          "  return %o, %lse : {3}, {6}\n}\n",
                          spec.name, args, argTypes, o, extraArgs, extraTypes,
                          lse, operands, attrs);
    std::string grads = argTypes;
    text += llvm::formatv(
        "func.func @{0}_backward({1}{4}, %o: {3}, %do: {3}, %lse: {6}) -> "
        "({7}) {{\n"
        "  %dq, %dk, %dv = attn.attention_grad {8}, %o, %do, %lse{9}\n"
        "      : ({2}, {3}, {3}, {6}{5}) -> ({7})\n"
        "  return %dq, %dk, %dv : {7}\n}\n",
        spec.name, args, argTypes, o, extraArgs, extraTypes, lse, grads,
        operands, attrs);
  }
  // What remains are the op's own checks (e.g. a global index past kv_len):
  // report them at the attention mapping.
  mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &diag) {
    sourceMgr.PrintMessage(keyLocation(sourceMgr, "attention"),
                           llvm::SourceMgr::DK_Error, diag.str());
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, context);
  if (!module)
    return nullptr;
  // Later diagnostics (e.g. attn-compile --stats remarks) point at the
  // spec's attention mapping, not at the generated text.
  auto [line, column] =
      sourceMgr.getLineAndColumn(keyLocation(sourceMgr, "attention"));
  mlir::Location loc = mlir::FileLineColLoc::get(
      context,
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())
          ->getBufferIdentifier(),
      line, column);
  module->walk([&](mlir::Operation *op) { op->setLoc(loc); });
  // The spec's target: the default of attn-compile --target and of
  // attn-run --device / --gpu-target.
  if (spec.target != "cpu")
    (*module)->setAttr(kTargetAttrName,
                       mlir::StringAttr::get(context, spec.target));
  return module;
}

/// The deepest bracket nesting attn's tools parse in .mlir input.
static constexpr unsigned kMaxIRNesting = 256;

mlir::OwningOpRef<mlir::ModuleOp>
attnspec::loadModule(llvm::StringRef path, llvm::SourceMgr &sourceMgr,
                     mlir::MLIRContext *context) {
  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> file =
      mlir::openInputFile(path, &message);
  if (!file) {
    llvm::errs() << "error: " << message << "\n";
    return nullptr;
  }
  bool empty = file->getBuffer().trim().empty();
  unsigned id = sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  if (empty) {
    sourceMgr.PrintMessage(
        llvm::SMLoc::getFromPointer(
            sourceMgr.getMemoryBuffer(id)->getBufferStart()),
        llvm::SourceMgr::DK_Error, "input is empty");
    return nullptr;
  }
  if (!isSpecFile(path)) {
    // MLIR's parser recurses once per nesting level of attributes and
    // regions: bound it (deeper is no real module).
    llvm::StringRef text = sourceMgr.getMemoryBuffer(id)->getBuffer();
    size_t deep = attnrt::findExcessNesting(
        {text.data(), text.size()}, kMaxIRNesting, attnrt::NestingSyntax::Json);
    if (deep != std::string_view::npos) {
      sourceMgr.PrintMessage(llvm::SMLoc::getFromPointer(text.data() + deep),
                             llvm::SourceMgr::DK_Error,
                             "nesting deeper than " +
                                 llvm::Twine(kMaxIRNesting) + " levels");
      return nullptr;
    }
    return mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, context);
  }
  if (isLayerSpec(sourceMgr)) {
    sourceMgr.PrintMessage(
        llvm::SMLoc::getFromPointer(
            sourceMgr.getMemoryBuffer(id)->getBufferStart()),
        llvm::SourceMgr::DK_Error,
        "this is a layer spec (it has 'layer:'); run it with attn-run "
        "--weights W.safetensors (docs/Transformer.md)");
    return nullptr;
  }
  std::optional<Spec> spec = readSpec(sourceMgr);
  if (!spec)
    return nullptr;
  return buildModule(*spec, sourceMgr, context);
}
