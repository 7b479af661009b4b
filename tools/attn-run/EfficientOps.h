//===- EfficientOps.h - checking the efficient-attention ops ----*- C++ -*-===//
//
// What attn-run needs to run and check attn.linformer, attn.nystrom,
// attn.kernelized, attn.lsh, attn.routing and attn.fourier_mix: the role of
// each operand, a FLOP count, and the double-precision reference
// (tooling/lib/ReferenceEfficient.cpp) bound to the op's sizes and attributes.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTNRUN_EFFICIENTOPS_H
#define ATTN_TOOLS_ATTNRUN_EFFICIENTOPS_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnrt {

struct EfficientOpCheck {
  /// Operand -> role name (q, k, v, e_proj, f_proj, omega, qk, rotations,
  /// centroids; x).
  std::vector<std::pair<mlir::Value, std::string>> roles;
  /// FLOPs of the algorithm as documented (2 per multiply-add).
  double flops = 0;
  /// The expected output, reading the operands' buffers by role.
  std::function<std::vector<double>(
      llvm::function_ref<const float *(llvm::StringRef)>)>
      reference;
};

/// The check of `op` when it is one of the efficient ops with static
/// shapes, else std::nullopt.
std::optional<EfficientOpCheck> describeEfficientOp(mlir::Operation *op);

} // namespace attnrt

#endif // ATTN_TOOLS_ATTNRUN_EFFICIENTOPS_H
