//===- ScoreModCodegen.h - score mods as IR ---------------------*- C++ -*-===//
//
// Emits the score mods of docs/Dialect.md ("Score mods") as scalar
// arithmetic on one logit. Per-head parameters (ALiBi slopes, weights,
// spans) and the T5 bucket function become small constant tables computed
// here in double precision, so run-time results match the documented
// formulas exactly at bucket boundaries.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_SCOREMODCODEGEN_H
#define ATTN_TRANSFORMS_SCOREMODCODEGEN_H

#include "attn/Dialect/Attn/IR/AttnAttrs.h"
#include "mlir/IR/Builders.h"

namespace mlir::attn {

/// Whether emitScoreMods handles `mods` with `numHeads` query heads (static
/// head counts are needed for per-head tables). On failure `reason` says why.
bool isScoreModCodegenSupported(ArrayAttr mods, int64_t numHeads,
                                std::string &reason);

/// How a kernel that applies mods to vectors of logits (one per query lane)
/// looks tables up per lane: gathers from buffers it owns.
struct ScoreModLanes {
  /// relTable[head, columns[l]] for a vector of index `columns`.
  llvm::function_ref<Value(Value head, Value columns)> relTable;
  /// values[indices[l]] of a compile-time table.
  llvm::function_ref<Value(ArrayRef<float> values, Value indices)> constant;
};

/// Whether emitScoreMods can work on vectors of logits: always with
/// `withGathers` (ScoreModLanes), else only without table mods (Shaw, T5).
bool areScoreModsVectorizable(ArrayAttr mods, bool withGathers);

/// x after the soft-cap of `mods` (if any): c * tanh(x / c). It applies to
/// the scaled score before the bias operand and every other mod, wherever
/// it is listed (docs/Dialect.md), so that a -inf bias stays -inf.
Value emitSoftcap(OpBuilder &b, Location loc, ArrayAttr mods, Value x);

/// x after every other mod of `mods`, in order. `distance` is r = j - (i +
/// delta) as an index, `head` the query head, `relTable` the rel_table operand
/// (a tensor, or a memref in GPU kernels; or null). With `x` a vector of f32 and `distance` a vector of index (same
/// lanes), mods are applied lane-wise; tables per lane go through `lanes`.
Value emitScoreMods(OpBuilder &b, Location loc, ArrayAttr mods, Value x,
                    Value distance, Value head, Value relTable,
                    int64_t numHeads, const ScoreModLanes &lanes = {});

/// The rel_table column the Shaw or T5 mod of `mods` reads at signed
/// distance `distance` (a scalar index); null when no mod reads a table.
Value emitRelTableColumn(OpBuilder &b, Location loc, ArrayAttr mods,
                         Value distance);

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_SCOREMODCODEGEN_H
