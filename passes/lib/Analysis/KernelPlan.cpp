//===- KernelPlan.cpp - target-neutral planning of attention kernels ------===//
#include "attn/Analysis/KernelPlan.h"
#include "attn/Dialect/Attn/IR/MaskAlgebra.h"
#include <numeric>

using namespace mlir;
using namespace mlir::attn;

bool mlir::attn::isTablePattern(MaskAttrInterface m) {
  return isa<RandomBlocksAttr, BlockLayoutAttr>(m);
}

/// The gcd of the blocks of the pattern's table members (0: none).
static int64_t tableBlockGcd(MaskAttrInterface pattern) {
  int64_t blocks = 0;
  walkMask(pattern, [&](MaskAttrInterface m) {
    if (auto random = dyn_cast<RandomBlocksAttr>(m))
      blocks = std::gcd(blocks, random.getBlock());
    if (auto layout = dyn_cast<BlockLayoutAttr>(m))
      blocks = std::gcd(blocks, layout.getBlock());
  });
  return blocks;
}

/// The key tile: `keyTile`, or when 0, 128 for dense and causal attention
/// and 32 for sparser patterns. A band's two edges cost about one partial
/// tile each per query tile, so narrower tiles waste less; with 32 keys the
/// 513-wide window of bench/attn-sparse-bench runs at 71-85 % of the dense
/// kernel's rate on kept entries, against 64-82 % with 64 keys (N = 4096 to
/// 65536, two runs each). Dense work prefers 128: fewer rescales per key. Table
/// patterns are looked up once per key tile and query, which needs every key
/// tile to lie inside one of their blocks: the key tile shrinks to the largest
/// divisor of their blocks' gcd that fits.
int64_t mlir::attn::keyTileFor(MaskAttrInterface pattern, int64_t keyTile) {
  if (keyTile == 0)
    keyTile = !pattern || isa<CausalAttr>(pattern) ? 128 : 32;
  int64_t blocks = tableBlockGcd(pattern);
  if (!blocks)
    return keyTile;
  int64_t tile = std::min(keyTile, blocks);
  while (blocks % tile)
    --tile;
  return tile;
}

/// Query tiles restart at every table block when blocks are at least two
/// tiles long and not a multiple of them (64 rows on 24-row AVX2 tiles:
/// 24 + 24 + 16): a tile straddling two query blocks would visit the key
/// blocks of both, half masked. Block layouts then have full tiles only;
/// for BigBird the saving and the padded rows cancel out (measured).
QueryTiling mlir::attn::queryTilingFor(MaskAttrInterface pattern,
                                       Blocking blocking) {
  QueryTiling tiling{blocking.queryTile(), 0};
  int64_t blocks = tableBlockGcd(pattern);
  if (blocks % tiling.tile != 0 && blocks >= 2 * tiling.tile)
    tiling.period = blocks;
  return tiling;
}

/// Segment ids are only known at run time. When the pattern is `segments`
/// or an intersection with it, each key tile is also tested against the
/// ids (min / max over the tile); the rest of the pattern is what the
/// compile-time schedule covers. Returns that rest (null: keeps all).
std::pair<bool, MaskAttrInterface>
mlir::attn::splitRuntimeSegments(MaskAttrInterface pattern) {
  if (isa_and_nonnull<SegmentsAttr>(pattern))
    return {true, MaskAttrInterface()};
  auto andAttr = dyn_cast_or_null<AndAttr>(pattern);
  if (!andAttr ||
      llvm::none_of(andAttr.getMembers(), llvm::IsaPred<SegmentsAttr>))
    return {false, pattern};
  SmallVector<Attribute> rest;
  for (Attribute member : andAttr.getMembers())
    if (!isa<SegmentsAttr>(member))
      rest.push_back(member);
  if (rest.size() == 1)
    return {true, cast<MaskAttrInterface>(rest.front())};
  return {true, AndAttr::get(pattern.getContext(),
                             ArrayAttr::get(pattern.getContext(), rest))};
}

/// The schedules of `pattern` for the op's static sizes, or nothing when a
/// size is dynamic or the tables would be too large.
std::optional<OpSchedules> mlir::attn::buildSchedules(const AttentionFacts &op,
                                                      MaskAttrInterface pattern,
                                                      QueryTiling queryTiling,
                                                      int64_t keyTile) {
  MaskShape shape = op.shape;
  if (!pattern || ShapedType::isDynamic(shape.lq) ||
      ShapedType::isDynamic(shape.lk) || ShapedType::isDynamic(shape.numHeads))
    return std::nullopt;
  OpSchedules schedules;
  schedules.sharedByHeads = !dependsOnHead(pattern);
  MaskQuery q;
  q.lq = shape.lq;
  q.lk = shape.lk;
  q.delta = getAlignmentDelta(op.align, shape.lq, shape.lk) + shape.shift;
  int64_t heads = schedules.sharedByHeads ? 1 : shape.numHeads;
  for (int64_t h = 0; h < heads; ++h) {
    q.head = h;
    schedules.perHead.push_back(
        buildTileSchedule(pattern, q, queryTiling, keyTile,
                          kMaxScheduleEntries - schedules.numEntries()));
    if (!schedules.perHead.back().complete ||
        schedules.numEntries() > kMaxScheduleEntries)
      return std::nullopt;
  }
  return schedules;
}

bool mlir::attn::allowsPackedHeads(const AttentionFacts &op) {
  // Lanes hold queries of several heads: a pattern that depends on the head,
  // a table or segment ids would need per-lane heads; mods and a bias per
  // head too (a bias shared by the heads is one scalar per key).
  if (op.hasScoreMods || op.hasBiasPerHead)
    return false;
  if (!op.pattern)
    return true;
  bool positional = true;
  walkMask(op.pattern, [&](MaskAttrInterface m) {
    if (isTablePattern(m) || isa<SegmentsAttr>(m))
      positional = false;
  });
  return positional && !dependsOnHead(op.pattern);
}

KernelPlan mlir::attn::planKernel(const AttentionFacts &op,
                                  const TargetDescription &target,
                                  int64_t keyTile, bool countTiles) {
  KernelPlan plan;
  plan.elementType = op.elementType;
  plan.blocking = Blocking::forTarget(target);
  plan.keyTile = keyTileFor(op.pattern, keyTile);
  std::tie(plan.runtimeSegments, plan.staticPattern) =
      splitRuntimeSegments(op.pattern);
  plan.queryTiling = queryTilingFor(op.pattern, plan.blocking);
  plan.schedules =
      buildSchedules(op, plan.staticPattern, plan.queryTiling, plan.keyTile);
  // Without schedules (dynamic sizes) query tiles stay uniform.
  if (!plan.schedules)
    plan.queryTiling.period = 0;
  plan.countTiles = countTiles;
  // One query vector and long row blocks: half the registers hold sums.
  int64_t lanes = target.f32Lanes();
  bool mayFit = ShapedType::isDynamic(op.groupSize) ||
                ShapedType::isDynamic(op.shape.lq) ||
                op.groupSize * op.shape.lq <= lanes;
  if (target.isCpu() && mayFit && allowsPackedHeads(op))
    plan.packedHeads = Blocking{lanes, 1, target.vectorRegisters / 2};
  return plan;
}

KernelPlan mlir::attn::planGpuKernel(const AttentionFacts &op,
                                     const TargetDescription &target) {
  KernelPlan plan;
  plan.elementType = op.elementType;
  // One invocation per query row: a "blocking" of workgroupRows rows.
  plan.blocking = Blocking{1, target.workgroupRows, 1};
  // Staged K and V elements: f32, except 16-bit inputs on targets with
  // matrix units, whose tensor-core kernel stages them as they are.
  int64_t elementBytes = !target.matrixShapes.empty() && op.elementType &&
                                 op.elementType.getIntOrFloatBitWidth() == 16
                             ? 2
                             : 4;
  int64_t rowBytes = elementBytes * (std::max<int64_t>(op.headDim, 1) +
                                     std::max<int64_t>(op.valueDim, 1));
  // Every stage of the pipeline holds a key tile.
  rowBytes *= std::max<int64_t>(target.pipelineDepth, 1);
  int64_t keyTile = target.maxKeyTile;
  while (keyTile > 1 && keyTile * rowBytes > target.workgroupMemoryBytes)
    keyTile /= 2;
  if (rowBytes > target.workgroupMemoryBytes)
    keyTile = 0;
  plan.keyTile = keyTile ? keyTileFor(op.pattern, keyTile) : 0;
  std::tie(plan.runtimeSegments, plan.staticPattern) =
      splitRuntimeSegments(op.pattern);
  plan.queryTiling = queryTilingFor(op.pattern, plan.blocking);
  if (plan.keyTile)
    plan.schedules =
        buildSchedules(op, plan.staticPattern, plan.queryTiling, plan.keyTile);
  if (!plan.schedules)
    plan.queryTiling.period = 0;
  return plan;
}
