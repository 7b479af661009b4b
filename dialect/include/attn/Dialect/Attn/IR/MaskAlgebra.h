//===- MaskAlgebra.h - queries and rewrites on mask patterns ----*- C++ -*-===//
//
// Helpers over MaskAttrInterface shared by the verifier, canonicalization,
// tiling passes and tests.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_DIALECT_ATTN_IR_MASKALGEBRA_H
#define ATTN_DIALECT_ATTN_IR_MASKALGEBRA_H

#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::attn {

/// delta of MaskQuery: 0 for top_left, lk - lq for bottom_right.
int64_t getAlignmentDelta(Alignment align, int64_t lq, int64_t lk);

/// The key blocks that query block `qb` of `head` keeps under
/// #attn.random_blocks, sorted ascending. Deterministic in all arguments.
llvm::SmallVector<int64_t> getRandomBlocks(int64_t seed, int64_t count,
                                           int64_t qb, int64_t head,
                                           int64_t numKeyBlocks);

/// Whether `pattern` keeps (i, j) by j - (i + delta) alone or by segment
/// ids (causal, window, dilated, strided, segments and their or/and): a
/// block of a larger attention is then the same pattern with delta shifted
/// by its query_offset - key_offset.
bool dependsOnDistanceOnly(Attribute pattern);

/// Flattens nested or/and, removes duplicate members and unwraps singletons.
/// With static sizes it also drops what keeps everything: returns a null
/// attribute when the whole pattern keeps every (i, j) of every head.
MaskAttrInterface simplifyMask(MaskAttrInterface mask, const MaskShape &shape,
                               Alignment align);

} // namespace mlir::attn

#endif // ATTN_DIALECT_ATTN_IR_MASKALGEBRA_H
