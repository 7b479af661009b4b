//===- RunBackward.h - attn-run --backward ----------------------*- C++ -*-===//
//
// attn-run FILE.mlir --backward: the entry's attn.attention and its
// backward (attn.attention_grad) compiled and run together on a seeded
// output gradient dO (with --device, the forward on this host and the
// backward on the GPU); with --check, dQ, dK and dV against the f64
// reference's gradients (ReferenceGradients.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTNRUN_RUNBACKWARD_H
#define ATTN_TOOLS_ATTNRUN_RUNBACKWARD_H

#include "Operands.h"
#include "ProblemFromIR.h"
#include "attn/Compiler/Jit.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include <functional>
#include <list>
#include <map>

namespace attnrt {

/// What --backward takes from attn-run's main path.
struct BackwardRun {
  /// Generates (or reads) the entry's operands; "" or the message.
  std::function<std::string(mlir::func::FuncOp entry,
                            mlir::RankedTensorType resultType,
                            const RoleList &roles, std::list<Operand> &operands,
                            std::map<std::string, unsigned> &roleArgs)>
      prepareOperands;
  /// The kernel for --device, and one for this host.
  std::function<llvm::Expected<std::unique_ptr<Kernel>>(mlir::ModuleOp)>
      buildKernel, buildHostKernel;
  /// --device names a GPU: the forward (O and lse) runs on this host, the
  /// backward on the device.
  bool onDevice = false;
  bool check = false;
  /// Also the gradients of the bias, the rel_table and the score region's
  /// captured tensors (attn.attention_grad's operand_grads).
  bool operandGrads = true;
  /// --stats: the tiles each pass visited (the kernel counts them).
  bool stats = false;
  /// --perturb-output (tests of --check): added to dQ's first entry, in
  /// units of dQ's largest magnitude, or NaN written there.
  std::optional<double> perturb;
  /// --tolerance when given, else the backward's default.
  std::optional<double> tolerance;
};

/// Rewrites `entry` to return the gradients of its `forward` attention
/// with respect to q, k and v for an added last argument, dO, then runs
/// and (with check) checks it. Returns the exit status.
int runBackward(mlir::ModuleOp module, mlir::func::FuncOp entry,
                mlir::attn::AttentionOp forward, const BackwardRun &run);

} // namespace attnrt

#endif // ATTN_TOOLS_ATTNRUN_RUNBACKWARD_H
