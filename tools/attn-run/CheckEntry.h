//===- CheckEntry.h - the entry attn-run runs and its check -----*- C++ -*-===//
//
// attn-run's entry function and its checked op (an attn.attention or one
// of the efficient families), the reference problem read from it, and the
// comparison of a run's result with the f64 reference (--check).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTNRUN_CHECKENTRY_H
#define ATTN_TOOLS_ATTNRUN_CHECKENTRY_H

#include "EfficientOps.h"
#include "Operands.h"
#include "ProblemFromIR.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Runtime/HalfFloat.h"
#include "attn/Tooling/Reference.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include <optional>

namespace attnrun {

/// Prints "attn-run: error: <message>" and returns EXIT_FAILURE.
int fail(const llvm::Twine &message);

/// The op attn-run checks in the entry: an attn.attention or one of the
/// efficient families, with its operands' roles.
struct CheckedOp {
  mlir::attn::AttentionOp attention;
  std::optional<attnrt::EfficientOpCheck> efficient;
  attnrt::RoleList roles;
};

/// The entry function (--entry, or the first public one) and its checked
/// op; an error message when there is none or --check has none to check.
std::string findEntry(mlir::ModuleOp module, mlir::func::FuncOp &entry,
                      CheckedOp &checked);

/// --check: the f64 reference of the checked op on the same operands,
/// compared with `result`. Returns the exit status.
int checkResult(
    const CheckedOp &checked,
    std::optional<attnrt::reference::AttentionProblem> problem,
    llvm::function_ref<attnrt::Operand *(llvm::StringRef)> operandOf,
    llvm::StringRef entrySymbol, std::vector<float> &result,
    attnrt::FloatFormat resultFormat, const std::vector<float> *lse);

/// The reference problem of the checked attention op and its FLOPs (2 per
/// multiply-add in Q K^T and P V, halved when causal), read from the IR
/// before lowering erases the op. False when --check or --stats need it
/// and it cannot be had (the error is reported at the op).
bool describeProblem(
    const CheckedOp &checked,
    std::optional<attnrt::reference::AttentionProblem> &problem, double &flops);

} // namespace attnrun

#endif // ATTN_TOOLS_ATTNRUN_CHECKENTRY_H
