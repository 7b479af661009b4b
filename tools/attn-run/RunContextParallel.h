//===- RunContextParallel.h - attn-run --context-parallel -------*- C++ -*-===//
//
// attn-run under mpirun: every rank holds the whole generated (or read)
// operands, keeps its share of the tokens, runs ring or Ulysses attention
// (runtime/include/attn/Runtime/ContextParallel.h) and the shares are
// gathered so that rank 0 checks the whole output as a single process
// would.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTN_RUN_RUNCONTEXTPARALLEL_H
#define ATTN_TOOLS_ATTN_RUN_RUNCONTEXTPARALLEL_H

#include "Operands.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Runtime/Communicator.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include <memory>
#include <string>
#include <vector>

namespace attnrt {

/// The MPI communicator of attn-run's ranks, or null with `error` set (also
/// when attn-run was built without MPI).
std::unique_ptr<Communicator> connectRanks(std::string &error);

/// Runs `attention` context-parallel with `scheme` (ring, zigzag or
/// ulysses) on the operands `operandOf` names (q, k, v, q_segments,
/// rel_table), printing each rank's line on rank 0; `output` [B, Hq, L, Dv]
/// is the gathered whole on rank 0. An error message, or "".
std::string
runContextParallel(Communicator &comm, const std::string &scheme,
                   mlir::attn::AttentionOp attention, unsigned numThreads,
                   llvm::function_ref<Operand *(llvm::StringRef)> operandOf,
                   std::vector<float> &output);

} // namespace attnrt

#endif // ATTN_TOOLS_ATTN_RUN_RUNCONTEXTPARALLEL_H
