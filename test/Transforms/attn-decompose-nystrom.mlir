// RUN: attn-opt %s --attn-decompose-nystrom --canonicalize --cse | FileCheck %s

// m = 4 landmarks on L = 10 rows (segments of 2, 3, 2, 3 rows):
// - the averaging matrix [4, 10] is built from indices (no constant),
//   begin = s * 10 / 4 and end = (s + 1) * 10 / 4;
// - landmark queries and keys (keys repeated from 1 to 2 heads);
// - Bm V is an attn.attention of the 4 landmark queries over all keys;
// - the 4 x 4 kernel goes through 2 pseudo-inverse steps (an scf.for) of
//   4 products each;
// - the output is an attn.attention of all queries over the landmark keys.
// CHECK-LABEL: func.func @nystrom
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x10x16xf32>, %[[K:.*]]: tensor<1x1x10x16xf32>, %[[V:.*]]: tensor<1x1x10x16xf32>)
// CHECK: %[[W:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x10xf32>)
// CHECK:   linalg.index 0
// CHECK:   arith.muli %{{.*}}, %c10 : index
// CHECK:   arith.divui %{{.*}}, %c4 : index
// CHECK: %[[QL:.*]] = linalg.generic {{.*}} ins(%[[W]], %[[Q]] : tensor<4x10xf32>, tensor<1x2x10x16xf32>) outs(%{{.*}} : tensor<1x2x4x16xf32>)
// CHECK: %[[KL1:.*]] = linalg.generic {{.*}} ins(%[[W]], %[[K]] : tensor<4x10xf32>, tensor<1x1x10x16xf32>) outs(%{{.*}} : tensor<1x1x4x16xf32>)
// CHECK: %[[KL:.*]] = linalg.generic {{.*}} ins(%[[KL1]] : tensor<1x1x4x16xf32>) outs(%{{.*}} : tensor<1x2x4x16xf32>)
// CHECK: %[[BMV:.*]] = attn.attention %[[QL]], %[[K]], %[[V]] : (tensor<1x2x4x16xf32>, tensor<1x1x10x16xf32>, tensor<1x1x10x16xf32>) -> tensor<1x2x4x16xf32>
// CHECK: math.exp
// CHECK: %[[Z:.*]] = scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (tensor<1x2x4x4xf32>)
// CHECK-COUNT-4: ins(%{{.*}}, %{{.*}} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>)
// CHECK-NOT: ins(%{{.*}}, %{{.*}} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>)
// CHECK: scf.yield
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%[[Z]], %[[BMV]] : tensor<1x2x4x4xf32>, tensor<1x2x4x16xf32>)
// CHECK: %[[O:.*]] = attn.attention %[[Q]], %[[KL]], %[[X]] : (tensor<1x2x10x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>) -> tensor<1x2x10x16xf32>
// CHECK-NOT: attn.nystrom
// CHECK: return %[[O]]
func.func @nystrom(%q: tensor<1x2x10x16xf32>, %k: tensor<1x1x10x16xf32>,
                   %v: tensor<1x1x10x16xf32>) -> tensor<1x2x10x16xf32> {
  %o = attn.nystrom %q, %k, %v landmarks = 4 {pinv_iterations = 2 : i64}
      : (tensor<1x2x10x16xf32>, tensor<1x1x10x16xf32>, tensor<1x1x10x16xf32>)
      -> tensor<1x2x10x16xf32>
  return %o : tensor<1x2x10x16xf32>
}
