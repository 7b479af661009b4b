//===- TileCounters.h - key tiles visited by compiled kernels ---*- C++ -*-===//
//
// Kernels compiled with `count-tiles` call attn_record_tiles once per query
// tile; the JIT resolves it to the function below, which sums the counts
// over all threads. attn-run --stats reads them to show the work skipped.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_COMPILER_TILECOUNTERS_H
#define ATTN_COMPILER_TILECOUNTERS_H

#include <cstdint>

extern "C" void attn_record_tiles(int64_t queryTile, int64_t queryPeriod,
                                  int64_t keyTile, int64_t visited,
                                  int64_t partial);
/// The backward (attn-lower-attention-grad with count-tiles): its tiling
/// and the tiles one loop of its dQ pass (queryPass) or of its dK/dV pass
/// (keyPass) visited.
extern "C" void attn_record_backward_tiles(int64_t queryTile, int64_t keyTile,
                                           int64_t queryPass, int64_t keyPass);
/// The fused CPU backward (attn-attention-grad-to-cpu with count-tiles):
/// its tiling and the tiles one of its calls visited (each once, for dQ,
/// dK and dV together).
extern "C" void attn_record_backward_fused_tiles(int64_t queryTile,
                                                 int64_t keyTile,
                                                 int64_t visited);

namespace attnrt {

struct TileCounts {
  /// Tiling of the last kernel that reported (see QueryTiling).
  int64_t queryTile = 0, queryPeriod = 0, keyTile = 0;
  int64_t queryTiles = 0;           ///< calls, one per query tile
  int64_t visited = 0, partial = 0; ///< key tiles
  /// The backward's tiling and the tiles each of its passes visited.
  int64_t backwardQueryTile = 0, backwardKeyTile = 0;
  int64_t backwardQueryPass = 0, backwardKeyPass = 0;
  int64_t backwardFused = 0; ///< tiles the fused backward visited
};

void resetTileCounts();
TileCounts readTileCounts();

} // namespace attnrt

#endif // ATTN_COMPILER_TILECOUNTERS_H
