// RUN: attn-opt %s --attn-interchange-reductions | FileCheck %s

// FAVOR+'s normalizer: out[b, h, r] = sum_n phi[b, h, n, r]. The reduction
// loop n moves outside r, so the inner loop reads phi's rows and updates
// out's row contiguously.
#phi = affine_map<(b, h, r, n) -> (b, h, n, r)>
#sum = affine_map<(b, h, r, n) -> (b, h, r)>
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func.func @key_sums
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
func.func @key_sums(%phi: tensor<1x2x64x16xf32>, %init: tensor<1x2x16xf32>) -> tensor<1x2x16xf32> {
  %r = linalg.generic {indexing_maps = [#phi, #sum], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
    ins(%phi : tensor<1x2x64x16xf32>) outs(%init : tensor<1x2x16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x2x16xf32>
  return %r : tensor<1x2x16xf32>
}

// Row sums read their input along the reduction: left alone.
#row = affine_map<(b, l, d) -> (b, l, d)>
#rowsum = affine_map<(b, l, d) -> (b, l)>
// CHECK-LABEL: func.func @row_sums
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
func.func @row_sums(%x: tensor<2x8x16xf32>, %init: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %r = linalg.generic {indexing_maps = [#row, #rowsum], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x : tensor<2x8x16xf32>) outs(%init : tensor<2x8xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}
