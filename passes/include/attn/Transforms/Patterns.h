//===- Patterns.h - attn's decompositions as rewrite patterns ---*- C++ -*-===//
//
// For compilers that embed attn in their own pipelines (docs/Integration.md):
// the decompositions the shared front runs, as patterns.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_PATTERNS_H
#define ATTN_TRANSFORMS_PATTERNS_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {

/// attn.linformer, attn.rope, attn.nystrom, attn.kernelized, attn.lsh and
/// attn.routing become linalg ops on tensors plus, for their softmax
/// steps, attn.attention (the attn-decompose-* passes). An op a
/// decomposition cannot take gets an error at its location and stays.
void populateAttnDecompositionPatterns(RewritePatternSet &patterns);

/// attn.attention's TilingInterface (AttentionTiling.cpp): upstream's tiling
/// drivers cut it into attn's tiled form, one (batch, head, query rows)
/// tile of attn.online_attention at a time.
void registerAttnTilingInterfaceModels(DialectRegistry &registry);

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_PATTERNS_H
