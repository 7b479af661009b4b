// RUN: attn-opt %s --attn-parallelize-linalg --canonicalize | FileCheck %s

#map4 = affine_map<(b, h, l, d) -> (b, h, l, d)>
#red_in = affine_map<(b, h, l, d) -> (b, h, l, d)>
#red_out = affine_map<(b, h, l, d) -> (b, h, l)>

// [B = 2, H = 4, ...]: batch and head loops (8 tiles) become an scf.forall;
// the rest of the nest is the tiled generic on [1, 1, L, D] slices.
// CHECK-LABEL: func.func @batch_head
// CHECK: scf.forall (%[[B:.*]], %[[H:.*]]) in (2, 4) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<2x4x16x8xf32>)
// CHECK:   tensor.extract_slice %{{.*}}[%[[B]], %[[H]], 0, 0] [1, 1, 16, 8] [1, 1, 1, 1]
// CHECK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<1x1x16x8xf32>)
// CHECK:   tensor.parallel_insert_slice
func.func @batch_head(%x: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %e = tensor.empty() : tensor<2x4x16x8xf32>
  %y = linalg.generic {indexing_maps = [#map4, #map4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x4x16x8xf32>) outs(%e : tensor<2x4x16x8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.mulf %a, %a : f32
      linalg.yield %s : f32
  } -> tensor<2x4x16x8xf32>
  return %y : tensor<2x4x16x8xf32>
}

// [B = 1, H = 12, L = 16, D (reduction)]: the prefix stops once it
// reaches 8 tiles (b, h: 12; canonicalization drops the unit batch loop);
// reductions are never split.
// CHECK-LABEL: func.func @row_sums
// CHECK: scf.forall (%{{.*}}) in (12)
// CHECK:   linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} outs(%{{.*}} : tensor<1x1x16xf32>)
func.func @row_sums(%x: tensor<1x12x16x8xf32>, %init: tensor<1x12x16xf32>)
    -> tensor<1x12x16xf32> {
  %y = linalg.generic {indexing_maps = [#red_in, #red_out],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x : tensor<1x12x16x8xf32>) outs(%init : tensor<1x12x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %o : f32
      linalg.yield %s : f32
  } -> tensor<1x12x16xf32>
  return %y : tensor<1x12x16xf32>
}

// A single tile (all leading parallel extents 1 before a reduction) and a
// generic already inside an scf.forall are left alone.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: scf.forall
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "parallel"]
// CHECK: scf.forall (%[[I:.*]]) in (4)
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
// CHECK: return
func.func @left_alone(%x: tensor<1x1x16x8xf32>, %init: tensor<1x1x16xf32>)
    -> (tensor<1x1x16xf32>, tensor<4xf32>) {
  %y = linalg.generic {indexing_maps = [affine_map<(b, h, d, l) -> (b, h, l, d)>,
                                        affine_map<(b, h, d, l) -> (b, h, l)>],
                       iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%x : tensor<1x1x16x8xf32>) outs(%init : tensor<1x1x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %o : f32
      linalg.yield %s : f32
  } -> tensor<1x1x16xf32>
  %e = tensor.empty() : tensor<4xf32>
  %z = scf.forall (%i) in (4) shared_outs(%o = %e) -> (tensor<4xf32>) {
    %t = tensor.empty() : tensor<1xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(x) -> (x)>],
                         iterator_types = ["parallel"]} outs(%t : tensor<1xf32>) {
      ^bb0(%a: f32):
        %c = arith.constant 1.0 : f32
        linalg.yield %c : f32
    } -> tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %g into %o[%i] [1] [1] : tensor<1xf32> into tensor<4xf32>
    }
  }
  return %y, %z : tensor<1x1x16xf32>, tensor<4xf32>
}
