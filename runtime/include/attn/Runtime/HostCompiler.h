//===- HostCompiler.h - compile attn IR for this machine --------*- C++ -*-===//
#ifndef ATTN_RUNTIME_HOSTCOMPILER_H
#define ATTN_RUNTIME_HOSTCOMPILER_H

#include "attn/Runtime/Jit.h"

namespace attnrt {

struct HostCompileOptions {
  unsigned numThreads = 0;      ///< 0: all cores
  int64_t genericQueryTile = 64; ///< attn-tile (generic path)
  int64_t genericKeyTile = 128;
  int64_t cpuKeyTile = 0;        ///< attn-to-cpu-kernels; 0: per pattern
  bool cpuKernels = true;        ///< false: generic path only
  int64_t vectorBits = 0;        ///< 0: this CPU's (256 or 512)
  bool countTiles = false;       ///< report key tiles (TileCounters.h)
  /// bf16 attention products on AMX tiles where this CPU has them and the
  /// OS lets this process use them (enableAmxTiles).
  bool amx = true;
};

/// Asks Linux for this process's permission to use AMX tile data
/// (arch_prctl ARCH_REQ_XCOMP_PERM); true when granted. Once per process,
/// for all its threads; false on other systems and CPUs.
bool enableAmxTiles();

/// Marks every public function for the C interface, lowers `module` (attn IR
/// on tensors) with attn-cpu-pipeline blocked for this CPU's vector
/// registers, and JIT-compiles it. Diagnostics go to the context's handler.
llvm::Expected<std::unique_ptr<JitKernel>>
compileForHost(mlir::ModuleOp module, const HostCompileOptions &options);

} // namespace attnrt

#endif // ATTN_RUNTIME_HOSTCOMPILER_H
