// RUN: attn-opt %s --attn-decompose-aggregated-ops | FileCheck %s

// linalg.softmax over dimension 1 becomes upstream's decomposition: a max
// reduction over d1, exp(x - max), a sum reduction over d1, a division;
// no softmax is left.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[RED:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @softmax_middle
// CHECK-NOT: linalg.softmax
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[RED]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK: arith.maxnumf
// CHECK: %[[EXP:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[MAX]] :
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[RED]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[EXP]] :
// CHECK: arith.addf
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[EXP]], %[[SUM]] :
// CHECK: arith.divf
// CHECK: return %[[P]]
func.func @softmax_middle(%x: tensor<2x5x7xf32>) -> tensor<2x5x7xf32> {
  %e = tensor.empty() : tensor<2x5x7xf32>
  %p = linalg.softmax dimension(1) ins(%x : tensor<2x5x7xf32>) outs(%e : tensor<2x5x7xf32>) -> tensor<2x5x7xf32>
  return %p : tensor<2x5x7xf32>
}

// Other linalg ops are left alone.
// CHECK-LABEL: func.func @matmul_untouched
// CHECK: linalg.matmul
func.func @matmul_untouched(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
