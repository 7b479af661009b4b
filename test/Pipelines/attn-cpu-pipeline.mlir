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
// Where the CPU has no f32 -> bf16 instruction (HostCompiler and
// attn-compile ask for this from the target's features), the conversions
// become integer arithmetic before the LLVM conversions: LLVM would
// otherwise call __truncsfbf2, which neither the JIT nor artifacts link.
// RUN: attn-opt %s --attn-cpu-pipeline="expand-bf16=true" --dump-pass-pipeline 2>&1 >/dev/null | FileCheck %s --check-prefix=EXPAND
// EXPAND: convert-scf-to-cf{{.*}},
// EXPAND-NEXT: arith-expand{include-bf16=true
// EXPAND-NEXT: expand-strided-metadata
// RUN: attn-opt %S/../e2e/half.mlir --attn-cpu-pipeline="vector-bits=256 expand-bf16=true" | FileCheck %s --check-prefix=EXPANDED
// RUN: attn-opt %S/../e2e/half.mlir --attn-cpu-pipeline="vector-bits=256" | FileCheck %s --check-prefix=NATIVE
// EXPANDED-NOT: llvm.fptrunc {{.*}} to bf16
// EXPANDED: llvm.func @bf16_window_gqa
// EXPANDED-NOT: llvm.fptrunc {{.*}} to bf16
// NATIVE: llvm.fptrunc {{.*}} : f32 to bf16
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
// Paged caches the kernels did not read in place are gathered after them.
// CHECK-NEXT: attn-decompose-paged-kv,
// The backward (attn.attention_grad): the fused kernel where it covers the
// op, else loops of linalg (the generic path's only lowering).
// CHECK-NEXT: attn-attention-grad-to-cpu{count-tiles=false vector-bits=512},
// CHECK-NEXT: attn-lower-attention-grad{count-tiles=false key-tile=64 query-tile=64},
// CHECK-NEXT: attn-lower-online-attention,
// CHECK: one-shot-bufferize{allow-return-allocs-from-loops=true
// CHECK-SAME: bufferize-function-boundaries=true
// CHECK-NEXT: buffer-results-to-out-params{add-result-attr=false hoist-dynamic-allocs=true hoist-static-allocs=true modify-public-functions=true},
// CHECK: convert-scf-to-openmp{num-threads=2},
// CHECK-NEXT: attn-inline-alloca-scopes,
// CHECK-NOT: arith-expand
// CHECK: reconcile-unrealized-casts
// CHECK-NEXT: )
// RUN: attn-opt %s --attn-cpu-pipeline="cpu-kernels=false" --dump-pass-pipeline 2>&1 >/dev/null | FileCheck %s --check-prefix=GENERIC
// GENERIC-NOT: attn-kernelized-to-cpu
// GENERIC-NOT: attn-attention-grad-to-cpu
// GENERIC: attn-fourier-mix-to-call,
// GENERIC-NEXT: canonicalize
// GENERIC-NEXT: cse
// GENERIC-NEXT: attn-tile{kv-tile=128 q-tile=64 target=},
// GENERIC-NEXT: attn-decompose-paged-kv,
// GENERIC-NEXT: attn-lower-attention-grad{count-tiles=false key-tile=64 query-tile=64},
// GENERIC-NEXT: attn-lower-online-attention,
// GENERIC-NOT: attn-to-cpu-kernels
func.func @f() {
  return
}
