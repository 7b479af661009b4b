//===- TileStats.cpp - attn-run --stats -----------------------------------===//
#include "TileStats.h"
#include "attn/Dialect/Attn/IR/TileSchedule.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

using namespace attnrt;

/// Key tiles of the kernel's tile grid (`tiling` x key tiles) where the
/// pattern keeps some element, by the reference's per-element test (cost:
/// up to every element); `total` receives the grid's tile count.
static int64_t countNonEmptyTiles(const attnrt::reference::AttentionProblem &p,
                                  mlir::attn::QueryTiling tiling,
                                  int64_t keyTile, int64_t &total) {
  int64_t delta = p.bottomRight ? p.keyLen - p.queryLen : 0;
  int64_t count = 0;
  total = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t *qIds = p.qSegments ? p.qSegments + b * p.queryLen : nullptr;
    const int64_t *kvIds = p.kvSegments ? p.kvSegments + b * p.keyLen : nullptr;
    for (int64_t h = 0; h < p.queryHeads; ++h)
      for (int64_t t = 0; t < tiling.numTiles(p.queryLen); ++t) {
        auto [i0, i1] = tiling.rows(t, p.queryLen);
        for (int64_t j0 = 0; j0 < p.keyLen && i0 < i1; j0 += keyTile) {
          ++total;
          bool kept = !p.pattern;
          for (int64_t i = i0; !kept && i < i1; ++i)
            for (int64_t j = j0; !kept && j < std::min(p.keyLen, j0 + keyTile);
                 ++j)
              kept = attnrt::reference::isKept(*p.pattern, i, j, p.queryLen,
                                               p.keyLen, delta, h, qIds, kvIds);
          count += kept;
        }
      }
  }
  return count;
}

void attnrt::printTileStats(
    const attnrt::TileCounts &counts,
    const std::optional<attnrt::reference::AttentionProblem> &problem) {
  if (counts.queryTiles == 0 || !problem) {
    llvm::outs() << "stats: no vectorized CPU kernel ran (the generic path "
                    "does not count tiles)\n";
    return;
  }
  int64_t total = 0;
  int64_t nonEmpty = countNonEmptyTiles(
      *problem, mlir::attn::QueryTiling{counts.queryTile, counts.queryPeriod},
      counts.keyTile, total);
  llvm::outs() << llvm::formatv(
      "stats: query tile {0}{1}, key tile {2}: visited {3} of {4} key tiles "
      "({5} full, {6} partial), {7:F1}% skipped\n",
      counts.queryTile,
      counts.queryPeriod
          ? llvm::formatv(" (restarting every {0} rows)", counts.queryPeriod)
                .str()
          : std::string(),
      counts.keyTile, counts.visited, total, counts.visited - counts.partial,
      counts.partial,
      total ? 100.0 * double(total - counts.visited) / double(total) : 0.0);
  llvm::outs() << llvm::formatv(
      "stats: key tiles the pattern keeps something of (reference): {0}\n",
      nonEmpty);
}

void attnrt::printBackwardTileStats(
    const attnrt::TileCounts &counts,
    const attnrt::reference::AttentionProblem &problem) {
  int64_t total = 0;
  int64_t nonEmpty = countNonEmptyTiles(
      problem, mlir::attn::QueryTiling{counts.backwardQueryTile, 0},
      counts.backwardKeyTile, total);
  if (counts.backwardFused) {
    llvm::outs() << llvm::formatv(
        "stats: backward, query tile {0}, key tile {1}: the fused kernel "
        "visited {2} of {3} tiles; the pattern keeps something of {4} "
        "(reference)\n",
        counts.backwardQueryTile, counts.backwardKeyTile, counts.backwardFused,
        total, nonEmpty);
    return;
  }
  llvm::outs() << llvm::formatv(
      "stats: backward, query tile {0}, key tile {1}: the dQ pass visited {2} "
      "and the dK/dV pass {3} of {4} tiles; the pattern keeps something of "
      "{5} (reference)\n",
      counts.backwardQueryTile, counts.backwardKeyTile,
      counts.backwardQueryPass, counts.backwardKeyPass, total, nonEmpty);
}
