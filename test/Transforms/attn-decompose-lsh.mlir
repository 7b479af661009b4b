// RUN: attn-opt %s --attn-decompose-lsh --canonicalize --cse | FileCheck %s

// L = 10 in chunks of 4 (3 chunks, the last one half full), 3 rounds of 4
// buckets, causal:
// - buckets [B, H, rounds, L] (i64) by an argmax loop over the 4 signed
//   projections [xR, -xR];
// - one runtime counting sort of the B * H * rounds = 6 rows of 10;
// - queries gathered by chunk [.., 3 chunks, 4, D], keys and values by
//   chunk and its predecessor [.., 3, 8, D], with their positions;
// - the score mask: a present key, same bucket, not the query itself, not
//   later (causal);
// - the rounds' outputs and log-sum-exps read back in sequence order through
//   the ranks, combined, and a query without keys takes its own value row.
// CHECK-LABEL: func.func @lsh
// CHECK-SAME: (%[[QK:.*]]: tensor<1x2x10x16xf32>, %[[V:.*]]: tensor<1x2x10x8xf32>, %[[R:.*]]: tensor<3x16x2xf32>)
// CHECK: %[[PROJ:.*]] = linalg.generic {{.*}} ins(%[[QK]], %[[R]] : tensor<1x2x10x16xf32>, tensor<3x16x2xf32>) outs(%{{.*}} : tensor<1x2x3x10x2xf32>)
// CHECK: %[[BUCKET:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x3x10xi64>)
// CHECK:   scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args({{.*}}) -> (f32, i64)
// CHECK:     tensor.extract %[[PROJ]]
// CHECK:     arith.cmpf ogt
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[BUCKET]] {{\[}}[0, 1, 2], [3]] : tensor<1x2x3x10xi64> into tensor<6x10xi64>
// CHECK: call @attn_counting_sort({{.*}}) : (memref<?x?xi64>, memref<?x?xi64>, memref<?x?xi64>, memref<?x?xi64>) -> ()
// CHECK: %[[ORDER:.*]] = tensor.expand_shape {{.*}} : tensor<6x10xi64> into tensor<1x2x3x10xi64>
// CHECK: %[[RANK:.*]] = tensor.expand_shape {{.*}} : tensor<6x10xi64> into tensor<1x2x3x10xi64>
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x3x3x4x16xf32>)
// CHECK:   tensor.extract %[[ORDER]]
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x3x3x8x16xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x3x3x8x8xf32>)
// CHECK:   tensor.extract %[[V]]
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x3x3x4x8xf32>)
// CHECK:   arith.cmpi sge
// CHECK:   arith.cmpi eq
// CHECK:   arith.cmpi ne
// CHECK:   arith.cmpi sle
// CHECK:   arith.select %{{.*}}, %{{.*}}, %cst
// CHECK: math.exp
// CHECK: math.log
// CHECK: linalg.generic {{.*}} ins(%[[RANK]] : tensor<1x2x3x10xi64>) outs(%{{.*}} : tensor<1x2x3x10x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[RANK]] : tensor<1x2x3x10xi64>) outs(%{{.*}} : tensor<1x2x3x10xf32>)
// CHECK: %[[O:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[V]] : tensor<1x2x10x8xf32>, tensor<1x2x10xf32>, tensor<1x2x10x8xf32>)
// CHECK-NOT: attn.lsh
// CHECK: return %[[O]]
func.func @lsh(%qk: tensor<1x2x10x16xf32>, %v: tensor<1x2x10x8xf32>,
               %r: tensor<3x16x2xf32>) -> tensor<1x2x10x8xf32> {
  %o = attn.lsh %qk, %v rotations(%r) buckets = 4 rounds = 3 chunk = 4 causal
      : (tensor<1x2x10x16xf32>, tensor<1x2x10x8xf32>, tensor<3x16x2xf32>)
      -> tensor<1x2x10x8xf32>
  return %o : tensor<1x2x10x8xf32>
}

// Without causal there is no position comparison in the mask.
// CHECK-LABEL: func.func @lsh_non_causal
// CHECK: arith.cmpi ne
// CHECK-NOT: arith.cmpi sle
// CHECK: math.exp

// The runtime function, declared once for the module.
// CHECK-LABEL: func.func private @attn_counting_sort(memref<?x?xi64>, memref<?x?xi64>, memref<?x?xi64>, memref<?x?xi64>) attributes {llvm.emit_c_interface}
// CHECK-NOT: @attn_counting_sort
func.func @lsh_non_causal(%qk: tensor<1x1x8x16xf32>, %v: tensor<1x1x8x16xf32>,
                          %r: tensor<1x16x1xf32>) -> tensor<1x1x8x16xf32> {
  %o = attn.lsh %qk, %v rotations(%r) buckets = 2 rounds = 1 chunk = 4
      : (tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x16x1xf32>)
      -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}
