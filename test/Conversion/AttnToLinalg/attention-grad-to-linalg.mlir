// attn-lower-attention-grad: two loop nests, each result tile written by
// one forall iteration; dropped tiles skipped (scf.if on the tile class);
// no score matrix larger than a tile.
// RUN: attn-opt %s --split-input-file --attn-lower-attention-grad="query-tile=16 key-tile=32" | FileCheck %s

// CHECK-LABEL: func.func @causal
// CHECK-NOT: attn.attention_grad
// dQ: (batch, query head, ceil(37 / 16) query tiles), key tiles of 32.
// CHECK: %[[QTILES:.*]] = arith.ceildivui %{{.*}}, %c16
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 4, %[[QTILES]]) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<1x4x37x16xf32>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32
// CHECK: scf.if
// CHECK: math.exp
// CHECK: tensor.parallel_insert_slice
// dK, dV: (batch, KV head, key tiles), the group's 2 query heads, query tiles.
// CHECK: %[[KTILES:.*]] = arith.ceildivui %{{.*}}, %c32
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 2, %[[KTILES]]) shared_outs({{.*}}) -> (tensor<1x2x45x16xf32>, tensor<1x2x45x16xf32>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c16
// CHECK: scf.if
// CHECK-COUNT-2: tensor.parallel_insert_slice
// CHECK-NOT: tensor<37x45xf32>
func.func @causal(%q: tensor<1x4x37x16xf32>, %k: tensor<1x2x45x16xf32>, %v: tensor<1x2x45x16xf32>, %o: tensor<1x4x37x16xf32>, %do: tensor<1x4x37x16xf32>, %lse: tensor<1x4x37xf32>) -> (tensor<1x4x37x16xf32>, tensor<1x2x45x16xf32>, tensor<1x2x45x16xf32>) {
  %dq, %dk, %dv = attn.attention_grad %q, %k, %v, %o, %do, %lse pattern(#attn.causal) align = bottom_right
      : (tensor<1x4x37x16xf32>, tensor<1x2x45x16xf32>, tensor<1x2x45x16xf32>, tensor<1x4x37x16xf32>, tensor<1x4x37x16xf32>, tensor<1x4x37xf32>) -> (tensor<1x4x37x16xf32>, tensor<1x2x45x16xf32>, tensor<1x2x45x16xf32>)
  return %dq, %dk, %dv : tensor<1x4x37x16xf32>, tensor<1x2x45x16xf32>, tensor<1x2x45x16xf32>
}

// -----

// A soft-cap multiplies dS by 1 - tanh^2(s / c).
// CHECK-LABEL: func.func @softcap
// CHECK: math.tanh
// CHECK: math.tanh
// CHECK: arith.mulf %[[T:.*]], %[[T]] : f32
func.func @softcap(%q: tensor<1x1x8x8xf32>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x8xf32> {
  %dq, %dk, %dv = attn.attention_grad %q, %q, %q, %q, %q, %lse mods = [#attn.softcap<cap = 5.0>]
      : (tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8xf32>) -> (tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>)
  return %dq : tensor<1x1x8x8xf32>
}


// -----

// A score region is cloned with its tangents: y = tanh(x w[h, i - j]) passes
// dX (1 - y^2) w on to the earlier steps, and its captured tensor w gets
// dX (1 - y^2) x per logit that reached a gradient (an scf.if on dX != 0),
// added at the element the logit read.
// CHECK-LABEL: func.func @region_captured
// CHECK: %[[Y:.*]] = math.tanh
// CHECK: %[[YY:.*]] = arith.mulf %[[Y]], %[[Y]] : f32
// CHECK: arith.subf %{{.*}}, %[[YY]] : f32
// The captured tensor's gradient: a loop over (b, h, i, j).
// CHECK: scf.for {{.*}} -> (tensor<2x16xf32>)
// CHECK: %[[DX:.*]] = tensor.extract %{{.*}} : tensor<1x2x8x8xf32>
// CHECK: %[[REACHED:.*]] = arith.cmpf one, %[[DX]]
// CHECK: scf.if %[[REACHED]] -> (tensor<2x16xf32>)
// CHECK: %[[AT:.*]] = arith.subi
// CHECK: math.tanh
// CHECK: %[[OLD:.*]] = tensor.extract %{{.*}}[%{{.*}}, %[[AT]]] : tensor<2x16xf32>
// CHECK: %[[ADD:.*]] = arith.mulf %[[DX]], %{{.*}} : f32
// CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %[[ADD]] : f32
// CHECK: tensor.insert %[[SUM]] into %{{.*}}[%{{.*}}, %[[AT]]] : tensor<2x16xf32>
func.func @region_captured(%q: tensor<1x2x8x4xf32>, %t: tensor<2x16xf32>, %lse: tensor<1x2x8xf32>) -> (tensor<1x2x8x4xf32>, tensor<2x16xf32>) {
  %dq, %dk, %dv, %dt = attn.attention_grad %q, %q, %q, %q, %q, %lse pattern(#attn.causal) score {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %d = arith.subi %i, %j : index
      %e = tensor.extract %t[%h, %d] : tensor<2x16xf32>
      %y = arith.mulf %x, %e : f32
      %z = math.tanh %y : f32
      attn.yield %z : f32
  } : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<2x16xf32>)
  return %dq, %dt : tensor<1x2x8x4xf32>, tensor<2x16xf32>
}
