//===- GemmEpilogue.h - element-wise steps fused into the GEMM ---*- C++ -*-===//
//
// What a layer does to a product's result before anything else reads it —
// add a bias row, apply GELU, multiply by SwiGLU's other half — written as
// an element-wise linalg.generic on C right after the product. The GEMM
// applies that generic's body to its accumulator vectors in the last
// k-block, before they are stored: C is written once, finished, instead of
// stored by the GEMM and read and written again by the element-wise pass.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOCPU_GEMMEPILOGUE_H
#define ATTN_CONVERSION_ATTNTOCPU_GEMMEPILOGUE_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::attn {

/// The element-wise generic right after `product` that updates its C in
/// place: 2-D, all parallel, C its only init (identity map), every input an
/// f32 buffer other than C read at (m, n) or broadcast along rows at (n),
/// unit inner stride, and a body of scalar arith / math ops. Null if none.
linalg::GenericOp matchGemmEpilogue(Operation *product, Value c);

/// Moves `moved` (a zero fill of C before the product, or its epilogue
/// after it) under `scf.if` the product's reduction is empty: with K = 0
/// the GEMM's k-blocks, which start from zeros and apply the epilogue, do
/// not run.
void moveUnderEmptyReduction(Operation *moved, linalg::LinalgOp product);

/// The rows x vectors of a 2-D `buffer` at (rowIndex[r], colIndex[v])
/// (row-major), columns masked, zeros on rows that are not valid (past M).
SmallVector<Value> loadTile(ImplicitLocOpBuilder &b, Value buffer,
                            VectorType vec, ArrayRef<Value> rowIndex,
                            ArrayRef<Value> rowValid,
                            ArrayRef<Value> colIndex, ArrayRef<Value> masks);

/// Whether the epilogue's body uses no value from outside it (it can then
/// be emitted in another function, given its inputs).
bool isSelfContainedEpilogue(linalg::GenericOp epilogue);

/// One micro-tile's C after `epilogue`: `acc` holds rows x vectors of C
/// (row-major), `rowIndex` / `rowValid` its rows, `colIndex` / `masks` its
/// column vectors. Inputs read at (m, n) are loaded masked on valid rows;
/// `inputs`, when given, stand for the epilogue's input buffers (e.g. as
/// arguments of the function the tile is emitted in).
SmallVector<Value> applyGemmEpilogue(ImplicitLocOpBuilder &b,
                                     linalg::GenericOp epilogue,
                                     ArrayRef<Value> acc,
                                     ArrayRef<Value> rowIndex,
                                     ArrayRef<Value> rowValid,
                                     ArrayRef<Value> colIndex,
                                     ArrayRef<Value> masks,
                                     ValueRange inputs = {});

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOCPU_GEMMEPILOGUE_H
