//===- BlockKernels.cpp - compiled blocks of one attention ----------------===//
#include "attn/Compiler/BlockKernels.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/IR/MaskAlgebra.h"
#include "attn/Runtime/MemRefDescriptor.h"
#include "attn/Spec/Spec.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FormatVariadic.h"
#include <cmath>
#include <map>
#include <tuple>

using namespace attnrt;
using namespace mlir;
using namespace mlir::attn;

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

struct BlockKernel {
  std::unique_ptr<JitKernel> jit;
};

} // namespace

struct CompiledBlockAttention::Impl {
  MLIRContext context{MLIRContext::Threading::DISABLED};
  HostCompileOptions options;
  int64_t batch = 1, queryHeads = 1, keyHeads = 1, headDim = 1, valueDim = 1;
  int64_t tokens = 0;
  MaskAttrInterface pattern; // in `context`
  ArrayAttr mods;
  float scale = 1;
  const int64_t *querySegments = nullptr, *keySegments = nullptr;
  const float *relTable = nullptr;
  std::vector<int64_t> relTableShape;
  /// (query rows, key rows, query heads, key heads, masked, shift).
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, bool, int64_t>,
           BlockKernel>
      kernels;

  llvm::Expected<BlockKernel *> kernelFor(TokenChunk queries, TokenChunk keys,
                                          bool masked, int64_t heads,
                                          int64_t kvHeads);
};

CompiledBlockAttention::CompiledBlockAttention(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
CompiledBlockAttention::~CompiledBlockAttention() = default;

llvm::Expected<std::unique_ptr<CompiledBlockAttention>>
CompiledBlockAttention::create(AttentionOp op,
                               const HostCompileOptions &options,
                               const int64_t *querySegments,
                               const int64_t *keySegments,
                               const float *relTable) {
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  auto k = cast<RankedTensorType>(op.getKey().getType());
  auto v = cast<RankedTensorType>(op.getValue().getType());
  if (!q.hasStaticShape() || !k.hasStaticShape() || !v.hasStaticShape() ||
      !q.getElementType().isF32())
    return error("context-parallel attention needs static f32 operands");
  if (q.getDimSize(2) != k.getDimSize(2))
    return error(llvm::formatv(
        "context-parallel attention splits one sequence: queries ({0}) and "
        "keys ({1}) must have the same length",
        q.getDimSize(2), k.getDimSize(2)));
  if (op.getMask() || op.getBias() || !op.getScore().empty() ||
      op.getQueryOffsetAttr() || op.getKeyOffsetAttr() || op.getLse())
    return error("context-parallel attention takes no mask or bias operand, "
                 "score region, offsets or lse result (split a dense mask "
                 "per block yourself)");
  if (op.getPatternAttr() && !dependsOnDistanceOnly(op.getPatternAttr()))
    return error("context-parallel attention needs a pattern that depends on "
                 "j - i alone (causal, window, dilated, strided, segments and "
                 "their or/and)");
  auto impl = std::make_unique<Impl>();
  DialectRegistry registry;
  attnspec::registerToolDialects(registry);
  impl->context.appendDialectRegistry(registry);
  impl->context.loadAllAvailableDialects();
  impl->options = options;
  impl->batch = q.getDimSize(0);
  impl->queryHeads = q.getDimSize(1);
  impl->keyHeads = k.getDimSize(1);
  impl->headDim = q.getDimSize(3);
  impl->valueDim = v.getDimSize(3);
  impl->tokens = q.getDimSize(2);
  // Attributes move to the block kernels' context through their text.
  auto reparse = [&](Attribute attr) {
    std::string text;
    llvm::raw_string_ostream os(text);
    attr.print(os);
    return parseAttribute(text, &impl->context);
  };
  if (op.getPatternAttr())
    impl->pattern = cast<MaskAttrInterface>(reparse(op.getPatternAttr()));
  if (op.getModsAttr() && !op.getModsAttr().empty())
    impl->mods = cast<ArrayAttr>(reparse(op.getModsAttr()));
  impl->scale = op.getScale() ? op.getScale()->convertToFloat()
                              : float(1.0 / std::sqrt(double(impl->headDim)));
  if (impl->pattern && impl->pattern.usesSegments() &&
      (!querySegments || !keySegments))
    return error("the segments pattern needs the segment ids");
  impl->querySegments = querySegments;
  impl->keySegments = keySegments;
  if (Value table = op.getRelTable()) {
    if (!relTable)
      return error("the mods need their rel_table operand");
    auto shape = cast<RankedTensorType>(table.getType()).getShape();
    impl->relTableShape.assign(shape.begin(), shape.end());
    impl->relTable = relTable;
  }
  return std::unique_ptr<CompiledBlockAttention>(
      new CompiledBlockAttention(std::move(impl)));
}

BlockClass CompiledBlockAttention::classify(TokenChunk queries,
                                            TokenChunk keys) {
  if (!impl->pattern)
    return BlockClass::Full;
  // The whole attention's positions (Lq = Lk: either alignment is delta
  // 0); relative patterns are the same for every head.
  MaskQuery query;
  query.lq = query.lk = impl->tokens;
  Tile tile{queries.start, queries.end(), keys.start, keys.end()};
  bool anyKept = false, allFull = true;
  bool withIds = impl->pattern.usesSegments();
  for (int64_t b = 0; b < (withIds ? impl->batch : 1); ++b) {
    if (withIds) {
      query.qSegments = llvm::ArrayRef<int64_t>(
          impl->querySegments + b * impl->tokens, impl->tokens);
      query.kvSegments = llvm::ArrayRef<int64_t>(
          impl->keySegments + b * impl->tokens, impl->tokens);
    }
    TileClass cls = impl->pattern.classifyTile(query, tile);
    anyKept |= cls != TileClass::Empty;
    allFull &= cls == TileClass::Full;
  }
  return !anyKept  ? BlockClass::Empty
         : allFull ? BlockClass::Full
                   : BlockClass::Partial;
}

llvm::Expected<BlockKernel *>
CompiledBlockAttention::Impl::kernelFor(TokenChunk queries, TokenChunk keys,
                                        bool masked, int64_t heads,
                                        int64_t kvHeads) {
  // Positions matter to masks and to the distance-based mods only.
  bool positional = masked || mods;
  int64_t shift = positional ? queries.start - keys.start : 0;
  auto key = std::make_tuple(queries.length, keys.length, heads, kvHeads,
                             masked, shift);
  auto it = kernels.find(key);
  if (it != kernels.end())
    return &it->second;

  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  auto tensor = [&](ArrayRef<int64_t> shape, Type type) {
    return RankedTensorType::get(shape, type);
  };
  bool withIds = masked && pattern.usesSegments();
  SmallVector<Type> inputs = {
      tensor({batch, heads, queries.length, headDim}, f32),
      tensor({batch, kvHeads, keys.length, headDim}, f32),
      tensor({batch, kvHeads, keys.length, valueDim}, f32)};
  if (withIds) {
    inputs.push_back(tensor({batch, queries.length}, i64));
    inputs.push_back(tensor({batch, keys.length}, i64));
  }
  if (relTable)
    inputs.push_back(tensor(relTableShape, f32));
  auto outType = tensor({batch, heads, queries.length, valueDim}, f32);
  auto lseType = tensor({batch, heads, queries.length}, f32);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto fn = func::FuncOp::create(b, loc, "block",
                                 b.getFunctionType(inputs, {outType, lseType}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto arg = [&](unsigned i) -> Value { return entry->getArgument(i); };
  IntegerAttr queryOffset, keyOffset;
  if (positional) {
    queryOffset = b.getI64IntegerAttr(queries.start);
    keyOffset = b.getI64IntegerAttr(keys.start);
  }
  auto attention = AttentionOp::create(
      b, loc, outType, lseType, arg(0), arg(1), arg(2), Value(), Value(),
      withIds ? arg(3) : Value(), withIds ? arg(4) : Value(),
      relTable ? arg(inputs.size() - 1) : Value(),
      masked ? pattern : MaskAttrInterface(), b.getF32FloatAttr(scale),
      AlignmentAttr(), mods, queryOffset, keyOffset);
  func::ReturnOp::create(b, loc, attention.getResults());
  if (failed(verify(*module)))
    return error("internal error: the block kernel does not verify");
  auto jit = compileForHost(*module, options);
  if (!jit)
    return jit.takeError();
  BlockKernel &kernel = kernels[key];
  kernel.jit = std::move(*jit);
  return &kernel;
}

bool CompiledBlockAttention::run(TokenChunk queries, TokenChunk keys,
                                 BlockClass cls, int64_t queryHeads,
                                 int64_t keyHeads, const float *q,
                                 const float *k, const float *v, float *o,
                                 float *lse, std::string &message) {
  if (queryHeads != impl->queryHeads && impl->mods) {
    message = "score mods are per head: they cannot run on a slice of the "
              "heads (Ulysses); use the ring";
    return false;
  }
  bool masked = impl->pattern && cls != BlockClass::Full;
  auto kernel = impl->kernelFor(queries, keys, masked, queryHeads, keyHeads);
  if (!kernel) {
    message = llvm::toString(kernel.takeError());
    return false;
  }
  const int64_t B = impl->batch, D = impl->headDim, Dv = impl->valueDim;
  std::vector<MemRefDescriptor> descriptors = {
      {const_cast<float *>(q), {B, queryHeads, queries.length, D}},
      {const_cast<float *>(k), {B, keyHeads, keys.length, D}},
      {const_cast<float *>(v), {B, keyHeads, keys.length, Dv}}};
  std::vector<int64_t> queryIds, keyIds;
  if (masked && impl->pattern.usesSegments()) {
    for (int64_t b = 0; b < B; ++b) {
      const int64_t *queryRow = impl->querySegments + b * impl->tokens;
      const int64_t *keyRow = impl->keySegments + b * impl->tokens;
      queryIds.insert(queryIds.end(), queryRow + queries.start,
                      queryRow + queries.end());
      keyIds.insert(keyIds.end(), keyRow + keys.start, keyRow + keys.end());
    }
    descriptors.push_back({queryIds.data(), {B, queries.length}});
    descriptors.push_back({keyIds.data(), {B, keys.length}});
  }
  if (impl->relTable)
    descriptors.push_back(
        {const_cast<float *>(impl->relTable), impl->relTableShape});
  descriptors.push_back({o, {B, queryHeads, queries.length, Dv}});
  descriptors.push_back({lse, {B, queryHeads, queries.length}});
  std::vector<MemRefDescriptor *> args;
  for (MemRefDescriptor &d : descriptors)
    args.push_back(&d);
  if (llvm::Error e = (*kernel)->jit->call("block", args)) {
    message = llvm::toString(std::move(e));
    return false;
  }
  return true;
}

void CompiledBlockAttention::setRelTable(const float *relTable) {
  impl->relTable = relTable;
}

int64_t CompiledBlockAttention::kernelsCompiled() const {
  return impl->kernels.size();
}
