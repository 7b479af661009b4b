//===- HostCompiler.h - compile attn IR for this machine --------*- C++ -*-===//
#ifndef ATTN_COMPILER_HOSTCOMPILER_H
#define ATTN_COMPILER_HOSTCOMPILER_H

#include "attn/Analysis/TargetDescription.h"
#include "attn/Compiler/Jit.h"

namespace attnrt {

/// How bf16 attention products run on the CPU kernels.
enum class Bf16Products {
  Auto,  ///< AMX where usable, else vdpbf16ps where the CPU has it, else Widen
  Amx,   ///< AMX tiles (an error where the CPU or OS does not allow them)
  Dot,   ///< vdpbf16ps (an error without AVX-512 BF16)
  Widen, ///< bf16 widened to f32 vectors
};

struct HostCompileOptions {
  unsigned numThreads = 0;       ///< 0: all cores
  int64_t genericQueryTile = 64; ///< attn-tile (generic path)
  int64_t genericKeyTile = 128;
  int64_t cpuKeyTile = 0;  ///< attn-to-cpu-kernels; 0: per pattern
  bool cpuKernels = true;  ///< false: generic path only
  std::string target;      ///< a CPU target name; empty: this CPU's
  bool countTiles = false; ///< report key tiles (TileCounters.h)
  Bf16Products bf16Products = Bf16Products::Auto;
};

/// Asks Linux for this process's permission to use AMX tile data
/// (arch_prctl ARCH_REQ_XCOMP_PERM); true when granted. Once per process,
/// for all its threads; false on other systems and CPUs.
bool enableAmxTiles();

/// The target kernels compiled with `options` are for (the module's
/// #attn.target): `target`, else this CPU's features
/// (TargetDescription::forCpuFeatures), less what `bf16Products` rules out
/// (Widen: AMX and AVX-512 BF16; Dot: AMX) and AMX where the OS refuses the
/// tile state. An error for an unknown or GPU target, a target using
/// features this CPU lacks, or a bf16Products this target cannot honour.
llvm::Expected<mlir::attn::TargetDescription>
hostTarget(const HostCompileOptions &options);

/// Marks every public function for the C interface, lowers `module` (attn IR
/// on tensors) with attn-cpu-pipeline for hostTarget(options), and
/// JIT-compiles it. Diagnostics go to the context's handler.
llvm::Expected<std::unique_ptr<JitKernel>>
compileForHost(mlir::ModuleOp module, const HostCompileOptions &options);

} // namespace attnrt

#endif // ATTN_COMPILER_HOSTCOMPILER_H
