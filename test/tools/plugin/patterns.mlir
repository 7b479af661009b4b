// attn embedded in a foreign pipeline: Debian's stock mlir-opt-22 applies
// populateAttnDecompositionPatterns and populateAttnToCpuKernelsPatterns
// (through the plugin's test-attn-patterns, MLIR's greedy driver) around
// attn-tile, for the module's #attn.target; attn's pipeline builders do
// not run. The Linformer decomposes to projections and an attention, which
// the CPU kernels lower once tiled.
// A sanitized plugin cannot load into the stock (uninstrumented) mlir-opt-22.
// UNSUPPORTED: sanitize
// RUN: mlir-opt-22 --load-dialect-plugin=%attn_obj_root/lib/libAttnPlugin.so --load-pass-plugin=%attn_obj_root/lib/libAttnPlugin.so --pass-pipeline="builtin.module(attn-set-target{target=cpu-avx512},test-attn-patterns,attn-tile{kv-tile=0},test-attn-patterns)" %s | FileCheck %s

// CHECK: module attributes {attn.target = #attn.target<name = "cpu-avx512"
// CHECK-LABEL: func.func private @low_rank__attn_cpu_flash_tile
// CHECK-SAME: memref<1x2x64x16xf32>, %{{.*}}: memref<1x2x8x16xf32>, %{{.*}}: memref<1x2x8x16xf32>
// CHECK: vector.fma
// CHECK-LABEL: func.func @low_rank
// CHECK: linalg.generic
// CHECK: scf.forall
// CHECK: func.call @low_rank__attn_cpu_flash_tile
// CHECK-NOT: attn.linformer
// CHECK-NOT: attn.online_attention
func.func @low_rank(%q: tensor<1x2x64x16xf32>, %e: tensor<8x64xf32>)
    -> tensor<1x2x64x16xf32> {
  %o = attn.linformer %q, %q, %q proj(%e, %e)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>,
         tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}
