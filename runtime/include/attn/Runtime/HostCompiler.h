//===- HostCompiler.h - compile attn IR for this machine --------*- C++ -*-===//
#ifndef ATTN_RUNTIME_HOSTCOMPILER_H
#define ATTN_RUNTIME_HOSTCOMPILER_H

#include "attn/Runtime/Jit.h"

namespace attnrt {

/// How bf16 attention products run on the CPU kernels.
enum class Bf16Products {
  Auto,  ///< AMX where usable, else vdpbf16ps where the CPU has it, else Widen
  Amx,   ///< AMX tiles (an error where the CPU or OS does not allow them)
  Dot,   ///< vdpbf16ps (an error without AVX-512 BF16)
  Widen, ///< bf16 widened to f32 vectors
};

struct HostCompileOptions {
  unsigned numThreads = 0;      ///< 0: all cores
  int64_t genericQueryTile = 64; ///< attn-tile (generic path)
  int64_t genericKeyTile = 128;
  int64_t cpuKeyTile = 0;        ///< attn-to-cpu-kernels; 0: per pattern
  bool cpuKernels = true;        ///< false: generic path only
  int64_t vectorBits = 0;        ///< 0: this CPU's (256 or 512)
  bool countTiles = false;       ///< report key tiles (TileCounters.h)
  Bf16Products bf16Products = Bf16Products::Auto;
};

/// Asks Linux for this process's permission to use AMX tile data
/// (arch_prctl ARCH_REQ_XCOMP_PERM); true when granted. Once per process,
/// for all its threads; false on other systems and CPUs.
bool enableAmxTiles();

/// The vector width kernels compiled with `options` are blocked for: its
/// vectorBits, else 512 on CPUs with AVX-512, else 256.
int64_t hostVectorBits(const HostCompileOptions &options);

/// Whether bf16 products compiled with `options` run on AMX tiles (Auto or
/// Amx, 512-bit blocking, the OS allowing the tile state).
bool bf16ProductsOnAmx(const HostCompileOptions &options);

/// Whether they run by vdpbf16ps instead (Dot, or Auto without usable AMX;
/// 512-bit blocking on a CPU with AVX-512 BF16: Zen 4 / 5, Cooper Lake).
bool bf16ProductsByDot(const HostCompileOptions &options);

/// Marks every public function for the C interface, lowers `module` (attn IR
/// on tensors) with attn-cpu-pipeline blocked for this CPU's vector
/// registers, and JIT-compiles it. Diagnostics go to the context's handler.
llvm::Expected<std::unique_ptr<JitKernel>>
compileForHost(mlir::ModuleOp module, const HostCompileOptions &options);

} // namespace attnrt

#endif // ATTN_RUNTIME_HOSTCOMPILER_H
