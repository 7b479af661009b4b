//===- ScoreRegionProgram.h - a score region for the reference --*- C++ -*-===//
//
// --check's reference evaluates an attention's custom score region in
// double precision: its ops are translated once into a list of steps on
// numbered slots (no MLIR object is referenced after that), which the
// reference runs per logit.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTN_RUN_SCOREREGIONPROGRAM_H
#define ATTN_TOOLS_ATTN_RUN_SCOREREGIONPROGRAM_H

#include "attn/Tooling/Reference.h"
#include "mlir/IR/Region.h"
#include "mlir/Support/LLVM.h"

namespace attnrt {

/// The region `score` as a reference ScoreFunction. Its captured tensors
/// (mlir::attn::capturedFloatTensors) that are constants carry their
/// values; the others are read from the data bound to roles "captured<n>"
/// (bindCapturedData). Fails, reporting at the op, on an op it cannot
/// evaluate.
mlir::FailureOr<reference::ScoreFunction> scoreFunctionOf(mlir::Region &score);

/// The role of the n-th captured tensor of a score region.
std::string capturedRole(size_t n);

} // namespace attnrt

#endif // ATTN_TOOLS_ATTN_RUN_SCOREREGIONPROGRAM_H
