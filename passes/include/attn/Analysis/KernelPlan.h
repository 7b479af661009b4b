//===- KernelPlan.h - target-neutral planning of attention kernels -*- C++
//-*-===//
//
// What a back end decides about one attn.attention before it emits code:
// key tile, query tiling, which part of the pattern is known at compile
// time, and the compile-time tile schedules (TileSchedule.h) listing the
// key tiles each query tile visits. attn-tile calls it to cut the op into
// the tiled form (docs/Design.md), and each back end calls it again to
// lower that form; the target description (TargetDescription.h) supplies
// the machine facts, the register blocking being the CPU target's part.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_ANALYSIS_KERNELPLAN_H
#define ATTN_ANALYSIS_KERNELPLAN_H

#include "attn/Analysis/TargetDescription.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/IR/MaskAlgebra.h"
#include "attn/Dialect/Attn/IR/TileSchedule.h"
#include <optional>

namespace mlir::attn {

/// Register blocking for a vector ISA: `lanes` f32 per register,
/// `queryVectors` registers per row of the query tile and `rows` rows per
/// block, so that rows * queryVectors accumulators, queryVectors operands
/// and one broadcast fit the register file: AVX-512 6 x 4 (24 + 4 + 1 of 32
/// zmm), AVX2 4 x 3 (12 + 3 + 1 of 16 ymm). On a Zen 3 the AVX2 4 x 3 block
/// ran 10-35 % faster than 6 x 2, which needs 8 loads per 12 FMAs instead
/// of 7 (bench/RESULTS.md).
struct Blocking {
  int64_t lanes, queryVectors, rows;
  int64_t queryTile() const { return lanes * queryVectors; }
  /// The blocking for a CPU's vector registers.
  static Blocking forTarget(const TargetDescription &target) {
    int64_t lanes = target.f32Lanes();
    return target.vectorRegisters >= 32 ? Blocking{lanes, 4, 6}
                                        : Blocking{lanes, 3, 4};
  }
};

/// What planning reads of an attention op (attn.attention or one tile of
/// it, attn.online_attention).
struct AttentionFacts {
  MaskAttrInterface pattern;
  MaskShape shape;
  Alignment align = Alignment::top_left;
  Type elementType; ///< of Q, K and V
  /// Query heads per key/value head (kDynamic when a head count is).
  int64_t groupSize = ShapedType::kDynamic;
  bool hasScoreMods = false;
  int64_t headDim = ShapedType::kDynamic, valueDim = ShapedType::kDynamic;
  /// A bias operand whose values may differ between query heads (its head
  /// dim is not statically 1).
  bool hasBiasPerHead = false;

  template <typename OpT> static AttentionFacts of(OpT op) {
    auto q = cast<ShapedType>(op.getQuery().getType());
    auto k = cast<ShapedType>(op.getKey().getType());
    int64_t group = q.isDynamicDim(1) || k.isDynamicDim(1) || !k.getDimSize(1)
                        ? ShapedType::kDynamic
                        : q.getDimSize(1) / k.getDimSize(1);
    auto v = cast<ShapedType>(op.getValue().getType());
    Value bias = op.getBias();
    return {op.getPatternAttr(),
            op.getMaskShape(),
            op.getAlignment(),
            q.getElementType(),
            group,
            op.getModsAttr() && !op.getModsAttr().empty(),
            q.getDimSize(3),
            v.getDimSize(3),
            bias && cast<ShapedType>(bias.getType()).getDimSize(1) != 1};
  }
};

/// Patterns looked up in tables per key tile and query (random blocks,
/// block layouts).
bool isTablePattern(MaskAttrInterface m);

/// The key tile for `pattern` from a requested one (0: chosen per pattern;
/// shrunk to fit the blocks of table patterns).
int64_t keyTileFor(MaskAttrInterface pattern, int64_t keyTile);

/// The query tiling of `blocking` for `pattern` (restarting at table
/// blocks where that saves work).
QueryTiling queryTilingFor(MaskAttrInterface pattern, Blocking blocking);

/// Segment ids are only known at run time. When the pattern is `segments`
/// or an intersection with it, each key tile is also tested against the
/// ids; the rest of the pattern is what the compile-time schedule covers.
/// Returns (whether ids are tested, that rest; null: keeps all).
std::pair<bool, MaskAttrInterface>
splitRuntimeSegments(MaskAttrInterface pattern);

/// Schedules beyond this many entries (4 bytes each) fall back to
/// classifying tiles at run time.
constexpr int64_t kMaxScheduleEntries = int64_t(1) << 22;

/// The compile-time schedules of an op: one per head, or one shared by all
/// heads when the pattern does not depend on the head.
struct OpSchedules {
  SmallVector<TileSchedule> perHead;
  bool sharedByHeads = true;
  int64_t numEntries() const {
    int64_t n = 0;
    for (const TileSchedule &s : perHead)
      n += s.numVisited();
    return n;
  }
};

/// The schedules of `pattern` for the op's static sizes, or nothing when a
/// size is dynamic or the tables would be too large.
std::optional<OpSchedules> buildSchedules(const AttentionFacts &op,
                                          MaskAttrInterface pattern,
                                          QueryTiling queryTiling,
                                          int64_t keyTile);

/// What a back end decides for one op before emitting its kernel.
struct KernelPlan {
  /// Of Q, K and V; the softmax state is f32 whatever it is.
  Type elementType;
  Blocking blocking;
  /// Query tiles of blocking.queryTile() rows, aligned to table blocks.
  QueryTiling queryTiling;
  int64_t keyTile = 0;
  /// Segment ids tested per tile at run time (splitRuntimeSegments).
  bool runtimeSegments = false;
  /// The part of the pattern known at compile time.
  MaskAttrInterface staticPattern;
  /// Key tile lists, when sizes are static.
  std::optional<OpSchedules> schedules;
  bool countTiles = false;
  /// Decoding: when the query heads of a key/value group times the queries
  /// fit one vector (one token of GQA/MQA, a few draft tokens), a kernel
  /// with this blocking packs them into its lanes and reads each key and
  /// value row once for the whole group. Set when the op allows it (no
  /// score mods; a pattern of positions alone) and the sizes may fit; the
  /// kernel checks the sizes at run time when they are dynamic.
  std::optional<Blocking> packedHeads;
};

/// Whether `op`'s pattern and mods allow packing the query heads of a
/// group into one query tile (planKernel's packedHeads).
bool allowsPackedHeads(const AttentionFacts &op);

/// The plan of `op` for a CPU `target`, from a requested key tile (0:
/// chosen per pattern).
KernelPlan planKernel(const AttentionFacts &op, const TargetDescription &target,
                      int64_t keyTile, bool countTiles);

/// The plan of a GPU target (docs/Gpu.md): query tiles of the workgroup's
/// rows, and key tiles as long as the target's limit and its workgroup
/// memory allow for K and V rows of the op's head dims (0 when even one key
/// row does not fit), shrunk to divide table blocks.
KernelPlan planGpuKernel(const AttentionFacts &op,
                         const TargetDescription &target);

} // namespace mlir::attn

#endif // ATTN_ANALYSIS_KERNELPLAN_H
