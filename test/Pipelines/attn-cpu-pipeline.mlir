// The CPU pipeline, built in C++ from typed options (passes/lib/Pipelines):
// the shared front (target check, family decompositions), then the CPU tail
// (the tiled form cut for the kernel plan, the vectorized kernels, the
// generic lowering of what they leave, bufferization, OpenMP, LLVM).
// RUN: attn-opt %s --attn-cpu-pipeline="cpu-kv-tile=32 target=cpu-avx512 num-threads=2" --dump-pass-pipeline 2>&1 >/dev/null | FileCheck %s
// The target is one attribute of the module (#attn.target), attached by
// the pipeline's first step and read by every pass that needs a target
// fact: the lowered module carries it, and a module's own target is kept
// when the pipeline names none.
// RUN: attn-opt %s --attn-cpu-pipeline="target=cpu-avx512" | FileCheck %s --check-prefix=ATTR
// RUN: attn-opt %s --attn-set-target=target=cpu-amx --attn-cpu-pipeline | FileCheck %s --check-prefix=KEPT
// RUN: attn-opt %s --attn-cpu-pipeline | FileCheck %s --check-prefix=DEFAULT
// ATTR: module attributes {attn.target = #attn.target<name = "cpu-avx512", vector_bits = 512, vector_registers = 32
// ATTR-NOT: features
// KEPT: module attributes {attn.target = #attn.target<name = "cpu-amx", vector_bits = 512, vector_registers = 32, l1_bytes = 49152, l2_bytes = 2097152, features = ["avx512bf16", "amx-bf16"]
// DEFAULT: module attributes {attn.target = #attn.target<name = "cpu-avx2", element_types = [f32, f16, bf16]>
// Where the target has no f32 -> bf16 instruction (neither avx512bf16 nor
// avxneconvert), attn-expand-bf16 makes the conversions integer arithmetic
// before the LLVM conversions: LLVM would otherwise call __truncsfbf2,
// which neither the JIT nor artifacts link.
// RUN: attn-opt %S/../e2e/half.mlir --attn-cpu-pipeline="target=cpu-avx2" | FileCheck %s --check-prefix=EXPANDED
// RUN: attn-opt %S/../e2e/half.mlir --attn-cpu-pipeline="target=cpu-avx512-bf16" | FileCheck %s --check-prefix=NATIVE
// EXPANDED-NOT: llvm.fptrunc {{.*}} to bf16
// EXPANDED: llvm.func @bf16_window_gqa
// EXPANDED-NOT: llvm.fptrunc {{.*}} to bf16
// NATIVE: llvm.fptrunc {{.*}} : f32 to bf16
// CHECK: builtin.module(
// CHECK-NEXT: attn-set-target{target=cpu-avx512 workgroup-rows=0},
// CHECK-NEXT: attn-verify-target,
// CHECK-NEXT: attn-kernelized-to-cpu,
// CHECK-NEXT: attn-decompose-linformer,
// CHECK: attn-fourier-mix-to-call,
// CHECK: attn-tile{for-target=true kv-tile=32 q-tile=64},
// CHECK-NEXT: attn-to-cpu-kernels{count-tiles=false report-tiles=false},
// Paged caches the kernels did not read in place are gathered after them.
// CHECK-NEXT: attn-decompose-paged-kv,
// The backward (attn.attention_grad): the fused kernel where it covers the
// op, else loops of linalg (the generic path's only lowering).
// CHECK-NEXT: attn-attention-grad-to-cpu{count-tiles=false},
// CHECK-NEXT: attn-lower-attention-grad{count-tiles=false key-tile=64 query-tile=64},
// CHECK-NEXT: attn-lower-online-attention,
// CHECK: one-shot-bufferize{allow-return-allocs-from-loops=true
// CHECK-SAME: bufferize-function-boundaries=true
// CHECK-NEXT: buffer-results-to-out-params{add-result-attr=false hoist-dynamic-allocs=true hoist-static-allocs=true modify-public-functions=true},
// CHECK: convert-scf-to-openmp{num-threads=2},
// CHECK-NEXT: attn-inline-alloca-scopes,
// CHECK: convert-scf-to-cf
// CHECK-NEXT: attn-expand-bf16,
// CHECK-NEXT: expand-strided-metadata
// CHECK: reconcile-unrealized-casts
// CHECK-NEXT: )
// RUN: attn-opt %s --attn-cpu-pipeline="cpu-kernels=false" --dump-pass-pipeline 2>&1 >/dev/null | FileCheck %s --check-prefix=GENERIC
// GENERIC-NOT: attn-kernelized-to-cpu
// GENERIC-NOT: attn-attention-grad-to-cpu
// GENERIC: attn-fourier-mix-to-call,
// GENERIC-NEXT: canonicalize
// GENERIC-NEXT: cse
// GENERIC-NEXT: attn-tile{for-target=false kv-tile=128 q-tile=64},
// GENERIC-NEXT: attn-decompose-paged-kv,
// GENERIC-NEXT: attn-lower-attention-grad{count-tiles=false key-tile=64 query-tile=64},
// GENERIC-NEXT: attn-lower-online-attention,
// GENERIC-NOT: attn-to-cpu-kernels
func.func @f() {
  return
}
