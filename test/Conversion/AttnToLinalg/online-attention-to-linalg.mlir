// RUN: attn-opt %s --split-input-file --attn-tile="q-tile=32 kv-tile=16 for-target=false" --attn-lower-online-attention --canonicalize --cse | FileCheck %s

// The generic lowering of the tiled form (attn-tile, then
// attn-lower-online-attention).
// Dense attention: a forall over (head, query tile) -- the batch of 1 folds
// away -- and a kv loop carrying (m, l, acc) from (-inf, 0, 0); no tile
// classification.
// CHECK-LABEL: func @dense
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<1x4x97x24xf32>
// CHECK: scf.forall (%[[H:.*]], %[[QT:.*]]) in (4, 4) shared_outs(%[[OUT:.*]] = %[[EMPTY]])
// CHECK:   %[[FIRST:.*]] = arith.muli %[[QT]], %c32
// CHECK:   %[[I0:.*]] = arith.minui %[[FIRST]], %c97
// CHECK:   %[[TQ:.*]] = arith.subi %{{.*}}, %[[I0]]
// CHECK:   %[[M0:.*]] = linalg.fill ins(%cst_1 : f32)
// CHECK:   %[[KVH:.*]] = arith.divui %[[H]], %c2
// CHECK:   tensor.extract_slice %arg0[0, %[[H]], %[[I0]], 0] [1, 1, %[[TQ]], 40]
// CHECK:   %[[LOOP:.*]]:3 = scf.for %[[J0:.*]] = %c0 to %c100 step %c16 iter_args(%[[M:.*]] = %[[M0]], %[[L:.*]] = %{{.*}}, %[[ACC:.*]] = %{{.*}})
// CHECK-NOT: scf.if
// CHECK:     tensor.extract_slice %arg1[0, %[[KVH]], %[[J0]], 0]
// CHECK:     linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:     arith.maximumf
// CHECK:     math.exp
// CHECK:     math.exp
// CHECK:     scf.yield
// CHECK:   arith.divf
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %{{.*}} into %[[OUT]][0, %[[H]], %[[I0]], 0] [1, 1, %[[TQ]], 24]
func.func @dense(%q: tensor<1x4x97x40xf32>, %k: tensor<1x2x100x40xf32>,
                 %v: tensor<1x2x100x24xf32>) -> tensor<1x4x97x24xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x97x40xf32>, tensor<1x2x100x40xf32>, tensor<1x2x100x24xf32>)
      -> tensor<1x4x97x24xf32>
  return %o : tensor<1x4x97x24xf32>
}

// -----

// Causal: empty tiles are skipped, full tiles carry no mask code, partial
// tiles select -inf where the pattern drops an element.
// CHECK-LABEL: func @causal
// CHECK: scf.for
// CHECK:   %[[EMPTY:.*]] = arith.cmpi sgt, %{{.*}}, %c0 : index
// CHECK:   %[[FULL:.*]] = arith.cmpi sle, %{{.*}}, %c0 : index
// CHECK:   scf.if %[[EMPTY]]
// CHECK:     scf.yield %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK:   } else {
// CHECK:     scf.if %[[FULL]]
// CHECK-NOT:   arith.select
// CHECK:       scf.yield
// CHECK:     } else {
// CHECK:       linalg.index 0
// CHECK:       linalg.index 1
// CHECK:       arith.cmpi sle
// CHECK:       arith.select %{{.*}}, %{{.*}}, %cst
// CHECK:       scf.yield
func.func @causal(%q: tensor<1x4x97x40xf32>, %k: tensor<1x2x100x40xf32>,
                  %v: tensor<1x2x100x24xf32>) -> tensor<1x4x97x24xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x4x97x40xf32>, tensor<1x2x100x40xf32>, tensor<1x2x100x24xf32>)
      -> tensor<1x4x97x24xf32>
  return %o : tensor<1x4x97x24xf32>
}

// -----

// Dynamic shapes and bottom-right alignment: delta = Lk - Lq.
// CHECK-LABEL: func @dynamic_bottom_right
// CHECK: %[[LQ:.*]] = tensor.dim %arg0, %c2
// CHECK: scf.forall
// CHECK: %[[LK:.*]] = tensor.dim %arg1, %c2
// CHECK: %[[DELTA:.*]] = arith.subi %[[LK]], %[[LQ]]
// CHECK: scf.for %{{.*}} = %c0 to %[[LK]] step %c16
func.func @dynamic_bottom_right(%q: tensor<?x?x?x?xf32>, %k: tensor<?x?x?x?xf32>,
                                %v: tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>)
      -> tensor<?x?x?x?xf32>
  return %o : tensor<?x?x?x?xf32>
}

// -----

// Soft-capping (tanh) acts on the scaled score first, wherever it is
// listed; the other mods follow after scale and bias, in list order: ALiBi
// reads its per-head slope from a constant table.
// CHECK-LABEL: func @alibi_softcap
// CHECK: linalg.generic
// CHECK:   arith.mulf
// CHECK:   math.tanh
// CHECK:   linalg.index 0
// CHECK:   linalg.index 1
// CHECK:   math.absf
// CHECK:   %[[SLOPE:.*]] = tensor.extract %{{.*}}[%{{.*}}] : tensor<4xf32>
// CHECK:   %[[PENALTY:.*]] = arith.mulf %[[SLOPE]]
// CHECK:   arith.subf %{{.*}}, %[[PENALTY]]
// CHECK-NOT: math.tanh
// CHECK:   linalg.yield
func.func @alibi_softcap(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x100x40xf32>,
                         %v: tensor<1x4x100x24xf32>) -> tensor<1x4x97x24xf32> {
  %o = attn.attention %q, %k, %v
      mods = [#attn.alibi<max_bias = 8.0>, #attn.softcap<cap = 30.0>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x100x40xf32>, tensor<1x4x100x24xf32>)
      -> tensor<1x4x97x24xf32>
  return %o : tensor<1x4x97x24xf32>
}

// -----

// Other float types are read as f32 (extf) into the f32 state; the output
// rows are rounded back to the element type.
// CHECK-LABEL: func @f16
// CHECK: scf.for {{.*}} -> (tensor<?xf32>, tensor<?xf32>, tensor<?x16xf32>)
// CHECK:   linalg.generic
// CHECK:     arith.extf %{{.*}} : f16 to f32
// CHECK:     arith.extf %{{.*}} : f16 to f32
// CHECK:     arith.mulf
// CHECK: linalg.generic
// CHECK:   arith.divf
// CHECK:   arith.truncf %{{.*}} : f32 to f16
// CHECK: tensor.parallel_insert_slice %{{.*}} : tensor<?x16xf16> into tensor<1x1x40x16xf16>
func.func @f16(%q: tensor<1x1x40x16xf16>) -> tensor<1x1x40x16xf16> {
  %o = attn.attention %q, %q, %q pattern(#attn.causal)
      : (tensor<1x1x40x16xf16>, tensor<1x1x40x16xf16>, tensor<1x1x40x16xf16>)
      -> tensor<1x1x40x16xf16>
  return %o : tensor<1x1x40x16xf16>
}
