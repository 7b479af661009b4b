// The CPU pipeline, built in C++ from typed options (passes/lib/Pipelines):
// the shared front (target check, family decompositions), then the CPU tail
// (the tiled form cut for the kernel plan, the vectorized kernels, the
// generic lowering of what they leave, bufferization, OpenMP, LLVM).
// RUN: attn-opt %s --attn-cpu-pipeline="cpu-kv-tile=32 vector-bits=512 num-threads=2" --dump-pass-pipeline 2>&1 >/dev/null | FileCheck %s
// With amx (bf16 products on AMX tiles) or bf16-dot (vdpbf16ps) the
// kernels and the vector-to-LLVM conversion both take it; AVX2 blocking
// leaves the kernels without it.
// RUN: attn-opt %s --attn-cpu-pipeline="vector-bits=512 amx=true" --dump-pass-pipeline 2>&1 >/dev/null | FileCheck %s --check-prefix=AMX
// RUN: attn-opt %s --attn-cpu-pipeline="vector-bits=256 amx=true" --dump-pass-pipeline 2>&1 >/dev/null | FileCheck %s --check-prefix=AVX2
// RUN: attn-opt %s --attn-cpu-pipeline="vector-bits=512 bf16-dot=true" --dump-pass-pipeline 2>&1 >/dev/null | FileCheck %s --check-prefix=DOT
// AMX: attn-to-cpu-kernels{amx=true bf16-dot=false
// AMX: convert-vector-to-llvm{enable-amx=true
// AVX2: attn-to-cpu-kernels{amx=false
// DOT: attn-to-cpu-kernels{amx=false bf16-dot=true
// DOT: convert-vector-to-llvm{{.*}} enable-x86vector=true
// CHECK: builtin.module(
// CHECK-NEXT: attn-verify-target{target=cpu},
// CHECK-NEXT: attn-kernelized-to-cpu{vector-bits=512},
// CHECK-NEXT: attn-decompose-linformer,
// CHECK: attn-fourier-mix-to-call,
// CHECK: attn-tile{kv-tile=32 q-tile=64 target=cpu-avx512},
// CHECK-NEXT: attn-to-cpu-kernels{amx=false bf16-dot=false count-tiles=false report-tiles=false vector-bits=512},
// CHECK-NEXT: attn-lower-online-attention,
// CHECK: one-shot-bufferize{allow-return-allocs-from-loops=true
// CHECK-SAME: bufferize-function-boundaries=true
// CHECK-NEXT: buffer-results-to-out-params{add-result-attr=false hoist-dynamic-allocs=true hoist-static-allocs=true modify-public-functions=true},
// CHECK: convert-scf-to-openmp{num-threads=2},
// CHECK-NEXT: attn-inline-alloca-scopes,
// CHECK: reconcile-unrealized-casts
// CHECK-NEXT: )
// RUN: attn-opt %s --attn-cpu-pipeline="cpu-kernels=false" --dump-pass-pipeline 2>&1 >/dev/null | FileCheck %s --check-prefix=GENERIC
// GENERIC-NOT: attn-kernelized-to-cpu
// GENERIC: attn-fourier-mix-to-call,
// GENERIC-NEXT: canonicalize
// GENERIC-NEXT: cse
// GENERIC-NEXT: attn-tile{kv-tile=128 q-tile=64 target=},
// GENERIC-NEXT: attn-lower-online-attention,
// GENERIC-NOT: attn-to-cpu-kernels
func.func @f() {
  return
}
