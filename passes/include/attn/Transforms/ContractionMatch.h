//===- ContractionMatch.h - C[batch, m, n] += A B ---------------*- C++ -*-===//
//
// The contractions attn's GEMM (attn-matmul-to-cpu-gemm) takes from the
// decompositions' linalg.generic ops: f32, a multiply-add body, one
// reduction loop k, C's last two dims m and n, every other loop a batch
// loop that C indexes (A and B may or may not). Matched on tensors (so
// that attn-parallelize-linalg leaves them whole) and on buffers.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_CONTRACTIONMATCH_H
#define ATTN_TRANSFORMS_CONTRACTIONMATCH_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include <optional>

namespace mlir::attn {

struct ContractionMatch {
  unsigned m, n, k;                 ///< loop dims
  SmallVector<unsigned> batchDims;  ///< C's other dims, outermost first
  bool aTransposed = false;         ///< A stores k before m
  bool bTransposed = false;         ///< B stores n before k ([N, K])
  bool swapped = false;             ///< A is the op's second input
};

/// Whether `op` computes C += A B (with batch loops) and in which layout.
std::optional<ContractionMatch> matchContraction(linalg::GenericOp op);

/// Whether the body of `op` (two inputs, one output) yields out + in0 * in1.
bool hasMultiplyAddBody(linalg::GenericOp op);

/// The factors l and r of a body that yields out + l * r (either order of
/// each operation), whatever computes them; nothing for another body.
std::optional<std::pair<Value, Value>>
multiplyAddFactors(linalg::GenericOp op);

/// Whether `v` is `source` widened to f32 by an arith.extf.
bool isWidenedToF32(Value v, Value source);

/// Whether `op` is a 2-D product: two inputs, one output, loops (parallel
/// m, parallel n, reduction k); on tensors or buffers, or on buffers only.
bool isProductGeneric(linalg::GenericOp op);
bool isBufferProductGeneric(linalg::GenericOp op);

/// Whether a linalg.matmul reads A [M, K] and B transposed ([N, K], as a
/// layer's weights are stored: true) or not ([K, N]: false); nothing for
/// other indexing maps.
std::optional<bool> matmulTransposesB(linalg::MatmulOp op);

/// The map B (the weight) is read through in a 2-D product that reads A at
/// (m, k) and writes C at (m, n) (a layer's product: B in packed panels
/// such as (n floordiv W, k, n mod W)); null for any other op.
AffineMap packedWeightMap(linalg::GenericOp op);

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_CONTRACTIONMATCH_H
