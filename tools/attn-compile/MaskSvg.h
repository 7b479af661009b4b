//===- MaskSvg.h - draw the tile classification of a mask -------*- C++ -*-===//
#ifndef ATTN_TOOLS_MASKSVG_H
#define ATTN_TOOLS_MASKSVG_H

#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/IR/TileSchedule.h"
#include "llvm/Support/raw_ostream.h"

namespace attnspec {

/// Writes an SVG picture of the key tiles each query tile of `head` visits
/// (full / partial / skipped), as the CPU kernels' schedule lists them.
/// Needs static lengths; errors are reported on the op.
mlir::LogicalResult writeMaskSvg(mlir::attn::AttentionOp op,
                                 mlir::attn::QueryTiling queryTiling,
                                 int64_t keyTile, int64_t head,
                                 llvm::raw_ostream &os);

} // namespace attnspec

#endif // ATTN_TOOLS_MASKSVG_H
