//===- AttnOps.cpp - attn op verifiers ------------------------------------===//
//
// Every rule here has a case in test/Dialect/Attn/invalid.mlir.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/IR/MaskAlgebra.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

//===----------------------------------------------------------------------===//
// Custom assembly
//===----------------------------------------------------------------------===//

/// `pattern(#attn...)`: the parentheses keep the op's trailing `: (types)`
/// from being read as the attribute's type; the message names what fits.
static ParseResult parseMaskPattern(OpAsmParser &parser,
                                    MaskAttrInterface &pattern) {
  SMLoc loc = parser.getCurrentLocation();
  Attribute attr;
  if (parser.parseAttribute(attr, parser.getBuilder().getNoneType()))
    return failure();
  pattern = dyn_cast<MaskAttrInterface>(attr);
  if (!pattern)
    return parser.emitError(loc, "expected a mask pattern such as "
                                 "#attn.causal or #attn.window<...>, got ")
           << attr;
  return success();
}

static void printMaskPattern(OpAsmPrinter &printer, Operation *,
                             MaskAttrInterface pattern) {
  printer.printAttributeWithoutType(pattern);
}

/// Enum attributes in op syntax are bare keywords: `align = bottom_right`.
template <typename AttrT, typename SymbolizeFn>
static ParseResult parseEnumKeyword(OpAsmParser &parser, AttrT &attr,
                                    SymbolizeFn symbolize, StringRef what) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  auto value = symbolize(keyword);
  if (!value)
    return parser.emitError(loc) << "expected " << what << ", got '"
                                 << keyword << "'";
  attr = AttrT::get(parser.getContext(), *value);
  return success();
}

static ParseResult parseAlignmentKeyword(OpAsmParser &parser,
                                         AlignmentAttr &attr) {
  return parseEnumKeyword(
      parser, attr, [](StringRef s) { return symbolizeAlignment(s); },
      "top_left or bottom_right");
}
static void printAlignmentKeyword(OpAsmPrinter &printer, Operation *,
                                  AlignmentAttr attr) {
  printer << stringifyAlignment(attr.getValue());
}

static ParseResult parseFeatureMapKeyword(OpAsmParser &parser,
                                          FeatureMapAttr &attr) {
  return parseEnumKeyword(
      parser, attr, [](StringRef s) { return symbolizeFeatureMap(s); },
      "one of favor, rfa, elu_plus_one, relu");
}
static void printFeatureMapKeyword(OpAsmPrinter &printer, Operation *,
                                   FeatureMapAttr attr) {
  printer << stringifyFeatureMap(attr.getValue());
}

static ParseResult parseRopeStyleKeyword(OpAsmParser &parser,
                                         RopeStyleAttr &attr) {
  return parseEnumKeyword(
      parser, attr, [](StringRef s) { return symbolizeRopeStyle(s); },
      "interleaved or half");
}
static void printRopeStyleKeyword(OpAsmPrinter &printer, Operation *,
                                  RopeStyleAttr attr) {
  printer << stringifyRopeStyle(attr.getValue());
}

#define GET_OP_CLASSES
#include "attn/Dialect/Attn/IR/AttnOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

static bool mismatch(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

/// Static sizes are >= 1 (a zero-size operand leaves nothing to attend
/// over, and the lowerings divide by sizes) and at most 2^38 elements per
/// operand (1 TiB of f32, attnrt::kMaxTensorBytes): more is a corrupt or
/// hostile input, not a model, and its size arithmetic could overflow.
static LogicalResult checkSizes(Operation *op, Value value, StringRef name) {
  auto type = cast<RankedTensorType>(value.getType());
  constexpr int64_t kMaxElements = int64_t(1) << 38;
  int64_t elements = 1;
  for (int64_t size : type.getShape()) {
    if (ShapedType::isDynamic(size))
      continue;
    if (size < 1)
      return op->emitOpError()
             << name << " has a zero-size dimension: " << type;
    if (__builtin_mul_overflow(elements, size, &elements) ||
        elements > kMaxElements)
      return op->emitOpError()
             << name << " " << type << " has more than 2^38 elements";
  }
  return success();
}

/// Checks that `value` is a ranked tensor of `rank` with sizes checkSizes
/// accepts; `layout` names its dims.
static LogicalResult checkRank(Operation *op, Value value, StringRef name,
                               int64_t rank, StringRef layout) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() != rank)
    return op->emitOpError() << name << " must have rank " << rank << " "
                             << layout << ", got " << type;
  return checkSizes(op, value, name);
}

/// Operands read as the inputs' floats (bias, tables, projections, random
/// features, centroids, rotations) share the query's element type.
static LogicalResult checkElementType(Operation *op, Value value,
                                      StringRef name, Value query) {
  Type expected = cast<RankedTensorType>(query.getType()).getElementType();
  Type actual = cast<RankedTensorType>(value.getType()).getElementType();
  if (actual != expected)
    return op->emitOpError() << name << " must have the query's element type "
                             << expected << ", got " << actual;
  return success();
}

/// Checks dim `dim` of `value` against `expected` (either may be dynamic).
static LogicalResult checkDim(Operation *op, Value value, StringRef name,
                              int64_t dim, int64_t expected,
                              StringRef meaning) {
  int64_t actual = cast<RankedTensorType>(value.getType()).getDimSize(dim);
  if (mismatch(actual, expected))
    return op->emitOpError() << name << " dimension " << dim << " (" << meaning
                             << ") is " << actual << ", expected "
                             << expected;
  return success();
}

static int64_t dimOf(Value value, int64_t dim) {
  return cast<RankedTensorType>(value.getType()).getDimSize(dim);
}

static Type elementTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getElementType();
}

static LogicalResult checkScale(Operation *op, std::optional<APFloat> scale) {
  if (!scale)
    return success();
  if (!scale->isFiniteNonZero())
    return op->emitOpError() << "scale must be finite and non-zero";
  return success();
}

/// The checks every Q/K/V op shares: ranks, element types, batch, heads
/// (Hq % Hkv == 0), key length of K and V, head dim of Q and K, and the
/// output shape [B, Hq, Lq, Dv].
static LogicalResult verifyQueryKeyValue(Operation *op, Value q, Value k,
                                         Value v, Value out) {
  constexpr StringLiteral qLayout = "[B, Hq, Lq, D]", kLayout = "[B, Hkv, Lk, D]",
                          vLayout = "[B, Hkv, Lk, Dv]",
                          oLayout = "[B, Hq, Lq, Dv]";
  if (failed(checkRank(op, q, "query", 4, qLayout)) ||
      failed(checkRank(op, k, "key", 4, kLayout)) ||
      failed(checkRank(op, v, "value", 4, vLayout)) ||
      (out && failed(checkRank(op, out, "result", 4, oLayout))))
    return failure();
  Type elementType = elementTypeOf(q);
  if (elementTypeOf(k) != elementType || elementTypeOf(v) != elementType ||
      (out && elementTypeOf(out) != elementType))
    return op->emitOpError()
           << "query, key, value and result must have the same element type";

  int64_t batch = dimOf(q, 0), hq = dimOf(q, 1), lq = dimOf(q, 2),
          d = dimOf(q, 3);
  int64_t hkv = dimOf(k, 1), lk = dimOf(k, 2), dv = dimOf(v, 3);
  if (failed(checkDim(op, k, "key", 0, batch, "batch")) ||
      failed(checkDim(op, v, "value", 0, batch, "batch")) ||
      failed(checkDim(op, v, "value", 1, hkv, "heads, as in key")) ||
      failed(checkDim(op, v, "value", 2, lk, "key length, as in key")) ||
      failed(checkDim(op, k, "key", 3, d, "head dim, as in query")))
    return failure();
  // Per-head constants (ALiBi slopes, random block tables) are emitted per
  // query head: no model has more than 2^16.
  if (!ShapedType::isDynamic(hq) && hq > (int64_t(1) << 16))
    return op->emitOpError()
           << "query heads (" << hq << ") must be at most 65536";
  if (!ShapedType::isDynamic(hq) && !ShapedType::isDynamic(hkv) &&
      (hkv == 0 || hq % hkv != 0))
    return op->emitOpError() << "query heads (" << hq
                             << ") must be a multiple of key/value heads ("
                             << hkv << ")";
  if (!out)
    return success();
  if (failed(checkDim(op, out, "result", 0, batch, "batch")) ||
      failed(checkDim(op, out, "result", 1, hq, "query heads")) ||
      failed(checkDim(op, out, "result", 2, lq, "query length")) ||
      failed(checkDim(op, out, "result", 3, dv, "value head dim")))
    return failure();
  return success();
}

/// A dense [B|1, Hq|1, Lq, Lk] operand (mask or bias), which may also be
/// [B|1, Hq|1, 1, Lk], one value per key (`perKey`).
static LogicalResult verifyDenseScoreOperand(Operation *op, Value operand,
                                             StringRef name, Value q, Value k,
                                             bool perKey = false) {
  if (failed(checkRank(op, operand, name, 4,
                       perKey ? "[B or 1, Hq or 1, Lq or 1, Lk]"
                              : "[B or 1, Hq or 1, Lq, Lk]")))
    return failure();
  for (auto [dim, meaning] :
       {std::pair<int64_t, StringRef>{0, "batch"}, {1, "query heads"}}) {
    int64_t size = dimOf(operand, dim), expected = dimOf(q, dim);
    if (size != 1 && mismatch(size, expected))
      return op->emitOpError()
             << name << " dimension " << dim << " (" << meaning << ") is "
             << size << ", expected 1 or " << expected;
  }
  int64_t rows = dimOf(operand, 2), lq = dimOf(q, 2);
  if (perKey && rows != 1 && mismatch(rows, lq))
    return op->emitOpError() << name << " dimension 2 (query length) is "
                             << rows << ", expected 1 or " << lq;
  if ((!perKey &&
       failed(checkDim(op, operand, name, 2, lq, "query length"))) ||
      failed(checkDim(op, operand, name, 3, dimOf(k, 2), "key length")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

/// The mask shape of Q [B, Hq, Lq, D] against K [B, Hkv, Lk, D].
static MaskShape maskShapeOf(Value q, Value k, int64_t shift) {
  MaskShape shape;
  shape.shift = shift;
  shape.lq = dimOf(q, 2);
  shape.lk = dimOf(k, 2);
  shape.numHeads = dimOf(q, 1);
  return shape;
}

MaskShape AttentionOp::getMaskShape() {
  return maskShapeOf(getQuery(), getKey(), getPositionShift());
}

/// query_offset / key_offset: positions of a block of a larger attention.
static LogicalResult verifyOffsets(Operation *op, IntegerAttr queryOffset,
                                   IntegerAttr keyOffset, Alignment align,
                                   MaskAttrInterface pattern, Region &score) {
  if (!queryOffset && !keyOffset)
    return success();
  constexpr int64_t kMaxPosition = int64_t(1) << 40;
  for (IntegerAttr offset : {queryOffset, keyOffset})
    if (offset && (offset.getInt() < 0 || offset.getInt() > kMaxPosition))
      return op->emitOpError() << "query_offset and key_offset must be 0 to 2^40";
  if (align != Alignment::top_left)
    return op->emitOpError()
           << "query_offset / key_offset need align = top_left (fold a "
              "bottom-right alignment into query_offset)";
  if (pattern && !dependsOnDistanceOnly(pattern))
    return op->emitOpError()
           << "query_offset / key_offset need a pattern that depends on j - i "
              "alone (causal, window, dilated, strided, segments and their "
              "or/and)";
  if (!score.empty())
    return op->emitOpError()
           << "query_offset / key_offset cannot be combined with a score region";
  return success();
}

/// The checks attn.attention and attn.online_attention share: every operand
/// but Q, K, V and the result, the pattern and the mods.
template <typename OpT> static LogicalResult verifyScoreOperands(OpT attnOp) {
  Operation *op = attnOp.getOperation();
  Value q = attnOp.getQuery(), k = attnOp.getKey();
  if (failed(checkScale(op, attnOp.getScale())) ||
      failed(verifyOffsets(op, attnOp.getQueryOffsetAttr(),
                           attnOp.getKeyOffsetAttr(), attnOp.getAlignment(),
                           attnOp.getPatternAttr(), attnOp.getScore())))
    return failure();
  if (attnOp.getMask() &&
      failed(verifyDenseScoreOperand(op, attnOp.getMask(), "mask", q, k,
                                     /*perKey=*/true)))
    return failure();
  if (attnOp.getBias() &&
      (failed(verifyDenseScoreOperand(op, attnOp.getBias(), "bias", q, k,
                                       /*perKey=*/true)) ||
       failed(checkElementType(op, attnOp.getBias(), "bias", q))))
    return failure();

  // Segment ids: both or neither, and exactly when the pattern reads them.
  bool hasSegments = attnOp.getQSegments() || attnOp.getKvSegments();
  if (hasSegments && !(attnOp.getQSegments() && attnOp.getKvSegments()))
    return attnOp.emitOpError() << "needs both q_segments and kv_segments";
  bool usesSegments =
      attnOp.getPatternAttr() && attnOp.getPatternAttr().usesSegments();
  if (usesSegments && !hasSegments)
    return attnOp.emitOpError() << "pattern uses #attn.segments but no "
                                   "segments(q_ids, kv_ids) operands are given";
  if (hasSegments && !usesSegments)
    return attnOp.emitOpError()
           << "segment ids are given but the pattern does not "
              "use #attn.segments";
  if (hasSegments) {
    int64_t batch = dimOf(q, 0);
    if (failed(
            checkRank(op, attnOp.getQSegments(), "q_segments", 2, "[B, Lq]")) ||
        failed(checkRank(op, attnOp.getKvSegments(), "kv_segments", 2,
                         "[B, Lk]")) ||
        failed(checkDim(op, attnOp.getQSegments(), "q_segments", 0, batch,
                        "batch")) ||
        failed(checkDim(op, attnOp.getQSegments(), "q_segments", 1, dimOf(q, 2),
                        "query length")) ||
        failed(checkDim(op, attnOp.getKvSegments(), "kv_segments", 0, batch,
                        "batch")) ||
        failed(checkDim(op, attnOp.getKvSegments(), "kv_segments", 1,
                        dimOf(k, 2), "key length")))
      return failure();
  }

  if (MaskAttrInterface pattern = attnOp.getPatternAttr()) {
    auto emitError = [&]() { return attnOp.emitOpError(); };
    if (failed(pattern.verifyShape(emitError, attnOp.getMaskShape())))
      return failure();
  }

  // Score mods and the relative-position table some of them read.
  int64_t hq = dimOf(q, 1);
  ScoreModAttrInterface tableMod;
  if (std::optional<ArrayAttr> mods = attnOp.getMods()) {
    for (Attribute attr : *mods) {
      auto mod = dyn_cast<ScoreModAttrInterface>(attr);
      if (!mod)
        return attnOp.emitOpError()
               << "mods entry " << attr << " is not a score mod";
      auto emitError = [&]() { return attnOp.emitOpError(); };
      if (failed(mod.verifyHeads(emitError, hq)))
        return failure();
      // Soft-capping applies once, first (docs/Dialect.md): a second one
      // would have no place in that order.
      if (isa<SoftcapAttr>(attr) &&
          llvm::count_if(*mods, llvm::IsaPred<SoftcapAttr>) > 1)
        return attnOp.emitOpError()
               << "at most one #attn.softcap mod is allowed";
      if (mod.getTableColumns() == 0)
        continue;
      if (tableMod)
        return attnOp.emitOpError()
               << "at most one relative-position bias mod is allowed";
      tableMod = mod;
    }
  }
  if (tableMod && !attnOp.getRelTable())
    return attnOp.emitOpError()
           << "mod " << tableMod << " needs a rel_table(...) operand";
  if (!tableMod && attnOp.getRelTable())
    return attnOp.emitOpError()
           << "rel_table is given but no mod reads a relative-position table";
  if (tableMod) {
    Value table = attnOp.getRelTable();
    if (failed(checkRank(op, table, "rel_table", 2, "[Hq, columns]")) ||
        failed(checkElementType(op, table, "rel_table", q)) ||
        failed(checkDim(op, table, "rel_table", 0, hq, "query heads")) ||
        failed(checkDim(op, table, "rel_table", 1, tableMod.getTableColumns(),
                        "columns of the mod")))
      return failure();
  }
  return success();
}

/// The score region of attn.attention and attn.online_attention.
static LogicalResult verifyScoreRegion(Operation *op, Region &region) {
  if (region.empty())
    return success();
  Block &block = region.front();
  Builder b(op->getContext());
  SmallVector<Type> expected = {b.getF32Type(), b.getIndexType(),
                                b.getIndexType(), b.getIndexType(),
                                b.getIndexType()};
  if (block.getArgumentTypes() != ArrayRef<Type>(expected))
    return op->emitOpError() << "score region must take (f32, index, index, "
                                "index, index) for (score, b, h, i, j)";
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield || yield.getValues().size() != 1 ||
      !yield.getValues()[0].getType().isF32())
    return op->emitOpError()
           << "score region must end with attn.yield of one f32";
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyQueryKeyValue(*this, getQuery(), getKey(), getValue(),
                                 getOutput())))
    return failure();
  if (Value lse = getLse()) {
    Value q = getQuery();
    if (failed(checkRank(*this, lse, "lse", 3, "[B, Hq, Lq]")) ||
        failed(checkDim(*this, lse, "lse", 0, dimOf(q, 0), "batch")) ||
        failed(checkDim(*this, lse, "lse", 1, dimOf(q, 1), "query heads")) ||
        failed(checkDim(*this, lse, "lse", 2, dimOf(q, 2), "query length")))
      return failure();
  }
  return verifyScoreOperands(*this);
}

LogicalResult AttentionOp::verifyRegions() {
  return verifyScoreRegion(*this, getScore());
}

//===----------------------------------------------------------------------===//
// AttentionGradOp
//===----------------------------------------------------------------------===//

MaskShape AttentionGradOp::getMaskShape() {
  return maskShapeOf(getQuery(), getKey(), getPositionShift());
}

LogicalResult AttentionGradOp::verify() {
  // The output and its gradient have the forward's result shape (their
  // types match by the op's traits), lse its [B, Hq, Lq].
  if (failed(verifyQueryKeyValue(*this, getQuery(), getKey(), getValue(),
                                 getOutput())))
    return failure();
  Value q = getQuery(), lse = getLse();
  if (failed(checkRank(*this, lse, "lse", 3, "[B, Hq, Lq]")) ||
      failed(checkDim(*this, lse, "lse", 0, dimOf(q, 0), "batch")) ||
      failed(checkDim(*this, lse, "lse", 1, dimOf(q, 1), "query heads")) ||
      failed(checkDim(*this, lse, "lse", 2, dimOf(q, 2), "query length")))
    return failure();
  // Operand gradients: none, or one per differentiable operand given and
  // per float tensor the score region captures.
  SmallVector<Value> differentiable = getDifferentiableOperands();
  ValueRange grads = getOperandGrads();
  if (!grads.empty() && grads.size() != differentiable.size())
    return emitOpError() << "has " << grads.size()
                         << " operand gradients; expected none or "
                         << differentiable.size()
                         << " (one per bias and rel_table operand given and "
                            "per float tensor the score region reads)";
  for (auto [grad, operand] : llvm::zip(grads, differentiable))
    if (grad.getType() != operand.getType())
      return emitOpError() << "operand gradient of type " << grad.getType()
                           << " must have its operand's type "
                           << operand.getType();
  return verifyScoreOperands(*this);
}

SmallVector<Value> mlir::attn::capturedFloatTensors(Region &score) {
  SmallVector<Value> captured;
  score.walk([&](Operation *inner) {
    for (Value operand : inner->getOperands()) {
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (type && isa<FloatType>(type.getElementType()) &&
          !score.isAncestor(operand.getParentRegion()) &&
          !llvm::is_contained(captured, operand))
        captured.push_back(operand);
    }
  });
  return captured;
}

SmallVector<Value> AttentionGradOp::getCapturedTensors() {
  return capturedFloatTensors(getScore());
}

SmallVector<Value> AttentionGradOp::getDifferentiableOperands() {
  SmallVector<Value> differentiable;
  for (Value operand : {getBias(), getRelTable()})
    if (operand)
      differentiable.push_back(operand);
  llvm::append_range(differentiable, getCapturedTensors());
  return differentiable;
}

LogicalResult AttentionGradOp::verifyRegions() {
  return verifyScoreRegion(*this, getScore());
}

//===----------------------------------------------------------------------===//
// OnlineAttentionOp and FinalizeTileOp
//===----------------------------------------------------------------------===//

MaskShape OnlineAttentionOp::getMaskShape() {
  return maskShapeOf(getQuery(), getKey(), getPositionShift());
}

LogicalResult OnlineAttentionOp::verify() {
  if (failed(verifyQueryKeyValue(*this, getQuery(), getKey(), getValue(),
                                 Value())))
    return failure();
  // Tiles are buffers of query-tile x key-tile f32 (4096^2 is 64 MiB).
  constexpr int64_t kMaxTile = 4096;
  int64_t queryTile = getQueryTileAttr().getInt(),
          keyTile = getKeyTileAttr().getInt();
  if (queryTile < 1 || queryTile > kMaxTile || keyTile < 1 ||
      keyTile > kMaxTile)
    return emitOpError() << "query_tile and key_tile must be 1 to " << kMaxTile;
  int64_t period = getQueryPeriodAttr().getInt();
  if (period < 0 || period > (int64_t(1) << 40))
    return emitOpError() << "period must be 0 to 2^40";
  int64_t rows = dimOf(getMax(), 0);
  if (failed(checkRank(*this, getMax(), "max state", 1, "[rows]")) ||
      failed(checkRank(*this, getSum(), "sum state", 1, "[rows]")) ||
      failed(checkRank(*this, getAcc(), "acc state", 2, "[rows, Dv]")) ||
      failed(checkDim(*this, getSum(), "sum state", 0, rows, "rows")) ||
      failed(checkDim(*this, getAcc(), "acc state", 0, rows, "rows")) ||
      failed(checkDim(*this, getAcc(), "acc state", 1, dimOf(getValue(), 3),
                      "value head dim")))
    return failure();
  if (!ShapedType::isDynamic(rows) && rows > queryTile)
    return emitOpError() << "state has " << rows
                         << " rows, more than query_tile (" << queryTile << ")";
  return verifyScoreOperands(*this);
}

LogicalResult OnlineAttentionOp::verifyRegions() {
  return verifyScoreRegion(*this, getScore());
}

LogicalResult FinalizeTileOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getAcc(), "acc", 2, "[rows, Dv]")) ||
      failed(checkRank(op, getSum(), "sum", 1, "[rows]")) ||
      failed(checkRank(op, getOutput(), "result", 2, "[rows, Dv]")) ||
      failed(checkDim(op, getSum(), "sum", 0, dimOf(getAcc(), 0), "rows")) ||
      failed(
          checkDim(op, getOutput(), "result", 0, dimOf(getAcc(), 0), "rows")) ||
      failed(checkDim(op, getOutput(), "result", 1, dimOf(getAcc(), 1),
                      "value head dim")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Other families
//===----------------------------------------------------------------------===//

LogicalResult LinformerOp::verify() {
  Operation *op = getOperation();
  Value k = getKey();
  if (failed(verifyQueryKeyValue(op, getQuery(), k, getValue(), getOutput())) ||
      failed(checkScale(op, getScale())))
    return failure();
  for (auto [proj, name] :
       {std::pair<Value, StringRef>{getEProj(), "e_proj"},
        {getFProj(), "f_proj"}}) {
    auto type = cast<RankedTensorType>(proj.getType());
    if (type.getRank() != 2 && type.getRank() != 3)
      return emitOpError() << name
                           << " must be [k, Lk] or [Hkv, k, Lk], got " << type;
    if (failed(checkSizes(op, proj, name)) ||
        failed(checkElementType(op, proj, name, getQuery())))
      return failure();
    int64_t lastDim = type.getRank() - 1;
    if (type.getRank() == 3 &&
        failed(checkDim(op, proj, name, 0, dimOf(k, 1), "key/value heads")))
      return failure();
    if (failed(checkDim(op, proj, name, lastDim, dimOf(k, 2), "key length")))
      return failure();
  }
  auto eType = cast<RankedTensorType>(getEProj().getType());
  auto fType = cast<RankedTensorType>(getFProj().getType());
  if (eType.getRank() != fType.getRank() ||
      mismatch(eType.getDimSize(eType.getRank() - 2),
               fType.getDimSize(fType.getRank() - 2)))
    return emitOpError() << "e_proj and f_proj must have the same shape, got "
                         << eType << " and " << fType;
  return success();
}

LogicalResult NystromOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyQueryKeyValue(op, getQuery(), getKey(), getValue(),
                                 getOutput())) ||
      failed(checkScale(op, getScale())))
    return failure();
  int64_t m = getLandmarks();
  if (m < 1)
    return emitOpError() << "landmarks must be >= 1, got " << m;
  if (getPinvIterations() < 1)
    return emitOpError() << "pinv_iterations must be >= 1, got "
                         << getPinvIterations();
  for (auto [len, name] : {std::pair<int64_t, StringRef>{dimOf(getQuery(), 2),
                                                         "query length"},
                           {dimOf(getKey(), 2), "key length"}})
    if (!ShapedType::isDynamic(len) && m > len)
      return emitOpError() << "landmarks (" << m << ") exceed the " << name
                           << " (" << len << ")";
  return success();
}

LogicalResult KernelizedOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyQueryKeyValue(op, getQuery(), getKey(), getValue(),
                                 getOutput())))
    return failure();
  FeatureMap map = getFeatureMap();
  bool needsOmega = map == FeatureMap::favor || map == FeatureMap::rfa;
  if (needsOmega && !getOmega())
    return emitOpError() << "feature map '" << stringifyFeatureMap(map)
                         << "' needs an omega(...) projection operand";
  if (!needsOmega && getOmega())
    return emitOpError() << "feature map '" << stringifyFeatureMap(map)
                         << "' takes no omega operand";
  if (Value omega = getOmega()) {
    if (failed(checkRank(op, omega, "omega", 2, "[features, D]")) ||
        failed(checkElementType(op, omega, "omega", getQuery())) ||
        failed(
            checkDim(op, omega, "omega", 1, dimOf(getQuery(), 3), "head dim")))
      return failure();
  }
  return success();
}

LogicalResult LshOp::verify() {
  Operation *op = getOperation();
  Value qk = getQueryKey();
  if (failed(verifyQueryKeyValue(op, qk, qk, getValue(), getOutput())) ||
      failed(checkScale(op, getScale())))
    return failure();
  if (getBuckets() < 2 || getBuckets() % 2 != 0)
    return emitOpError() << "buckets must be even and >= 2, got "
                         << getBuckets();
  if (getRounds() < 1)
    return emitOpError() << "rounds must be >= 1, got " << getRounds();
  if (getChunk() < 1)
    return emitOpError() << "chunk must be >= 1, got " << getChunk();
  if (failed(checkElementType(op, getRotations(), "rotations", qk)) ||
      failed(checkRank(op, getRotations(), "rotations", 3,
                       "[rounds, D, buckets / 2]")) ||
      failed(checkDim(op, getRotations(), "rotations", 0, getRounds(),
                      "rounds")) ||
      failed(checkDim(op, getRotations(), "rotations", 1, dimOf(qk, 3),
                      "head dim")) ||
      failed(checkDim(op, getRotations(), "rotations", 2, getBuckets() / 2,
                      "buckets / 2")))
    return failure();
  return success();
}

LogicalResult RoutingOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyQueryKeyValue(op, getQuery(), getKey(), getValue(),
                                 getOutput())) ||
      failed(checkScale(op, getScale())))
    return failure();
  if (failed(checkRank(op, getCentroids(), "centroids", 2, "[clusters, D]")) ||
      failed(checkElementType(op, getCentroids(), "centroids", getQuery())) ||
      failed(checkDim(op, getCentroids(), "centroids", 1, dimOf(getQuery(), 3),
                      "head dim")))
    return failure();
  int64_t topK = getTopK(), lk = dimOf(getKey(), 2), lq = dimOf(getQuery(), 2);
  if (topK < 1)
    return emitOpError() << "top_k must be >= 1, got " << topK;
  if ((!ShapedType::isDynamic(lk) && topK > lk) ||
      (!ShapedType::isDynamic(lq) && topK > lq))
    return emitOpError() << "top_k (" << topK
                         << ") exceeds the sequence length";
  return success();
}

LogicalResult FourierMixOp::verify() {
  if (failed(checkRank(getOperation(), getInput(), "input", 3, "[B, L, Dm]")))
    return failure();
  if (getInput().getType() != getOutput().getType())
    return emitOpError() << "result type must equal the input type";
  return success();
}

LogicalResult PagedKvOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getPool(), "pool", 4, "[pages, H, P, D]")) ||
      failed(checkRank(op, getTable(), "table", 2, "[B, max_pages]")) ||
      failed(checkRank(op, getResult(), "result", 4, "[B, H, length, D]")))
    return failure();
  auto pool = cast<RankedTensorType>(getPool().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (pool.getElementType() != result.getElementType())
    return emitOpError() << "result element type " << result.getElementType()
                         << " must be the pool's, " << pool.getElementType();
  unsigned width = getTable().getType().getElementTypeBitWidth();
  if (width != 32 && width != 64)
    return emitOpError() << "table entries must be i32 or i64, got "
                         << getTable().getType().getElementType();
  int64_t pageRows = getPageRows();
  if (ShapedType::isDynamic(pageRows) || pageRows < 1)
    return emitOpError() << "the rows per page (pool dim 2) must be static "
                            "and >= 1";
  if (failed(checkDim(op, getResult(), "result", 0, dimOf(getTable(), 0),
                      "table's batch")) ||
      failed(checkDim(op, getResult(), "result", 1, dimOf(getPool(), 1),
                      "pool's heads")) ||
      failed(checkDim(op, getResult(), "result", 3, dimOf(getPool(), 3),
                      "pool's head dim")))
    return failure();
  return success();
}

LogicalResult RopeOp::verify() {
  Operation *op = getOperation();
  if (failed(checkRank(op, getInput(), "input", 4, "[B, H, L, D]")))
    return failure();
  if (getInput().getType() != getOutput().getType())
    return emitOpError() << "result type must equal the input type";
  int64_t d = dimOf(getInput(), 3);
  if (!ShapedType::isDynamic(d) && d % 2 != 0)
    return emitOpError() << "head dim must be even, got " << d;
  if (!std::isfinite(getBase().convertToDouble()) ||
      getBase().convertToDouble() <= 1.0)
    return emitOpError() << "base must be finite and > 1";
  if (Value pos = getPositions()) {
    auto type = cast<RankedTensorType>(pos.getType());
    int64_t l = dimOf(getInput(), 2);
    if (type.getRank() == 1) {
      if (failed(checkDim(op, pos, "positions", 0, l, "sequence length")))
        return failure();
    } else if (type.getRank() == 2) {
      if (failed(checkDim(op, pos, "positions", 0, dimOf(getInput(), 0),
                          "batch")) ||
          failed(checkDim(op, pos, "positions", 1, l, "sequence length")))
        return failure();
    } else {
      return emitOpError() << "positions must be [L] or [B, L], got " << type;
    }
  }
  return success();
}
