//===- Patterns.h - attn's lowerings as rewrite patterns --------*- C++ -*-===//
//
// For compilers that embed attn in their own pipelines instead of running
// attn's pipeline builders (docs/Integration.md): the lowerings as
// patterns to add to their pattern sets. Each reads the module's
// #attn.target (attn-set-target, or one the embedder attaches).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_PATTERNS_H
#define ATTN_CONVERSION_PATTERNS_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {

/// Each attention in the tiled form (attn-tile's, or one written by hand)
/// the vectorized CPU kernels can take as it stands becomes a forall
/// calling the kernel's tile function (attn-to-cpu-kernels). With
/// `countTiles`, the kernels report their key tiles (attn_record_tiles).
void populateAttnToCpuKernelsPatterns(RewritePatternSet &patterns,
                                      bool countTiles = false);

/// In a module for a GPU target, each function that computes one attention
/// of its arguments in the tiled form (or one attn.attention_grad) becomes
/// kernels of the module's `attn_kernels` gpu.module, and the function
/// goes away (attn-to-gpu-kernels; docs/Gpu.md). `countTiles` and
/// `emulateMma` as the pass's options.
void populateAttnToGpuKernelsPatterns(RewritePatternSet &patterns,
                                      bool countTiles = false,
                                      bool emulateMma = false);

} // namespace mlir::attn

#endif // ATTN_CONVERSION_PATTERNS_H
