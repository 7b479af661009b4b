//===- AttnAttrs.cpp - attn attribute verifiers ---------------------------===//
//
// Parameter checks of the mask patterns and score mods. Their semantics
// (isKept / classifyTile) live in MaskAlgebra.cpp.
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

#include "attn/Dialect/Attn/IR/AttnEnums.cpp.inc"
#include "attn/Dialect/Attn/IR/AttnInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/Dialect/Attn/IR/AttnAttrs.cpp.inc"

void AttnDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attn/Dialect/Attn/IR/AttnAttrs.cpp.inc"
      >();
}

using EmitErrorFn = function_ref<InFlightDiagnostic()>;

/// Positions, spans, strides and block sizes are at most 2^40: no sequence
/// attn can hold is longer (kMaxTensorBytes), and the bound keeps the i64
/// arithmetic of masks and tile classes (sums of a few positions) exact.
static constexpr int64_t kMaxPosition = int64_t(1) << 40;

static LogicalResult checkAtMost(EmitErrorFn emitError, StringRef attr,
                                 StringRef name, int64_t value, int64_t limit,
                                 StringRef limitText) {
  if (value > limit)
    return emitError() << "#attn." << attr << " " << name
                       << " must be <= " << limitText << ", got " << value;
  return success();
}

static LogicalResult checkPositive(EmitErrorFn emitError, StringRef attr,
                                   StringRef name, int64_t value) {
  if (value < 1)
    return emitError() << "#attn." << attr << " " << name
                       << " must be >= 1, got " << value;
  return checkAtMost(emitError, attr, name, value, kMaxPosition, "2^40");
}

static LogicalResult checkNonNegative(EmitErrorFn emitError, StringRef attr,
                                      StringRef name, int64_t value) {
  if (value < 0)
    return emitError() << "#attn." << attr << " " << name
                       << " must be >= 0, got " << value;
  return checkAtMost(emitError, attr, name, value, kMaxPosition, "2^40");
}

static LogicalResult checkPositiveFinite(EmitErrorFn emitError,
                                         StringRef attr, StringRef name,
                                         const APFloat &number) {
  double value = number.convertToDouble();
  if (!std::isfinite(value) || value <= 0)
    return emitError() << "#attn." << attr << " " << name
                       << " must be a finite number > 0, got " << value;
  return success();
}

LogicalResult WindowAttr::verify(EmitErrorFn emitError, int64_t left,
                                 int64_t right) {
  if (failed(checkNonNegative(emitError, "window", "left", left)) ||
      failed(checkNonNegative(emitError, "window", "right", right)))
    return failure();
  return success();
}

LogicalResult DilatedAttr::verify(EmitErrorFn emitError, int64_t left,
                                  int64_t right, int64_t dilation) {
  if (failed(checkNonNegative(emitError, "dilated", "left", left)) ||
      failed(checkNonNegative(emitError, "dilated", "right", right)) ||
      failed(checkPositive(emitError, "dilated", "dilation", dilation)))
    return failure();
  return success();
}

LogicalResult StridedAttr::verify(EmitErrorFn emitError, int64_t stride) {
  return checkPositive(emitError, "strided", "stride", stride);
}

LogicalResult FixedAttr::verify(EmitErrorFn emitError, int64_t stride,
                                int64_t summary) {
  if (failed(checkPositive(emitError, "fixed", "stride", stride)) ||
      failed(checkNonNegative(emitError, "fixed", "summary", summary)))
    return failure();
  if (summary > stride)
    return emitError() << "#attn.fixed summary (" << summary
                       << ") must not exceed stride (" << stride << ")";
  return success();
}

LogicalResult GlobalAttr::verify(EmitErrorFn emitError,
                                 ArrayRef<int64_t> indices) {
  if (indices.empty())
    return emitError() << "#attn.global needs at least one index";
  for (auto [n, index] : llvm::enumerate(indices)) {
    if (index < 0)
      return emitError() << "#attn.global index " << index
                         << " is negative";
    if (failed(checkAtMost(emitError, "global", "index", index, kMaxPosition,
                           "2^40")))
      return failure();
    if (n > 0 && index <= indices[n - 1])
      return emitError() << "#attn.global indices must be sorted and unique";
  }
  return success();
}

LogicalResult GlobalAttr::verifyShape(EmitErrorFn emitError,
                                      const MaskShape &shape) const {
  if (ShapedType::isDynamic(shape.lk))
    return success();
  if (getIndices().back() >= shape.lk)
    return emitError() << "#attn.global index " << getIndices().back()
                       << " is out of range for " << shape.lk << " keys";
  return success();
}

LogicalResult RandomBlocksAttr::verify(EmitErrorFn emitError, int64_t block,
                                       int64_t count, int64_t seed) {
  if (failed(checkPositive(emitError, "random_blocks", "block", block)) ||
      failed(checkNonNegative(emitError, "random_blocks", "count", count)))
    return failure();
  if (seed < 0) // any non-negative seed: it is not a position
    return emitError() << "#attn.random_blocks seed must be >= 0, got " << seed;
  return success();
}

LogicalResult BlockLayoutAttr::verify(EmitErrorFn emitError, int64_t block,
                                      DenseIntElementsAttr layout) {
  if (failed(checkPositive(emitError, "block_layout", "block", block)))
    return failure();
  if (!layout || layout.getType().getRank() != 3)
    return emitError() << "#attn.block_layout layout must be a rank-3 "
                          "[heads, query blocks, key blocks] tensor";
  if (layout.getType().getNumElements() == 0)
    return emitError() << "#attn.block_layout layout must not be empty";
  return success();
}

LogicalResult BlockLayoutAttr::verifyShape(EmitErrorFn emitError,
                                           const MaskShape &shape) const {
  ArrayRef<int64_t> dims = getLayout().getType().getShape();
  int64_t block = getBlock();
  if (dims[0] != 1 && !ShapedType::isDynamic(shape.numHeads) &&
      dims[0] != shape.numHeads)
    return emitError() << "#attn.block_layout has " << dims[0]
                       << " heads; expected 1 or " << shape.numHeads;
  if (!ShapedType::isDynamic(shape.lq) &&
      dims[1] != llvm::divideCeilSigned(shape.lq, block))
    return emitError() << "#attn.block_layout has " << dims[1]
                       << " query blocks; " << shape.lq
                       << " queries in blocks of " << block << " need "
                       << llvm::divideCeilSigned(shape.lq, block);
  if (!ShapedType::isDynamic(shape.lk) &&
      dims[2] != llvm::divideCeilSigned(shape.lk, block))
    return emitError() << "#attn.block_layout has " << dims[2]
                       << " key blocks; " << shape.lk
                       << " keys in blocks of " << block << " need "
                       << llvm::divideCeilSigned(shape.lk, block);
  return success();
}

bool BlockLayoutAttr::isBlockKept(int64_t head, int64_t qb, int64_t kb) const {
  ArrayRef<int64_t> dims = getLayout().getType().getShape();
  int64_t h = dims[0] == 1 ? 0 : head;
  if (h < 0 || h >= dims[0] || qb < 0 || qb >= dims[1] || kb < 0 ||
      kb >= dims[2])
    return false;
  uint64_t flat = (h * dims[1] + qb) * dims[2] + kb;
  return !getLayout().getValues<APInt>()[flat].isZero();
}

static LogicalResult verifyMembers(EmitErrorFn emitError, StringRef name,
                                   ArrayAttr members) {
  if (members.empty())
    return emitError() << "#attn." << name << " needs at least one member";
  for (Attribute member : members)
    if (!isa<MaskAttrInterface>(member))
      return emitError() << "#attn." << name << " member " << member
                         << " is not a mask pattern";
  return success();
}

LogicalResult OrAttr::verify(EmitErrorFn emitError, ArrayAttr members) {
  return verifyMembers(emitError, "or", members);
}

LogicalResult AndAttr::verify(EmitErrorFn emitError, ArrayAttr members) {
  return verifyMembers(emitError, "and", members);
}

static LogicalResult verifyMembersShape(ArrayAttr members,
                                        EmitErrorFn emitError,
                                        const MaskShape &shape) {
  for (Attribute member : members)
    if (failed(cast<MaskAttrInterface>(member).verifyShape(emitError, shape)))
      return failure();
  return success();
}

LogicalResult OrAttr::verifyShape(EmitErrorFn emitError,
                                  const MaskShape &shape) const {
  return verifyMembersShape(getMembers(), emitError, shape);
}

LogicalResult AndAttr::verifyShape(EmitErrorFn emitError,
                                   const MaskShape &shape) const {
  return verifyMembersShape(getMembers(), emitError, shape);
}

static bool anyMemberUsesSegments(ArrayAttr members) {
  return llvm::any_of(members, [](Attribute member) {
    return cast<MaskAttrInterface>(member).usesSegments();
  });
}

bool SegmentsAttr::usesSegments() const { return true; }
bool OrAttr::usesSegments() const { return anyMemberUsesSegments(getMembers()); }
bool AndAttr::usesSegments() const { return anyMemberUsesSegments(getMembers()); }

//===----------------------------------------------------------------------===//
// Score mods
//===----------------------------------------------------------------------===//

LogicalResult AlibiAttr::verify(EmitErrorFn emitError,
                                APFloat maxBias) {
  return checkPositiveFinite(emitError, "alibi", "max_bias", maxBias);
}

LogicalResult SoftcapAttr::verify(EmitErrorFn emitError, APFloat cap) {
  return checkPositiveFinite(emitError, "softcap", "cap", cap);
}

/// Relative-position tables (rel_table columns) of at most 2^16 entries
/// per head: models use tens to hundreds; the lowerings unroll tables of
/// this size into constants.
static constexpr int64_t kMaxTableColumns = int64_t(1) << 16;

LogicalResult ShawBiasAttr::verify(EmitErrorFn emitError,
                                   int64_t maxDistance) {
  if (failed(
          checkPositive(emitError, "shaw_bias", "max_distance", maxDistance)))
    return failure();
  return checkAtMost(emitError, "shaw_bias", "max_distance", maxDistance,
                     kMaxTableColumns / 2 - 1, "2^15 - 1");
}

int64_t ShawBiasAttr::getTableColumns() const { return 2 * getMaxDistance() + 1; }

LogicalResult T5BiasAttr::verify(EmitErrorFn emitError, int64_t buckets,
                                 int64_t maxDistance, bool bidirectional) {
  // T5 keeps half of the buckets exact and log-spaces the rest, separately
  // per direction when bidirectional: it needs >= 2 (4) buckets.
  int64_t minBuckets = bidirectional ? 4 : 2;
  if (buckets < minBuckets)
    return emitError() << "#attn.t5_bias needs at least " << minBuckets
                       << " buckets, got " << buckets;
  if (failed(checkAtMost(emitError, "t5_bias", "buckets", buckets,
                         kMaxTableColumns, "2^16")) ||
      // The lowerings tabulate a bucket per distance up to max_distance.
      failed(checkAtMost(emitError, "t5_bias", "max_distance", maxDistance,
                         kMaxTableColumns, "2^16")))
    return failure();
  int64_t exact = (bidirectional ? buckets / 2 : buckets) / 2;
  if (maxDistance <= exact)
    return emitError() << "#attn.t5_bias max_distance (" << maxDistance
                       << ") must exceed the " << exact
                       << " exactly-bucketed distances";
  return success();
}

int64_t T5BiasAttr::getTableColumns() const { return getBuckets(); }

static LogicalResult verifyPerHead(EmitErrorFn emitError, StringRef attr,
                                   StringRef name, size_t count,
                                   int64_t numHeads) {
  if (ShapedType::isDynamic(numHeads) || count == 1 ||
      static_cast<int64_t>(count) == numHeads)
    return success();
  return emitError() << "#attn." << attr << " has " << count << " " << name
                     << "; expected 1 or one per query head (" << numHeads
                     << ")";
}

LogicalResult DistanceWeightAttr::verify(EmitErrorFn emitError,
                                         ArrayRef<APFloat> weights,
                                         APFloat threshold) {
  if (weights.empty())
    return emitError() << "#attn.distance_weight needs at least one weight";
  for (const APFloat &w : weights)
    if (!w.isFinite())
      return emitError() << "#attn.distance_weight weights must be finite";
  if (!threshold.isFinite())
    return emitError() << "#attn.distance_weight threshold must be finite";
  return success();
}

LogicalResult DistanceWeightAttr::verifyHeads(EmitErrorFn emitError,
                                              int64_t numHeads) const {
  return verifyPerHead(emitError, "distance_weight", "weights",
                       getWeights().size(), numHeads);
}

LogicalResult AdaptiveSpanAttr::verify(EmitErrorFn emitError,
                                       ArrayRef<APFloat> spans,
                                       APFloat ramp) {
  if (spans.empty())
    return emitError() << "#attn.adaptive_span needs at least one span";
  for (const APFloat &span : spans)
    if (double z = span.convertToDouble(); !std::isfinite(z) || z < 0)
      return emitError() << "#attn.adaptive_span spans must be finite and "
                            ">= 0, got "
                         << span.convertToDouble();
  return checkPositiveFinite(emitError, "adaptive_span", "ramp", ramp);
}

LogicalResult AdaptiveSpanAttr::verifyHeads(EmitErrorFn emitError,
                                            int64_t numHeads) const {
  return verifyPerHead(emitError, "adaptive_span", "spans", getSpans().size(),
                       numHeads);
}
