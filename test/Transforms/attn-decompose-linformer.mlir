// RUN: attn-opt %s --split-input-file --attn-decompose-linformer | FileCheck %s

// Per-head E, F: K' = E K and V' = F V contract the sequence (loops b, h,
// t, j, d: j is the one reduction, d runs innermost along rows of K), and
// attention runs over the 16 projected keys with the op's scale.
// CHECK-DAG: #[[E:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d3)>
// CHECK-DAG: #[[K:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-LABEL: func.func @per_head
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x97x40xf32>, %[[KEY:.*]]: tensor<1x2x97x40xf32>, %[[V:.*]]: tensor<1x2x97x40xf32>, %[[EP:.*]]: tensor<2x16x97xf32>, %[[FP:.*]]: tensor<2x16x97xf32>)
// CHECK: %[[KP:.*]] = linalg.generic {indexing_maps = [#[[E]], #[[K]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[EP]], %[[KEY]] : {{.*}}) outs({{.*}} : tensor<1x2x16x40xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[VP:.*]] = linalg.generic {{.*}} ins(%[[FP]], %[[V]] : {{.*}}) outs({{.*}} : tensor<1x2x16x40xf32>)
// CHECK: %[[O:.*]] = attn.attention %[[Q]], %[[KP]], %[[VP]] scale = 1.250000e-01 : (tensor<1x4x97x40xf32>, tensor<1x2x16x40xf32>, tensor<1x2x16x40xf32>) -> tensor<1x4x97x40xf32>
// CHECK-NOT: attn.linformer
// CHECK: return %[[O]]
func.func @per_head(%q: tensor<1x4x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                    %v: tensor<1x2x97x40xf32>, %e: tensor<2x16x97xf32>,
                    %f: tensor<2x16x97xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.linformer %q, %k, %v proj(%e, %f) scale = 0.125
      : (tensor<1x4x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>,
         tensor<2x16x97xf32>, tensor<2x16x97xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}

// -----

// Shared E, F ([k, Lk]) are read without a head index. Dynamic lengths
// work: the projected keys have the static size k whatever Lk is.
// CHECK-DAG: #[[SHARED:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d3)>
// CHECK-LABEL: func.func @shared_dynamic
// CHECK: tensor.empty() : tensor<1x2x32x64xf32>
// CHECK: linalg.generic {indexing_maps = [#[[SHARED]],
// CHECK: attn.attention {{.*}} : (tensor<1x2x?x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>) -> tensor<1x2x?x64xf32>
func.func @shared_dynamic(%q: tensor<1x2x?x64xf32>, %k: tensor<1x2x?x64xf32>,
                          %v: tensor<1x2x?x64xf32>, %e: tensor<32x?xf32>,
                          %f: tensor<32x?xf32>) -> tensor<1x2x?x64xf32> {
  %o = attn.linformer %q, %k, %v proj(%e, %f)
      : (tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>,
         tensor<32x?xf32>, tensor<32x?xf32>) -> tensor<1x2x?x64xf32>
  return %o : tensor<1x2x?x64xf32>
}
