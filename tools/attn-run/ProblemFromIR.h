//===- ProblemFromIR.h - reference problems from attn ops -------*- C++ -*-===//
#ifndef ATTN_TOOLS_ATTNRUN_PROBLEMFROMIR_H
#define ATTN_TOOLS_ATTNRUN_PROBLEMFROMIR_H

#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Tooling/Reference.h"

namespace attnrt {

/// The operands of an op attn-run checks, with their role names.
using RoleList = std::vector<std::pair<mlir::Value, std::string>>;

/// The roles of attn.attention's operands: q, k, v, mask, bias,
/// q_segments, kv_segments, rel_table (null values where absent), then
/// captured<n> for the score region's captured tensors that are not
/// constants.
RoleList attentionRoles(mlir::attn::AttentionOp op);

/// Points the problem's score region at its captured tensors' data.
void bindCapturedData(
    reference::AttentionProblem &pb,
    llvm::function_ref<const float *(llvm::StringRef role)> dataOf);

/// Copies the sizes, scale, alignment, pattern and mods of `op` (static
/// shapes) into a reference problem; operand pointers are left to the caller.
mlir::FailureOr<reference::AttentionProblem>
problemFromAttention(mlir::attn::AttentionOp op);

} // namespace attnrt

#endif // ATTN_TOOLS_ATTNRUN_PROBLEMFROMIR_H
