// Debian's stock mlir-opt-22 (linked with libMLIR.so) loads attn as a
// plugin: the dialect round-trips and attn's passes and pipelines run.
// A sanitized plugin cannot load into the stock (uninstrumented) mlir-opt-22.
// UNSUPPORTED: sanitize
// RUN: mlir-opt-22 --load-dialect-plugin=%attn_obj_root/lib/libAttnPlugin.so %s | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: mlir-opt-22 --load-dialect-plugin=%attn_obj_root/lib/libAttnPlugin.so %s | mlir-opt-22 --load-dialect-plugin=%attn_obj_root/lib/libAttnPlugin.so | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: mlir-opt-22 --load-dialect-plugin=%attn_obj_root/lib/libAttnPlugin.so --load-pass-plugin=%attn_obj_root/lib/libAttnPlugin.so --pass-pipeline="builtin.module(func.func(attn-decompose-linformer),canonicalize)" %s | FileCheck %s --check-prefix=PASS
// RUN: mlir-opt-22 --load-dialect-plugin=%attn_obj_root/lib/libAttnPlugin.so --load-pass-plugin=%attn_obj_root/lib/libAttnPlugin.so --pass-pipeline="builtin.module(attn-cpu-pipeline)" %s | FileCheck %s --check-prefix=LLVM
// attn-raise in the stock tool: torch-mlir's is_causal SDPA becomes one
// causal attn.attention.
// RUN: mlir-opt-22 --load-dialect-plugin=%attn_obj_root/lib/libAttnPlugin.so --load-pass-plugin=%attn_obj_root/lib/libAttnPlugin.so --pass-pipeline="builtin.module(attn-raise,canonicalize)" %S/../../e2e/Inputs/torch-mlir/sdpa_causal.mlir | FileCheck %s --check-prefix=RAISE
// RAISE-LABEL: func.func @sdpa_causal
// RAISE-NOT: linalg.
// RAISE: attn.attention %arg0, %arg1, %arg2 pattern(#attn.causal)
// RAISE-NOT: linalg.
// Without the plugin the dialect is unknown.
// RUN: not mlir-opt-22 %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// ROUNDTRIP-LABEL: func.func @sliding
// ROUNDTRIP: attn.attention %{{.*}}, %{{.*}}, %{{.*}} pattern(#attn.window<left = 16, right = 0>) mods = [#attn.alibi<max_bias = 8.000000e+00>]
// ROUNDTRIP-LABEL: func.func @low_rank
// ROUNDTRIP: attn.linformer %{{.*}}, %{{.*}}, %{{.*}} proj(%{{.*}}, %{{.*}})

// PASS-LABEL: func.func @low_rank
// PASS: linalg.generic
// PASS: attn.attention {{.*}} : (tensor<1x2x64x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x64x16xf32>
// PASS-NOT: attn.linformer

// LLVM: llvm.func @sliding
// LLVM: llvm.func @low_rank
// LLVM-NOT: attn.

// UNKNOWN: error: Dialect `attn' not found for custom op 'attn.attention'

func.func @sliding(%q: tensor<1x2x64x16xf32>) -> tensor<1x2x64x16xf32> {
  %o = attn.attention %q, %q, %q pattern(#attn.window<left = 16, right = 0>)
         mods = [#attn.alibi<max_bias = 8.0>]
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}

func.func @low_rank(%q: tensor<1x2x64x16xf32>, %e: tensor<8x64xf32>)
    -> tensor<1x2x64x16xf32> {
  %o = attn.linformer %q, %q, %q proj(%e, %e)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>,
         tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}
