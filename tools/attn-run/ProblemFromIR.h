//===- ProblemFromIR.h - reference problems from attn ops -------*- C++ -*-===//
#ifndef ATTN_TOOLS_ATTNRUN_PROBLEMFROMIR_H
#define ATTN_TOOLS_ATTNRUN_PROBLEMFROMIR_H

#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Runtime/Reference.h"

namespace attnrt {

/// Copies the sizes, scale, alignment, pattern and mods of `op` (static
/// shapes) into a reference problem; operand pointers are left to the caller.
mlir::FailureOr<reference::AttentionProblem>
problemFromAttention(mlir::attn::AttentionOp op);

} // namespace attnrt

#endif // ATTN_TOOLS_ATTNRUN_PROBLEMFROMIR_H
