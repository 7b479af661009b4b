// RUN: attn-opt %s --attn-decompose-routing --canonicalize --cse | FileCheck %s

// 3 centroids, top_k = 4, 2 query heads on 1 key/value head, 10 queries on
// 12 keys, causal:
// - the centroids at unit length, then routing scores [B, H, C, L] for the
//   queries and [B, Hkv, C, Lk] for the keys;
// - a runtime top-k per (batch, head, centroid) row: [6, 4] query members,
//   [3, 4] key members;
// - queries, keys and values gathered into [B, H, C, top_k, .] blocks (key
//   side read through head h / 2);
// - scores of each block, masked where the key's position is later than
//   the query's;
// - the query members grouped by position (runtime counting sort of the
//   2 rows of 3 * 4 members, CSR starts [2, 10 + 1]), then the mean of each
//   query's cluster outputs by a loop over its own members.
// CHECK-LABEL: func.func @routing
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x10x16xf32>, %[[K:.*]]: tensor<1x1x12x16xf32>, %[[V:.*]]: tensor<1x1x12x8xf32>, %[[C:.*]]: tensor<3x16xf32>)
// CHECK: %[[NORM:.*]] = linalg.generic {{.*}} ins(%[[C]], %[[C]] : tensor<3x16xf32>, tensor<3x16xf32>) outs(%{{.*}} : tensor<3xf32>)
// CHECK: %[[UNIT:.*]] = linalg.generic {{.*}} ins(%[[C]], %[[NORM]] : tensor<3x16xf32>, tensor<3xf32>) outs(%{{.*}} : tensor<3x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[Q]], %[[UNIT]] : tensor<1x2x10x16xf32>, tensor<3x16xf32>) outs(%{{.*}} : tensor<1x2x3x10xf32>)
// CHECK: tensor.collapse_shape {{.*}} : tensor<1x2x3x10xf32> into tensor<6x10xf32>
// CHECK: memref.alloc() {{.*}} : memref<6x4xi64>
// CHECK: call @attn_top_k_f32({{.*}}) : (memref<?x?xf32>, memref<?x?xi64>) -> ()
// CHECK: %[[QMEMBERS:.*]] = tensor.expand_shape {{.*}} : tensor<6x4xi64> into tensor<1x2x3x4xi64>
// CHECK: linalg.generic {{.*}} ins(%[[K]], %[[UNIT]] : tensor<1x1x12x16xf32>, tensor<3x16xf32>) outs(%{{.*}} : tensor<1x1x3x12xf32>)
// CHECK: call @attn_top_k_f32
// CHECK: %[[KMEMBERS:.*]] = tensor.expand_shape {{.*}} : tensor<3x4xi64> into tensor<1x1x3x4xi64>
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x3x4x16xf32>)
// CHECK:   tensor.extract %[[QMEMBERS]]
// CHECK:   tensor.extract %[[Q]]
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x3x4x16xf32>)
// CHECK:   arith.divui %{{.*}}, %c2 : index
// CHECK:   tensor.extract %[[KMEMBERS]]
// CHECK:   tensor.extract %[[K]]
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x3x4x8xf32>)
// CHECK:   tensor.extract %[[V]]
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x3x4x4xf32>)
// CHECK:   arith.cmpi sgt
// CHECK:   arith.select %{{.*}}, %cst{{.*}}, %{{.*}} : f32
// CHECK: math.exp
// CHECK: tensor.collapse_shape %[[QMEMBERS]] {{\[}}[0, 1], [2, 3]] : tensor<1x2x3x4xi64> into tensor<2x12xi64>
// CHECK: memref.alloc() {{.*}} : memref<2x12xi64>
// CHECK: memref.alloc() {{.*}} : memref<2x0xi64>
// CHECK: memref.alloc() {{.*}} : memref<2x11xi64>
// CHECK: call @attn_counting_sort({{.*}}) : (memref<?x?xi64>, memref<?x?xi64>, memref<?x?xi64>, memref<?x?xi64>) -> ()
// CHECK: %[[ORDER:.*]] = tensor.expand_shape {{.*}} : tensor<2x12xi64> into tensor<1x2x12xi64>
// CHECK: %[[STARTS:.*]] = tensor.expand_shape {{.*}} : tensor<2x11xi64> into tensor<1x2x11xi64>
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape {{.*}} : tensor<1x2x3x4x8xf32> into tensor<1x2x12x8xf32>
// CHECK: %[[O:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x10x8xf32>)
// CHECK:   tensor.extract %[[STARTS]]
// CHECK:   scf.for
// CHECK:     tensor.extract %[[ORDER]]
// CHECK:     tensor.extract %[[ROWS]]
// CHECK-NOT: attn.routing
// CHECK: return %[[O]] : tensor<1x2x10x8xf32>
func.func @routing(%q: tensor<1x2x10x16xf32>, %k: tensor<1x1x12x16xf32>,
                   %v: tensor<1x1x12x8xf32>, %c: tensor<3x16xf32>)
    -> tensor<1x2x10x8xf32> {
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 4 causal
      : (tensor<1x2x10x16xf32>, tensor<1x1x12x16xf32>, tensor<1x1x12x8xf32>,
         tensor<3x16xf32>) -> tensor<1x2x10x8xf32>
  return %o : tensor<1x2x10x8xf32>
}

// Without causal each cluster block is dense softmax attention: one
// attn.attention with (head, cluster) merged into its head dimension, for
// the attention kernels; no mask, no softmax written in linalg.
// CHECK-LABEL: func.func @routing_non_causal
// CHECK-NOT: arith.cmpi sgt
// CHECK: %[[QB:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2], [3], [4]] : tensor<1x1x2x3x16xf32> into tensor<1x2x3x16xf32>
// CHECK: %[[KB:.*]] = tensor.collapse_shape %{{.*}} : tensor<1x1x2x3x16xf32> into tensor<1x2x3x16xf32>
// CHECK: %[[VB:.*]] = tensor.collapse_shape %{{.*}} : tensor<1x1x2x3x16xf32> into tensor<1x2x3x16xf32>
// CHECK: %[[OB:.*]] = attn.attention %[[QB]], %[[KB]], %[[VB]] scale = 5.000000e-01 : (tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32>) -> tensor<1x2x3x16xf32>
// CHECK: tensor.expand_shape %[[OB]] {{\[}}[0], [1, 2], [3], [4]]
// CHECK-NOT: math.exp
// CHECK: return
func.func @routing_non_causal(%q: tensor<1x1x8x16xf32>, %v: tensor<1x1x8x16xf32>,
                              %c: tensor<2x16xf32>) -> tensor<1x1x8x16xf32> {
  %o = attn.routing %q, %q, %v centroids(%c) top_k = 3 scale = 0.5
      : (tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>,
         tensor<2x16xf32>) -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}

// CHECK-LABEL: func.func private @attn_top_k_f32(memref<?x?xf32>, memref<?x?xi64>) attributes {llvm.emit_c_interface}
// CHECK-NEXT: func.func private @attn_counting_sort(memref<?x?xi64>, memref<?x?xi64>, memref<?x?xi64>, memref<?x?xi64>) attributes {llvm.emit_c_interface}
// CHECK-NOT: func.func private
