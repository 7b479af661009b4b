//===- MaskCodegen.h - mask patterns as IR ----------------------*- C++ -*-===//
//
// Emits the arithmetic that evaluates a mask pattern at run time: per element
// (is (i, j) kept?) and per tile (is the tile empty / full?). Indices are
// `index` values; delta is the key-space position of query 0.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_MASKCODEGEN_H
#define ATTN_TRANSFORMS_MASKCODEGEN_H

#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "mlir/IR/Builders.h"

namespace mlir::attn {

/// What patterns beyond the positional ones read at run time.
struct MaskContext {
  Value delta;            ///< key-space position of query 0 (index)
  Value head, batch;      ///< query head and batch row (index)
  Value qSegments;        ///< [B, Lq] integer tensor, for #attn.segments
  Value kvSegments;       ///< [B, Lk] integer tensor
  MaskShape shape;        ///< static sizes, for tables of block patterns
  /// Lets a kernel supply the i1 of a pattern (or member) it evaluated
  /// itself, e.g. once per tile; a null result means "emit it here".
  llvm::function_ref<Value(MaskAttrInterface)> evaluateMember;
};

/// Whether the pattern can be evaluated by emitElementMask / emitTileClass
/// for `shape`; `withTensors` says whether segment ids and constant tables
/// (tensor.extract) may be used. On failure `reason` names the part.
bool isMaskCodegenSupported(MaskAttrInterface pattern, const MaskShape &shape,
                            bool withTensors, std::string &reason);

/// Whether the positions of `shape` (static lengths) and every constant of
/// the pattern's positional members fit in i32 with room for the
/// arithmetic on them (|v| < 2^30), so that kernels may evaluate masks on
/// i32 lanes. Dynamic lengths or larger constants need i64.
bool positionsFitInI32(MaskAttrInterface pattern, const MaskShape &shape);

/// i1: key `j` is kept for query `i`. For the positional patterns (causal,
/// window, dilated, strided, fixed, global and their or/and), `i`, `j` and
/// `delta` may instead be vectors of index or of i32 (half as wide on x86:
/// kernels use i32 when positions fit), giving a vector of i1.
Value emitElementMask(OpBuilder &b, Location loc, MaskAttrInterface pattern,
                      Value i, Value j, const MaskContext &context);

/// Sound run-time tile classification of [i0, i1) x [j0, j1) (non-empty):
/// i1 values (isEmpty, isFull). Exact for causal and window.
std::pair<Value, Value> emitTileClass(OpBuilder &b, Location loc,
                                      MaskAttrInterface pattern, Value i0,
                                      Value i1, Value j0, Value j1,
                                      Value delta);

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_MASKCODEGEN_H
