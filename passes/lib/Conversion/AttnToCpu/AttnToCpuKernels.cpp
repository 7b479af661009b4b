//===- AttnToCpuKernels.cpp - attn.attention to vectorized CPU kernels ----===//
//
// The pass: plans each op it covers (KernelPlan.h) and replaces it by a call
// of the kernel CpuFlashKernel emits; what it does not cover is left for
// attn-tile.
//
//===----------------------------------------------------------------------===//
#include "CpuFlashKernel.h"
#include "attn/Transforms/Passes.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNTOCPUKERNELS
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Whether the fast path covers `op`.
bool isSupported(AttentionOp op) {
  auto type = cast<RankedTensorType>(op.getQuery().getType());
  if (!type.getElementType().isF32() || op.getMask() || op.getBias() ||
      !op.getScore().empty())
    return false;
  std::string reason;
  if (!areScoreModsVectorizable(op.getModsAttr(), /*withGathers=*/true) ||
      !isScoreModCodegenSupported(op.getModsAttr(), type.getDimSize(1), reason))
    return false;
  return !op.getPatternAttr() ||
         isMaskCodegenSupported(op.getPatternAttr(), op.getMaskShape(),
                                /*withTensors=*/true, reason);
}

struct AttnToCpuKernelsPass
    : attn::impl::AttnToCpuKernelsBase<AttnToCpuKernelsPass> {
  using AttnToCpuKernelsBase::AttnToCpuKernelsBase;

  void runOnOperation() override {
    // The score tile (kv-tile x query tile floats) lives on the stack of
    // each worker thread: 1024 rows are 256 KiB at 512 bits.
    if (keyTile < 0 || keyTile > 1024 ||
        (vectorBits != 256 && vectorBits != 512)) {
      getOperation()->emitError("attn-to-cpu-kernels: kv-tile must be 0 "
                                "(chosen per pattern) to 1024 and "
                                "vector-bits 256 or 512");
      return signalPassFailure();
    }
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) {
      if (isSupported(op))
        ops.push_back(op);
    });
    for (AttentionOp op : ops) {
      KernelPlan plan = planKernel(op, keyTile, vectorBits, countTiles);
      if (reportTiles)
        reportSchedule(op, plan);
      Value result = CpuFlashKernel(op, plan).build(getOperation());
      op.replaceAllUsesWith(result);
      op.erase();
    }
  }

  /// A remark with what the key tile loop visits (attn-compile --stats).
  static void reportSchedule(AttentionOp op, const KernelPlan &plan) {
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
};

} // namespace
