// RUN: attn-opt %s --split-input-file --attn-raise | FileCheck %s

// 4-D linalg.generic contractions (K read transposed by its indexing map),
// a multiply by a constant, linalg.softmax: one attn.attention on the
// function's own operands, scale kept, nothing left of the chain.
// CHECK-LABEL: func.func @generic_softmax
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x8x16xf32>, %[[K:.*]]: tensor<1x2x8x16xf32>, %[[V:.*]]: tensor<1x2x8x16xf32>)
// CHECK-NOT: linalg
// CHECK: %[[O:.*]] = attn.attention %[[Q]], %[[K]], %[[V]] scale = 2.500000e-01 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
// CHECK-NOT: linalg
// CHECK: return %[[O]]
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
func.func @generic_softmax(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                           %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %c: f32):
      %cst = arith.constant 0.25 : f32
      %r = arith.mulf %a, %cst : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%scaled : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// linalg.batch_matmul on [B*H, L, D] with K transposed by linalg.transpose,
// a division by sqrt(D), and the decomposed softmax (max, exp(x - max) in
// one generic, sum, div): the transpose is looked through, the batch
// becomes the head dimension of [1, B*H, L, D].
// CHECK-LABEL: func.func @batch_matmul_decomposed
// CHECK-SAME: (%[[Q:.*]]: tensor<4x8x16xf32>, %[[K:.*]]: tensor<4x8x16xf32>, %[[V:.*]]: tensor<4x8x16xf32>)
// CHECK-DAG: %[[Q4:.*]] = tensor.expand_shape %[[Q]] {{\[}}[0, 1], [2], [3]] output_shape [1, 4, 8, 16]
// CHECK-DAG: %[[K4:.*]] = tensor.expand_shape %[[K]] {{\[}}[0, 1], [2], [3]]
// CHECK-DAG: %[[V4:.*]] = tensor.expand_shape %[[V]] {{\[}}[0, 1], [2], [3]]
// CHECK: %[[O4:.*]] = attn.attention %[[Q4]], %[[K4]], %[[V4]] scale = 2.500000e-01 : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
// CHECK: %[[O:.*]] = tensor.collapse_shape %[[O4]] {{\[}}[0, 1], [2], [3]] : tensor<1x4x8x16xf32> into tensor<4x8x16xf32>
// CHECK-NOT: linalg
// CHECK: return %[[O]]
#id3 = affine_map<(n, i, j) -> (n, i, j)>
#row3 = affine_map<(n, i, j) -> (n, i)>
func.func @batch_matmul_decomposed(%q: tensor<4x8x16xf32>, %k: tensor<4x8x16xf32>,
                                   %v: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %kt0 = tensor.empty() : tensor<4x16x8xf32>
  %kt = linalg.transpose ins(%k : tensor<4x8x16xf32>) outs(%kt0 : tensor<4x16x8xf32>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<4x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<4x8x16xf32>, tensor<4x16x8xf32>) outs(%f : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %sd = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<4x8x8xf32>) outs(%e : tensor<4x8x8xf32>) {
    ^bb0(%a: f32, %c: f32):
      %four = arith.constant 4.0 : f32
      %r = arith.divf %a, %four : f32
      linalg.yield %r : f32
  } -> tensor<4x8x8xf32>
  %er = tensor.empty() : tensor<4x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mx = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%sd : tensor<4x8x8xf32>) outs(%mi : tensor<4x8xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = arith.maximumf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%sd, %mx : tensor<4x8x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.subf %a, %b : f32
      %r = math.exp %d : f32
      linalg.yield %r : f32
  } -> tensor<4x8x8xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<4x8xf32>) -> tensor<4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<4x8x8xf32>) outs(%si : tensor<4x8xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %sum : tensor<4x8x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.divf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<4x8x8xf32>
  %eo = tensor.empty() : tensor<4x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<4x8x8xf32>, tensor<4x8x16xf32>) outs(%fo : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %o : tensor<4x8x16xf32>
}

// -----

// 2-D: a linalg.generic Q K^T (K transposed by its map), no scale (the
// attention op must then say scale = 1, not its 1/sqrt(D) default), softmax
// over dimension 1, linalg.matmul for P V; [L, D] becomes [1, 1, L, D].
// CHECK-LABEL: func.func @matmul_2d_unscaled
// CHECK: %[[Q4:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1, 2], [3]] output_shape [1, 1, 8, 16]
// CHECK: attn.attention %[[Q4]], %{{.*}}, %{{.*}} scale = 1.000000e+00 : (tensor<1x1x8x16xf32>, tensor<1x1x12x16xf32>, tensor<1x1x12x4xf32>) -> tensor<1x1x8x4xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2], [3]] : tensor<1x1x8x4xf32> into tensor<8x4xf32>
// CHECK-NOT: linalg.softmax
#q2 = affine_map<(i, j, d) -> (i, d)>
#k2 = affine_map<(i, j, d) -> (j, d)>
#s2 = affine_map<(i, j, d) -> (i, j)>
func.func @matmul_2d_unscaled(%q: tensor<8x16xf32>, %k: tensor<12x16xf32>,
                              %v: tensor<12x4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x12xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x12xf32>) -> tensor<8x12xf32>
  %s = linalg.generic {indexing_maps = [#q2, #k2, #s2], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<8x16xf32>, tensor<12x16xf32>) outs(%f : tensor<8x12xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<8x12xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<8x12xf32>) outs(%e : tensor<8x12xf32>) -> tensor<8x12xf32>
  %eo = tensor.empty() : tensor<8x4xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<8x4xf32>) -> tensor<8x4xf32>
  %o = linalg.matmul ins(%p, %v : tensor<8x12xf32>, tensor<12x4xf32>) outs(%fo : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

// An additive mask [Lq, Lk] broadcast over batch and heads (after the
// scale, as front ends write it): a bias operand [1, 1, Lq, Lk], which
// attn.attention broadcasts itself (no copy per batch and head).
// CHECK-LABEL: func.func @additive_mask
// CHECK-SAME: %[[MASK:[a-z0-9]+]]: tensor<8x8xf32>
// CHECK: %[[BIAS:.*]] = linalg.generic {{.*}} ins(%[[MASK]] : tensor<8x8xf32>) outs(%{{.*}} : tensor<1x1x8x8xf32>)
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} bias(%[[BIAS]]) scale = 1.250000e-01
// CHECK-NOT: linalg.softmax
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#mask4 = affine_map<(b, h, i, j) -> (i, j)>
func.func @additive_mask(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                         %v: tensor<1x2x8x16xf32>, %mask: tensor<8x8xf32>)
    -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %c: f32):
      %cst = arith.constant 8.0 : f32
      %r = arith.divf %a, %cst : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %masked = linalg.generic {indexing_maps = [#id4, #mask4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scaled, %mask : tensor<1x2x8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%masked : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// A causal mask built from iota comparisons (linalg.index of the query and
// key loops, select -inf where j > i) is the causal pattern, not a dense
// mask; the softmax is decomposed with keepdim reductions ([.., L, 1]) and
// the subtraction and exp in separate generics.
// CHECK-LABEL: func.func @causal_iota
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} pattern(#attn.causal) scale = 2.500000e-01
// CHECK-NOT: linalg.index
// CHECK-NOT: math.exp
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#keep4 = affine_map<(b, h, i, j) -> (b, h, i, 0)>
func.func @causal_iota(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                       %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %c: f32):
      %cst = arith.constant 0.25 : f32
      %r = arith.mulf %cst, %a : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %causal = linalg.generic {indexing_maps = [#id4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scaled : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %c: f32):
      %i = linalg.index 2 : index
      %j = linalg.index 3 : index
      %later = arith.cmpi ugt, %j, %i : index
      %r = arith.select %later, %ninf, %a : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %er = tensor.empty() : tensor<1x2x8x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x2x8x1xf32>) -> tensor<1x2x8x1xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #keep4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%causal : tensor<1x2x8x8xf32>) outs(%mi : tensor<1x2x8x1xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = arith.maxnumf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x1xf32>
  %sub = linalg.generic {indexing_maps = [#id4, #keep4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%causal, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.subf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sub : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = math.exp %a : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x2x8x1xf32>) -> tensor<1x2x8x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #keep4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x2x8x8xf32>) outs(%si : tensor<1x2x8x1xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #keep4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %sum : tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.divf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Negative: the softmax runs over the query dimension (2), not the keys:
// not attention, left exactly as it was.
// CHECK-LABEL: func.func @softmax_wrong_dimension
// CHECK-NOT: attn.attention
// CHECK: linalg.softmax dimension(2)
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#mask4 = affine_map<(b, h, i, j) -> (i, j)>
func.func @softmax_wrong_dimension(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                   %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Negative: the scores are also returned (an extra use): raising would have
// to keep computing them, so the chain is left alone.
// CHECK-LABEL: func.func @score_has_other_uses
// CHECK-NOT: attn.attention
// CHECK: linalg.softmax dimension(3)
// CHECK: return %{{.*}}, %{{.*}} : tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#mask4 = affine_map<(b, h, i, j) -> (i, j)>
func.func @score_has_other_uses(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                %v: tensor<1x2x8x16xf32>)
    -> (tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o, %s : tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>
}

// -----

// A padding mask [B, Lk] added to every query's scores (HF's extended
// attention mask): it does not vary with the query or head, so the bias
// stays per key, [B, 1, 1, Lk], which the CPU kernels read as it is.
// CHECK-LABEL: func.func @padding_mask
// CHECK-SAME: %[[MASK:[a-z0-9]+]]: tensor<1x8xf32>
// CHECK: %[[BIAS:.*]] = linalg.generic {{.*}} ins(%[[MASK]] : tensor<1x8xf32>) outs(%{{.*}} : tensor<1x1x1x8xf32>)
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} bias(%[[BIAS]]) scale = 1.250000e-01 : ({{.*}}, tensor<1x1x1x8xf32>)
// CHECK-NOT: linalg.softmax
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#mask4 = affine_map<(b, h, i, j) -> (b, j)>
func.func @padding_mask(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                         %v: tensor<1x2x8x16xf32>, %mask: tensor<1x8xf32>)
    -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %c: f32):
      %cst = arith.constant 8.0 : f32
      %r = arith.divf %a, %cst : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %masked = linalg.generic {indexing_maps = [#id4, #mask4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scaled, %mask : tensor<1x2x8x8xf32>, tensor<1x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%masked : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// A causal mask built from iota comparisons (linalg.index of the query and
// key loops, select -inf where j > i) is the causal pattern, not a dense
// mask; the softmax is decomposed with keepdim reductions ([.., L, 1]) and
// the subtraction and exp in separate generics.
// CHECK-LABEL: func.func @causal_iota
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} pattern(#attn.causal) scale = 2.500000e-01
// CHECK-NOT: linalg.index
// CHECK-NOT: math.exp
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#keep4 = affine_map<(b, h, i, j) -> (b, h, i, 0)>
func.func @causal_iota(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                       %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %c: f32):
      %cst = arith.constant 0.25 : f32
      %r = arith.mulf %cst, %a : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %causal = linalg.generic {indexing_maps = [#id4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scaled : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %c: f32):
      %i = linalg.index 2 : index
      %j = linalg.index 3 : index
      %later = arith.cmpi ugt, %j, %i : index
      %r = arith.select %later, %ninf, %a : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %er = tensor.empty() : tensor<1x2x8x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x2x8x1xf32>) -> tensor<1x2x8x1xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #keep4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%causal : tensor<1x2x8x8xf32>) outs(%mi : tensor<1x2x8x1xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = arith.maxnumf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x1xf32>
  %sub = linalg.generic {indexing_maps = [#id4, #keep4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%causal, %mx : tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.subf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sub : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = math.exp %a : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x2x8x1xf32>) -> tensor<1x2x8x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #keep4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x2x8x8xf32>) outs(%si : tensor<1x2x8x1xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #keep4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %sum : tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.divf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Negative: the softmax runs over the query dimension (2), not the keys:
// not attention, left exactly as it was.
// CHECK-LABEL: func.func @softmax_wrong_dimension
// CHECK-NOT: attn.attention
// CHECK: linalg.softmax dimension(2)
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#mask4 = affine_map<(b, h, i, j) -> (b, j)>
func.func @softmax_wrong_dimension(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                   %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Negative: the scores are also returned (an extra use): raising would have
// to keep computing them, so the chain is left alone.
// CHECK-LABEL: func.func @score_has_other_uses
// CHECK-NOT: attn.attention
// CHECK: linalg.softmax dimension(3)
// CHECK: return %{{.*}}, %{{.*}} : tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#mask4 = affine_map<(b, h, i, j) -> (b, j)>
func.func @score_has_other_uses(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                %v: tensor<1x2x8x16xf32>)
    -> (tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o, %s : tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>
}

// -----

// Negative: the scale comes after the mask, so it scales the mask too,
// which attn.attention's bias is not: left alone.
// CHECK-LABEL: func.func @scale_after_mask
// CHECK-NOT: attn.attention
// CHECK: linalg.softmax
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#mask4 = affine_map<(b, h, i, j) -> (i, j)>
func.func @scale_after_mask(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                            %v: tensor<1x2x8x16xf32>, %mask: tensor<8x8xf32>)
    -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %masked = linalg.generic {indexing_maps = [#id4, #mask4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %mask : tensor<1x2x8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%masked : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %c: f32):
      %cst = arith.constant 0.25 : f32
      %r = arith.mulf %a, %cst : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%scaled : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Dynamic lengths: raised when nothing has to be materialised (K^T is a
// linalg.transpose looked through, the bias is read as it is).
// CHECK-LABEL: func.func @dynamic_lengths
// CHECK: attn.attention {{.*}} bias(%{{.*}}) scale = 1.000000e+00 : (tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x?xf32>) -> tensor<1x1x?x16xf32>
// CHECK-NOT: linalg.softmax
func.func @dynamic_lengths(%q: tensor<?x16xf32>, %k: tensor<?x16xf32>, %v: tensor<?x16xf32>, %m: tensor<?x?xf32>) -> tensor<?x16xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x16xf32>
  %nk = tensor.dim %k, %c0 : tensor<?x16xf32>
  %ekt = tensor.empty(%nk) : tensor<16x?xf32>
  %kt = linalg.transpose ins(%k : tensor<?x16xf32>) outs(%ekt : tensor<16x?xf32>) permutation = [1, 0]
  %e = tensor.empty(%n, %nk) : tensor<?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<?x16xf32>, tensor<16x?xf32>) outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%s, %m : tensor<?x?xf32>, tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %p = linalg.softmax dimension(1) ins(%b : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %eo = tensor.empty(%n) : tensor<?x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<?x16xf32>) -> tensor<?x16xf32>
  %o = linalg.matmul ins(%p, %v : tensor<?x?xf32>, tensor<?x16xf32>) outs(%fo : tensor<?x16xf32>) -> tensor<?x16xf32>
  return %o : tensor<?x16xf32>
}

// -----

// Negative: the bias is read transposed, so raising would materialise a
// dynamically shaped copy; such chains are left alone, with no error.
// CHECK-LABEL: func.func @dynamic_transposed_bias
// CHECK-NOT: attn.attention
// CHECK: linalg.softmax
func.func @dynamic_transposed_bias(%q: tensor<?x16xf32>, %k: tensor<?x16xf32>, %v: tensor<?x16xf32>, %m: tensor<?x?xf32>) -> tensor<?x16xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x16xf32>
  %nk = tensor.dim %k, %c0 : tensor<?x16xf32>
  %ekt = tensor.empty(%nk) : tensor<16x?xf32>
  %kt = linalg.transpose ins(%k : tensor<?x16xf32>) outs(%ekt : tensor<16x?xf32>) permutation = [1, 0]
  %e = tensor.empty(%n, %nk) : tensor<?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = linalg.matmul ins(%q, %kt : tensor<?x16xf32>, tensor<16x?xf32>) outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%s, %m : tensor<?x?xf32>, tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %p = linalg.softmax dimension(1) ins(%b : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %eo = tensor.empty(%n) : tensor<?x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<?x16xf32>) -> tensor<?x16xf32>
  %o = linalg.matmul ins(%p, %v : tensor<?x?xf32>, tensor<?x16xf32>) outs(%fo : tensor<?x16xf32>) -> tensor<?x16xf32>
  return %o : tensor<?x16xf32>
}
