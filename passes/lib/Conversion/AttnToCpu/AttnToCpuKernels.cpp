//===- AttnToCpuKernels.cpp - the tiled form to vectorized CPU kernels ----===//
//
// The pass (and its pattern, populateAttnToCpuKernelsPatterns): finds each
// attention in the tiled form (TiledForm.h) it covers, plans it for the
// module's #attn.target (KernelPlan.h) and replaces its loop nest by the
// kernel CpuFlashKernel emits. What it does not cover, or tiles the kernel
// cannot take, is left for attn-lower-online-attention.
//
//===----------------------------------------------------------------------===//
#include "CpuFlashKernel.h"
#include "attn/Conversion/Passes.h"
#include "attn/Conversion/Patterns.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNTOCPUKERNELS
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Whether the fast path covers `op`.
bool isSupported(OnlineAttentionOp op) {
  auto type = cast<RankedTensorType>(op.getQuery().getType());
  if (!type.getElementType().isF32() && !type.getElementType().isF16() &&
      !type.getElementType().isBF16())
    return false;
  if (!op.getScore().empty())
    return false;
  // Of biases and boolean masks, the per-key [B|1, Hq|1, 1, Lk] form (one
  // value per key row of a tile: padding masks).
  for (Value operand : {op.getBias(), op.getMask()})
    if (operand && cast<RankedTensorType>(operand.getType()).getDimSize(2) != 1)
      return false;
  std::string reason;
  if (!areScoreModsVectorizable(op.getModsAttr(), /*withGathers=*/true) ||
      !isScoreModCodegenSupported(op.getModsAttr(), type.getDimSize(1), reason))
    return false;
  return !op.getPatternAttr() ||
         isMaskCodegenSupported(op.getPatternAttr(), op.getMaskShape(),
                                /*withTensors=*/true, reason);
}

/// A remark with what the key tile loop visits (attn-compile --stats).
void reportSchedule(OnlineAttentionOp op, const KernelPlan &plan);

/// The kernel replacing `attention`'s loop nest (its results), built
/// before it in `module`; nothing when the kernel cannot take the form as
/// it stands.
std::optional<SmallVector<Value, 2>>
lowerToCpuKernel(ModuleOp module, TiledAttention attention,
                 const TargetDescription &target, bool countTiles,
                 bool reportTiles) {
  OnlineAttentionOp op = attention.tile;
  int64_t keyTile = op.getKeyTileAttr().getInt();
  KernelPlan plan =
      planKernel(AttentionFacts::of(op), target, keyTile, countTiles);
  // The kernel takes the tiled form as it stands: any key tile up to
  // 1024 rows (the score tile lives on each worker thread's stack) the
  // pattern's table blocks allow, and the query tiles of its register
  // blocks. Tiles cut otherwise go the generic way, with a remark that
  // says why.
  QueryTiling tiling = attention.queryTiling();
  if (!target.supportsElementType(plan.elementType))
    return std::nullopt;
  if (keyTile > 1024 || plan.keyTile != keyTile ||
      plan.queryTiling.tile != tiling.tile ||
      plan.queryTiling.period != tiling.period) {
    InFlightDiagnostic remark = op.emitRemark();
    remark << "attn-to-cpu-kernels: left for the generic lowering: "
           << "the kernel for target '" << target.name << "' takes ";
    if (keyTile > 1024 || plan.keyTile != keyTile)
      remark << "key tiles of at most 1024 rows that divide the "
                "pattern's table blocks ("
             << plan.keyTile << " here), not " << keyTile;
    else
      remark << "query tiles of " << plan.queryTiling.tile << " rows"
             << (plan.queryTiling.period ? " restarting at table blocks" : "")
             << ", not " << tiling.tile;
    return std::nullopt;
  }
  if (reportTiles)
    reportSchedule(op, plan);
  // Decoding shapes get a second kernel with the query heads of a
  // group packed into one vector (chosen at run time when sizes are
  // dynamic).
  std::optional<CpuFlashKernel> packed, split;
  KernelPlan packedPlan = plan;
  // The log-sum-exp comes from the per-query-tile kernel only.
  // Packed heads take no mask operand.
  if (plan.packedHeads && !plan.countTiles && !attention.lse && !op.getMask()) {
    packedPlan.blocking = *plan.packedHeads;
    packedPlan.queryTiling = {plan.packedHeads->queryTile(), 0};
    packedPlan.schedules.reset();
    packed.emplace(attention, packedPlan, /*packHeads=*/true);
    split.emplace(attention, packedPlan, /*packHeads=*/true,
                  /*splitKeys=*/true);
  }
  return CpuFlashKernel(attention, plan, /*packHeads=*/false,
                        /*splitKeys=*/false, target.bf16ProductsOnAmx(),
                        target.bf16ProductsByDot())
      .build(module, packed ? &*packed : nullptr, split ? &*split : nullptr);
}

/// The same for pattern drivers: a tiled attention's forall.
struct TiledAttentionToCpuKernel : OpRewritePattern<scf::ForallOp> {
  TiledAttentionToCpuKernel(MLIRContext *context, bool countTiles)
      : OpRewritePattern(context), countTiles(countTiles) {}

  LogicalResult matchAndRewrite(scf::ForallOp forall,
                                PatternRewriter &rewriter) const override {
    std::optional<TiledAttention> attention = matchTiledAttention(forall);
    auto module = forall->getParentOfType<ModuleOp>();
    std::optional<TargetDescription> target = TargetDescription::cpuOf(forall);
    if (!attention || !module || !target || !isSupported(attention->tile))
      return failure();
    std::optional<SmallVector<Value, 2>> results = lowerToCpuKernel(
        module, *attention, *target, countTiles, /*reportTiles=*/false);
    if (!results)
      return failure();
    rewriter.replaceOp(forall, *results);
    return success();
  }

  bool countTiles;
};

struct AttnToCpuKernelsPass
    : attn::impl::AttnToCpuKernelsBase<AttnToCpuKernelsPass> {
  using AttnToCpuKernelsBase::AttnToCpuKernelsBase;

  void runOnOperation() override {
    std::optional<TargetDescription> target =
        TargetDescription::cpuOf(getOperation());
    if (!target)
      return;
    SmallVector<TiledAttention> tiled;
    getOperation()->walk([&](scf::ForallOp forall) {
      std::optional<TiledAttention> match = matchTiledAttention(forall);
      if (match && isSupported(match->tile))
        tiled.push_back(*match);
    });
    for (TiledAttention attention : tiled) {
      std::optional<SmallVector<Value, 2>> results = lowerToCpuKernel(
          getOperation(), attention, *target, countTiles, reportTiles);
      if (!results)
        continue;
      attention.forall.replaceAllUsesWith(*results);
      attention.forall.erase();
    }
  }
};

void reportSchedule(OnlineAttentionOp op, const KernelPlan &plan) {
  InFlightDiagnostic remark = op.emitRemark();
  remark << "query tile " << plan.blocking.queryTile();
  if (plan.queryTiling.period)
    remark << " (restarting every " << plan.queryTiling.period << " rows)";
  remark << ", key tile " << plan.keyTile << ": ";
  if (!plan.schedules) {
    remark << (plan.staticPattern ? "tiles are classified at run time "
                                    "(dynamic sizes or a large schedule)"
                                  : "every key tile is visited");
  } else {
    int64_t heads = op.getMaskShape().numHeads;
    int64_t copies = plan.schedules->sharedByHeads ? heads : 1;
    int64_t visited = 0, full = 0, total = 0;
    for (const TileSchedule &s : plan.schedules->perHead) {
      visited += copies * s.numVisited();
      full += copies * s.numFull();
      total += copies * s.numTotal();
    }
    remark << "visits " << visited << " of " << total
           << " key tiles per batch row (" << full << " full, "
           << visited - full << " partial; "
           << llvm::formatv("{0:F1}",
                            total ? 100.0 * (total - visited) / total : 0.0)
           << "% skipped)";
  }
  if (plan.runtimeSegments)
    remark << "; segment ids are tested per key tile at run time";
}

} // namespace

void mlir::attn::populateAttnToCpuKernelsPatterns(RewritePatternSet &patterns,
                                                  bool countTiles) {
  patterns.add<TiledAttentionToCpuKernel>(patterns.getContext(), countTiles);
}
