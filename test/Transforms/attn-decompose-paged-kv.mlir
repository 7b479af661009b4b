// RUN: attn-opt %s --split-input-file --attn-decompose-paged-kv | FileCheck %s

// A paged cache's rows, gathered: one generic over [B, H, length, D] whose
// body reads the row's page from the table (row / 16), clamps it to the
// pool's pages (a bad entry reads a wrong page, never outside the pool),
// and reads the pool at (page, head, row mod 16, d).
// CHECK-LABEL: func.func @gather
// CHECK: tensor.empty(%{{.*}}) : tensor<1x2x?x64xf32>
// CHECK: %[[PAGES:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<?x2x16x64xf32>
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK: %[[B:.*]] = linalg.index 0
// CHECK: %[[H:.*]] = linalg.index 1
// CHECK: %[[J:.*]] = linalg.index 2
// CHECK: %[[D:.*]] = linalg.index 3
// CHECK: %[[SLOT:.*]] = arith.divui %[[J]], %c16{{.*}} : index
// CHECK: %[[ENTRY:.*]] = tensor.extract %{{.*}}[%[[B]], %[[SLOT]]] : tensor<1x?xi32>
// CHECK: %[[PAGE:.*]] = arith.index_cast %[[ENTRY]] : i32 to index
// CHECK: %[[LAST:.*]] = arith.subi %[[PAGES]], %{{.*}} : index
// CHECK: %[[LOW:.*]] = arith.minsi %[[PAGE]], %[[LAST]] : index
// CHECK: %[[CLAMPED:.*]] = arith.maxsi %[[LOW]], %{{.*}} : index
// CHECK: %[[ROW:.*]] = arith.remui %[[J]], %c16{{.*}} : index
// CHECK: tensor.extract %{{.*}}[%[[CLAMPED]], %[[H]], %[[ROW]], %[[D]]] : tensor<?x2x16x64xf32>
// CHECK-NOT: attn.paged_kv
func.func @gather(%pool: tensor<?x2x16x64xf32>, %table: tensor<1x?xi32>, %n: index) -> tensor<1x2x?x64xf32> {
  %k = attn.paged_kv %pool[%table] length %n : tensor<?x2x16x64xf32>, tensor<1x?xi32> -> tensor<1x2x?x64xf32>
  return %k : tensor<1x2x?x64xf32>
}

// -----

// Unused: erased.
// CHECK-LABEL: func.func @unused
// CHECK-NOT: attn.paged_kv
// CHECK-NOT: linalg.generic
func.func @unused(%pool: tensor<?x2x16x64xf32>, %table: tensor<1x?xi32>, %n: index) {
  %k = attn.paged_kv %pool[%table] length %n : tensor<?x2x16x64xf32>, tensor<1x?xi32> -> tensor<1x2x?x64xf32>
  return
}
