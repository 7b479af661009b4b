//===- Spec.h - attention specs in YAML -------------------------*- C++ -*-===//
//
// The spec schema (docs/Spec.md): a named attention problem with its shapes,
// pattern, scale, alignment and score mods, read with LLVM's YAML I/O so
// that every error carries file:line:col.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_SPEC_SPEC_H
#define ATTN_SPEC_SPEC_H

#include "attn/Runtime/InputLimits.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SourceMgr.h"
#include <optional>
#include <string>
#include <vector>

namespace llvm::yaml {
class IO;
} // namespace llvm::yaml

namespace attnspec {

struct AttentionShape {
  int64_t batch = 1;
  int64_t queryHeads = 1;
  int64_t keyHeads = 0;  ///< 0: same as queryHeads
  int64_t queryLen = 0;  ///< required
  int64_t keyLen = 0;    ///< 0: same as queryLen
  int64_t headDim = 0;   ///< required
  int64_t valueDim = 0;  ///< 0: same as headDim
  std::string pattern;   ///< "", "causal", or attn attribute syntax
  std::string align = "top_left";
  std::optional<double> scale;
  std::string mods;      ///< attribute list syntax, "" for none
  /// softmax: a per-key bias operand [B, 1, 1, Lk] (padding masks).
  bool keyBias = false;
  /// softmax: also export <name>_forward (-> o, lse) and <name>_backward
  /// (-> dq, dk, dv) for training.
  bool backward = false;

  /// The op: softmax (attn.attention), linformer, nystrom, kernelized, lsh
  /// or routing.
  std::string kind = "softmax";
  int64_t rank = 0;                  ///< linformer: projected length k
  bool perHeadProjections = false;   ///< linformer: E, F per kv head
  int64_t landmarks = 0;             ///< nystrom
  int64_t pinvIterations = 6;        ///< nystrom
  std::string featureMap;            ///< kernelized: favor, rfa, elu_plus_one, relu
  int64_t features = 0;              ///< kernelized favor / rfa: rows of omega
  bool causal = false;               ///< kernelized, lsh, routing
  int64_t buckets = 0;               ///< lsh: hash buckets (even)
  int64_t rounds = 1;                ///< lsh: hash rounds
  int64_t chunk = 0;                 ///< lsh: rows per chunk
  int64_t clusters = 0;              ///< routing: rows of the centroids
  int64_t topK = 0;                  ///< routing: members per cluster
};

/// The module attribute naming a spec's non-CPU `target:` (a
/// TargetDescription name), read by attn-compile and attn-run.
inline constexpr llvm::StringLiteral kTargetAttrName = "attn.target";

struct Spec {
  std::string name;
  std::string dtype = "f32";
  std::string target = "cpu";
  AttentionShape attention;
};

/// Every upstream dialect and extension plus attn: what the attn tools
/// (attn-run, attn-compile, attn-bench) parse and lower.
void registerToolDialects(mlir::DialectRegistry &registry);

/// Whether `path` names a spec (by extension) rather than MLIR.
bool isSpecFile(llvm::StringRef path);

/// Reads and checks a spec; errors go to `sourceMgr`'s diagnostic handler as
/// file:line:col messages.
std::optional<Spec> readSpec(llvm::SourceMgr &sourceMgr);

/// The attn IR of `spec`: one public function @<name>(q, k, v, extra...)
/// -> o, extra operands (segment ids, tables, projections, random features)
/// as the attributes and kind need. Sizes equal to ShapedType::kDynamic
/// become `?`. `argumentNames`, when given, receives the function's argument
/// names (q, k, v, e_proj, omega, ...). Returns null after reporting errors
/// (a malformed pattern, an op check that fails) at the spec's
/// file:line:col.
mlir::OwningOpRef<mlir::ModuleOp>
buildModule(const Spec &spec, llvm::SourceMgr &sourceMgr,
            mlir::MLIRContext *context,
            std::vector<std::string> *argumentNames = nullptr);

/// The checks of the kind-specific keys (`kind:` and what it takes) against
/// the sizes in `shape`; "" when they pass, else the message.
std::string validateAttentionKind(const AttentionShape &shape);

/// The largest size (length, heads, dims, ...) a spec may give: 2^40.
constexpr int64_t kMaxSpecSize = attnrt::kMaxSize;

/// Maps an optional size key whose absence leaves `field` at 0 ("same as
/// ..."); an explicit 0 becomes -1 so that validation rejects it.
void mapOptionalSize(llvm::yaml::IO &io, const char *key, int64_t &field);

/// "" when every named size is at most kMaxSpecSize and every tensor shape
/// fits attnrt::kMaxTensorBytes as f32; else the message.
std::string
checkSizeLimits(std::initializer_list<std::pair<const char *, int64_t>> sizes,
                std::initializer_list<std::initializer_list<int64_t>> tensors);

/// Maps the keys that choose the variant (kind, pattern, mods, align, scale
/// and the kind's own keys) but no sizes: a layer spec's `attention:`.
void mapAttentionVariant(llvm::yaml::IO &io, AttentionShape &shape);

/// Reads `path` (a spec or attn IR; "-" is stdin) into a module. Errors,
/// an empty input included, are reported as file:line:col through
/// `sourceMgr` and give null.
mlir::OwningOpRef<mlir::ModuleOp> loadModule(llvm::StringRef path,
                                             llvm::SourceMgr &sourceMgr,
                                             mlir::MLIRContext *context);

} // namespace attnspec

#endif // ATTN_SPEC_SPEC_H
