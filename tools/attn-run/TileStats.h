//===- TileStats.h - attn-run --stats ---------------------------*- C++ -*-===//
#ifndef ATTN_TOOLS_ATTN_RUN_TILESTATS_H
#define ATTN_TOOLS_ATTN_RUN_TILESTATS_H

#include "attn/Compiler/TileCounters.h"
#include "attn/Tooling/Reference.h"
#include <optional>

namespace attnrt {

/// Prints the key tiles the kernel visited against the ones the pattern
/// keeps something of (by the reference's per-element test).
void printTileStats(const TileCounts &counts,
                    const std::optional<reference::AttentionProblem> &problem);

/// The backward's passes (attn-run --backward --stats) against the tiles
/// of its tiling that the pattern keeps something of.
void printBackwardTileStats(const TileCounts &counts,
                            const reference::AttentionProblem &problem);

} // namespace attnrt

#endif // ATTN_TOOLS_ATTN_RUN_TILESTATS_H
