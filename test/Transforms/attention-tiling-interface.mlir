// attn.attention implements TilingInterface (AttentionTiling.cpp): upstream's
// tile_using_forall cuts it into attn's tiled form (one online_attention
// from an empty state per (batch, head, 32 query rows), finalize_tile into
// the output rows), which attn's lowerings take like attn-tile's.
// RUN: attn-opt %s --transform-interpreter --canonicalize | FileCheck %s
// With the query tiles of the kernel's register blocks (64 rows on
// AVX-512), the vectorized CPU kernel takes the form as it stands.
// RUN: attn-opt %s --attn-set-target=target=cpu-avx512 --transform-interpreter="entry-point=rows64" --attn-to-cpu-kernels | FileCheck %s --check-prefix=KERNEL
// KERNEL-LABEL: func.func private @causal_gqa__attn_cpu_flash_tile
// KERNEL-LABEL: func.func @causal_gqa
// KERNEL: scf.forall
// KERNEL: func.call @causal_gqa__attn_cpu_flash_tile
// KERNEL-NOT: attn.online_attention
// The tiled module runs: its output equals attn's own path, which --check
// compares with the f64 reference (attn-run's random inputs are the same
// for both: same seed, same arguments).
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-opt %s --transform-interpreter -o %t/tiled.mlir
// RUN: attn-run %t/tiled.mlir --entry=causal_gqa --output %t/tiled.npy
// RUN: attn-run %s --entry=causal_gqa --check --output %t/attn.npy | FileCheck %s --check-prefix=REF
// REF: PASS
// Both are f32 online softmax over the same scores; they differ only in
// the order of the sums (32-row generic tiles against the vectorized
// kernel's blocks), a few ulps of values of size ~1.
// RUN: python3 %S/../e2e/Inputs/compare-npy.py %t/tiled.npy %t/attn.npy 1e-5 | FileCheck %s --check-prefix=SAME
// SAME: SAME
// The same with 64-row tiles, which the AVX-512 kernel takes as they stand.
// RUN: attn-opt %s --transform-interpreter="entry-point=rows64" -o %t/tiled64.mlir
// RUN: attn-run %t/tiled64.mlir --entry=causal_gqa --target=cpu-avx512 --output %t/tiled64.npy
// RUN: python3 %S/../e2e/Inputs/compare-npy.py %t/tiled64.npy %t/attn.npy 1e-5 | FileCheck %s --check-prefix=SAME
// Tiles of several heads or batch rows are refused, at the op.
// RUN: not attn-opt %s --transform-interpreter="entry-point=two_heads" 2>&1 | FileCheck %s --check-prefix=REFUSED
// REFUSED: error: 'attn.attention' op tiles of attn.attention are one batch row, one query head and a static number of query rows

// CHECK-LABEL: func.func @causal_gqa
// CHECK: scf.forall (%[[H:.*]], %[[T:.*]]) in (4, 4)
// The tile index of the online-softmax op is the loop's (the first row is
// 32 times it).
// CHECK: %[[FIRST:.*]] = affine.apply #{{.*}}(%[[T]])
// CHECK: %[[ROWS:.*]] = affine.min
// CHECK: attn.online_attention %{{.*}}, %{{.*}}, %{{.*}} tile(%c0, %[[H]], %[[T]]) state({{.*}}) query_tile = 32 key_tile = 128 pattern(#attn.causal)
// CHECK: %[[ROWS_OUT:.*]] = attn.finalize_tile
// CHECK: %[[TILE_OUT:.*]] = tensor.expand_shape %[[ROWS_OUT]] {{\[\[}}0, 1, 2], [3]] output_shape [1, 1, %[[ROWS]], 64]
// CHECK: tensor.parallel_insert_slice %[[TILE_OUT]] into %{{.*}}[0, %[[H]], %[[FIRST]], 0] [1, 1, %[[ROWS]], 64]
// CHECK-NOT: = attn.attention
func.func @causal_gqa(%q: tensor<1x4x97x64xf32>, %k: tensor<1x2x100x64xf32>,
                      %v: tensor<1x2x100x64xf32>) -> tensor<1x4x97x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x4x97x64xf32>, tensor<1x2x100x64xf32>, tensor<1x2x100x64xf32>)
      -> tensor<1x4x97x64xf32>
  return %o : tensor<1x4x97x64xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %forall = transform.structured.tile_using_forall %op tile_sizes [1, 1, 32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
  transform.named_sequence @rows64(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %forall = transform.structured.tile_using_forall %op tile_sizes [1, 1, 64] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
  transform.named_sequence @two_heads(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %forall = transform.structured.tile_using_forall %op tile_sizes [1, 2, 32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
