// The CPU pipeline, built in C++ from typed options (passes/lib/Pipelines):
// the shared front (target check, family decompositions), then the CPU tail
// (vectorized kernels before attn-tile, bufferization, OpenMP, LLVM).
// RUN: attn-opt %s --attn-cpu-pipeline="cpu-kv-tile=32 vector-bits=512 num-threads=2" --dump-pass-pipeline 2>&1 >/dev/null | FileCheck %s
// CHECK: builtin.module(
// CHECK-NEXT: attn-verify-target{target=cpu},
// CHECK-NEXT: attn-decompose-linformer,
// CHECK: attn-fourier-mix-to-call,
// CHECK: attn-to-cpu-kernels{count-tiles=false kv-tile=32 report-tiles=false vector-bits=512},
// CHECK-NEXT: attn-tile{kv-tile=128 q-tile=64},
// CHECK: one-shot-bufferize{allow-return-allocs-from-loops=true
// CHECK-SAME: bufferize-function-boundaries=true
// CHECK: convert-scf-to-openmp{num-threads=2},
// CHECK-NEXT: attn-inline-alloca-scopes,
// CHECK: reconcile-unrealized-casts
// CHECK-NEXT: )
// RUN: attn-opt %s --attn-cpu-pipeline="cpu-kernels=false" --dump-pass-pipeline 2>&1 >/dev/null | FileCheck %s --check-prefix=GENERIC
// GENERIC: attn-fourier-mix-to-call,
// GENERIC-NOT: attn-to-cpu-kernels
// GENERIC: attn-tile
func.func @f() {
  return
}
