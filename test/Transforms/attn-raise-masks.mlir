// RUN: attn-opt %s --split-input-file --attn-raise --canonicalize | FileCheck %s

// is_causal as torch-mlir lowers it: an additive [L, L] tensor of 0 / -inf
// built from iota (j - i <= 0, and-ed with an all-true constant, select)
// and broadcast over batch and heads. It is the causal pattern: no bias, no
// comparison left.
// CHECK-LABEL: func.func @causal_additive_iota
// CHECK-NOT: arith.cmpi
// CHECK: attn.attention %[[Q:[a-z0-9]+]], %{{.*}}, %{{.*}} pattern(#attn.causal) scale = 1.000000e+00 :
// CHECK-NOT: bias(
// CHECK-NOT: arith.cmpi
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#ij4 = affine_map<(b, h, i, j) -> (i, j)>
#scalar4 = affine_map<(b, h, i, j) -> ()>
#id2 = affine_map<(i, j) -> (i, j)>
#row2 = affine_map<(i, j) -> (0, j)>
#col2 = affine_map<(i, j) -> (i, 0)>
#scalar2 = affine_map<(i, j) -> ()>
#id1 = affine_map<(i) -> (i)>
func.func @causal_additive_iota(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %kk = tensor.cast %k : tensor<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %vv = tensor.cast %v : tensor<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kk : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %c_bound = arith.constant 0 : i64
  %true = arith.constant true
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %ninf_t = arith.constant dense<0xFF800000> : tensor<f32>
  %all = arith.constant dense<true> : tensor<8x8xi1>
  %ei = tensor.empty() : tensor<8xi64>
  %iota = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%ei : tensor<8xi64>) {
    ^bb0(%out: i64):
      %x = linalg.index 0 : index
      %y = arith.index_cast %x : index to i64
      linalg.yield %y : i64
  } -> tensor<8xi64>
  %row = tensor.expand_shape %iota [[0, 1]] output_shape [1, 8] : tensor<8xi64> into tensor<1x8xi64>
  %col = tensor.expand_shape %iota [[0, 1]] output_shape [8, 1] : tensor<8xi64> into tensor<8x1xi64>
  %e64 = tensor.empty() : tensor<8x8xi64>
  %diff = linalg.generic {indexing_maps = [#row2, #col2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%row, %col : tensor<1x8xi64>, tensor<8x1xi64>) outs(%e64 : tensor<8x8xi64>) {
    ^bb0(%a: i64, %b: i64, %c: i64):
      %d = arith.subi %a, %b : i64
      linalg.yield %d : i64
  } -> tensor<8x8xi64>
  %e1 = tensor.empty() : tensor<8x8xi1>
  %le = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%diff : tensor<8x8xi64>) outs(%e1 : tensor<8x8xi1>) {
    ^bb0(%a: i64, %c: i1):
      %d = arith.cmpi sle, %a, %c_bound : i64
      linalg.yield %d : i1
  } -> tensor<8x8xi1>
  %keep = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%le, %all : tensor<8x8xi1>, tensor<8x8xi1>) outs(%e1 : tensor<8x8xi1>) {
    ^bb0(%a: i1, %b: i1, %c: i1):
      %d = arith.andi %a, %b : i1
      linalg.yield %d : i1
  } -> tensor<8x8xi1>
  %ef = tensor.empty() : tensor<8x8xf32>
  %bias = linalg.generic {indexing_maps = [#id2, #scalar2, #scalar2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%keep, %zero_t, %ninf_t : tensor<8x8xi1>, tensor<f32>, tensor<f32>) outs(%ef : tensor<8x8xf32>) {
    ^bb0(%a: i1, %b: f32, %c: f32, %o: f32):
      %d = arith.select %a, %b, %c : f32
      linalg.yield %d : f32
  } -> tensor<8x8xf32>
  %masked = linalg.generic {indexing_maps = [#id4, #ij4, #id4],
                           iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %bias : tensor<1x2x8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%masked : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vv : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// The same chain with j - i <= 1 keeps one future key: not causal, so it
// stays a dense bias.
// CHECK-LABEL: func.func @shifted_triangle_stays_bias
// CHECK: arith.cmpi sle
// CHECK: attn.attention {{.*}} bias(%{{.*}}) scale = 1.000000e+00 :
// CHECK-NOT: pattern(
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#ij4 = affine_map<(b, h, i, j) -> (i, j)>
#scalar4 = affine_map<(b, h, i, j) -> ()>
#id2 = affine_map<(i, j) -> (i, j)>
#row2 = affine_map<(i, j) -> (0, j)>
#col2 = affine_map<(i, j) -> (i, 0)>
#scalar2 = affine_map<(i, j) -> ()>
#id1 = affine_map<(i) -> (i)>
func.func @shifted_triangle_stays_bias(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %kk = tensor.cast %k : tensor<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %vv = tensor.cast %v : tensor<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kk : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %c_bound = arith.constant 1 : i64
  %true = arith.constant true
  %zero_t = arith.constant dense<0.0> : tensor<f32>
  %ninf_t = arith.constant dense<0xFF800000> : tensor<f32>
  %all = arith.constant dense<true> : tensor<8x8xi1>
  %ei = tensor.empty() : tensor<8xi64>
  %iota = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%ei : tensor<8xi64>) {
    ^bb0(%out: i64):
      %x = linalg.index 0 : index
      %y = arith.index_cast %x : index to i64
      linalg.yield %y : i64
  } -> tensor<8xi64>
  %row = tensor.expand_shape %iota [[0, 1]] output_shape [1, 8] : tensor<8xi64> into tensor<1x8xi64>
  %col = tensor.expand_shape %iota [[0, 1]] output_shape [8, 1] : tensor<8xi64> into tensor<8x1xi64>
  %e64 = tensor.empty() : tensor<8x8xi64>
  %diff = linalg.generic {indexing_maps = [#row2, #col2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%row, %col : tensor<1x8xi64>, tensor<8x1xi64>) outs(%e64 : tensor<8x8xi64>) {
    ^bb0(%a: i64, %b: i64, %c: i64):
      %d = arith.subi %a, %b : i64
      linalg.yield %d : i64
  } -> tensor<8x8xi64>
  %e1 = tensor.empty() : tensor<8x8xi1>
  %le = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%diff : tensor<8x8xi64>) outs(%e1 : tensor<8x8xi1>) {
    ^bb0(%a: i64, %c: i1):
      %d = arith.cmpi sle, %a, %c_bound : i64
      linalg.yield %d : i1
  } -> tensor<8x8xi1>
  %keep = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%le, %all : tensor<8x8xi1>, tensor<8x8xi1>) outs(%e1 : tensor<8x8xi1>) {
    ^bb0(%a: i1, %b: i1, %c: i1):
      %d = arith.andi %a, %b : i1
      linalg.yield %d : i1
  } -> tensor<8x8xi1>
  %ef = tensor.empty() : tensor<8x8xf32>
  %bias = linalg.generic {indexing_maps = [#id2, #scalar2, #scalar2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%keep, %zero_t, %ninf_t : tensor<8x8xi1>, tensor<f32>, tensor<f32>) outs(%ef : tensor<8x8xf32>) {
    ^bb0(%a: i1, %b: f32, %c: f32, %o: f32):
      %d = arith.select %a, %b, %c : f32
      linalg.yield %d : f32
  } -> tensor<8x8xf32>
  %masked = linalg.generic {indexing_maps = [#id4, #ij4, #id4],
                           iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %bias : tensor<1x2x8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%masked : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vv : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// A constant additive triangle (0 on and below the diagonal, -inf above)
// is read element by element: causal.
// CHECK-LABEL: func.func @causal_constant_triangle
// CHECK-NOT: arith.constant dense<{{\[}}
// CHECK: attn.attention {{.*}} pattern(#attn.causal) scale = 1.000000e+00 :
// CHECK-NOT: bias(
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#ij4 = affine_map<(b, h, i, j) -> (i, j)>
#scalar4 = affine_map<(b, h, i, j) -> ()>
#id2 = affine_map<(i, j) -> (i, j)>
#row2 = affine_map<(i, j) -> (0, j)>
#col2 = affine_map<(i, j) -> (i, 0)>
#scalar2 = affine_map<(i, j) -> ()>
#id1 = affine_map<(i) -> (i)>
func.func @causal_constant_triangle(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %kk = tensor.cast %k : tensor<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %vv = tensor.cast %v : tensor<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kk : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %tri = arith.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<8x8xf32>
  %masked = linalg.generic {indexing_maps = [#id4, #ij4, #id4],
                           iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %tri : tensor<1x2x8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%masked : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vv : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Adding a constant 0 masks nothing: no operand at all.
// CHECK-LABEL: func.func @zero_additive
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 1.000000e+00 :
// CHECK-NOT: linalg.generic
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#ij4 = affine_map<(b, h, i, j) -> (i, j)>
#scalar4 = affine_map<(b, h, i, j) -> ()>
#id2 = affine_map<(i, j) -> (i, j)>
#row2 = affine_map<(i, j) -> (0, j)>
#col2 = affine_map<(i, j) -> (i, 0)>
#scalar2 = affine_map<(i, j) -> ()>
#id1 = affine_map<(i) -> (i)>
func.func @zero_additive(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %kk = tensor.cast %k : tensor<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %vv = tensor.cast %v : tensor<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kk : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %z = arith.constant dense<0.0> : tensor<8x8xf32>
  %masked = linalg.generic {indexing_maps = [#id4, #ij4, #id4],
                           iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %z : tensor<1x2x8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%masked : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vv : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// masked_fill(m, -inf) with a boolean argument masks where m is true: the
// mask operand (kept where true) is its negation, as [1, 1, L, L] (the op
// broadcasts size-1 batch and head dims).
// CHECK-LABEL: func.func @masked_fill_argument
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<8x8xi1>
// CHECK: %[[KEEP:.*]] = linalg.generic {{.*}} ins(%[[M]] : tensor<8x8xi1>) outs(%{{.*}} : tensor<1x1x8x8xi1>)
// CHECK: arith.xori
// CHECK: attn.attention {{.*}} mask(%[[KEEP]]) scale = 1.000000e+00 :
// CHECK-NOT: linalg.softmax
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#ij4 = affine_map<(b, h, i, j) -> (i, j)>
#scalar4 = affine_map<(b, h, i, j) -> ()>
#id2 = affine_map<(i, j) -> (i, j)>
#row2 = affine_map<(i, j) -> (0, j)>
#col2 = affine_map<(i, j) -> (i, 0)>
#scalar2 = affine_map<(i, j) -> ()>
#id1 = affine_map<(i) -> (i)>
func.func @masked_fill_argument(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %mk: tensor<8x8xi1>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %kk = tensor.cast %k : tensor<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %vv = tensor.cast %v : tensor<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kk : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %fill = arith.constant dense<0xFF800000> : tensor<f32>
  %masked = linalg.generic {indexing_maps = [#ij4, #scalar4, #id4, #id4],
                           iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%mk, %fill, %s : tensor<8x8xi1>, tensor<f32>, tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: i1, %c: f32, %x: f32, %o: f32):
      %d = arith.select %a, %c, %x : f32
      linalg.yield %d : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%masked : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vv : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// A key padding mask [B, 1, 1, Lk] (true: attend) selecting the score or
// -inf: the mask operand reads it directly, no negation; heads (not read)
// stay 1, the query dim is spelled out.
// CHECK-LABEL: func.func @padding_mask_select
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<1x1x1x8xi1>
// CHECK: %[[KEEP:.*]] = linalg.generic {{.*}} ins(%[[M]] : tensor<1x1x1x8xi1>) outs(%{{.*}} : tensor<1x1x8x8xi1>)
// CHECK-NOT: arith.xori
// CHECK: attn.attention {{.*}} mask(%[[KEEP]]) scale = 1.000000e+00 :
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#ij4 = affine_map<(b, h, i, j) -> (i, j)>
#scalar4 = affine_map<(b, h, i, j) -> ()>
#id2 = affine_map<(i, j) -> (i, j)>
#row2 = affine_map<(i, j) -> (0, j)>
#col2 = affine_map<(i, j) -> (i, 0)>
#scalar2 = affine_map<(i, j) -> ()>
#id1 = affine_map<(i) -> (i)>
func.func @padding_mask_select(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %mk: tensor<1x1x1x8xi1>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %kk = tensor.cast %k : tensor<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %vv = tensor.cast %v : tensor<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kk : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %fill = arith.constant dense<0xFF800000> : tensor<f32>
  %masked = linalg.generic {indexing_maps = [affine_map<(b, h, i, j) -> (b, 0, 0, j)>, #scalar4, #id4, #id4],
                           iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%mk, %fill, %s : tensor<1x1x1x8xi1>, tensor<f32>, tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: i1, %c: f32, %x: f32, %o: f32):
      %d = arith.select %a, %x, %c : f32
      linalg.yield %d : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%masked : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vv : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Negative: masked_fill with a large finite number (finfo.min) is not a
// mask: a row that masks every key averages V instead of yielding 0.
// Left alone.
// CHECK-LABEL: func.func @fill_finite_not_mask
// CHECK-NOT: attn.attention
// CHECK: arith.select
// CHECK: linalg.softmax
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#ij4 = affine_map<(b, h, i, j) -> (i, j)>
#scalar4 = affine_map<(b, h, i, j) -> ()>
#id2 = affine_map<(i, j) -> (i, j)>
#row2 = affine_map<(i, j) -> (0, j)>
#col2 = affine_map<(i, j) -> (i, 0)>
#scalar2 = affine_map<(i, j) -> ()>
#id1 = affine_map<(i) -> (i)>
func.func @fill_finite_not_mask(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %mk: tensor<8x8xi1>) -> tensor<1x2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %kk = tensor.cast %k : tensor<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %vv = tensor.cast %v : tensor<1x2x8x16xf32> to tensor<1x2x8x16xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kk : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%f : tensor<1x2x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x8xf32>
  %fill = arith.constant dense<-3.40282347E+38> : tensor<f32>
  %masked = linalg.generic {indexing_maps = [#ij4, #scalar4, #id4, #id4],
                           iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%mk, %fill, %s : tensor<8x8xi1>, tensor<f32>, tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) {
    ^bb0(%a: i1, %c: f32, %x: f32, %o: f32):
      %d = arith.select %a, %c, %x : f32
      linalg.yield %d : f32
  } -> tensor<1x2x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%masked : tensor<1x2x8x8xf32>) outs(%e : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %eo = tensor.empty() : tensor<1x2x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vv : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%fo : tensor<1x2x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Grouped-query attention: K and V [1, 2, 8, 16] repeated with
// repeat_interleave (a broadcast copy along a new dim after the heads,
// collapsed into them) for 4 query heads. Head h reads kv head h / 2,
// attn.attention's own rule: the copies go.
// CHECK-LABEL: func.func @gqa_repeat_interleave
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x8x16xf32>, %[[K:.*]]: tensor<1x2x8x16xf32>, %[[V:.*]]: tensor<1x2x8x16xf32>)
// CHECK-NOT: linalg.generic
// CHECK: attn.attention %[[Q]], %[[K]], %[[V]] scale = 1.000000e+00 : (tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32>
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#ij4 = affine_map<(b, h, i, j) -> (i, j)>
#scalar4 = affine_map<(b, h, i, j) -> ()>
#id2 = affine_map<(i, j) -> (i, j)>
#row2 = affine_map<(i, j) -> (0, j)>
#col2 = affine_map<(i, j) -> (i, 0)>
#scalar2 = affine_map<(i, j) -> ()>
#id1 = affine_map<(i) -> (i)>
#id5 = affine_map<(b, h, g, l, d) -> (b, h, g, l, d)>
func.func @gqa_repeat_interleave(%q: tensor<1x4x8x16xf32>, %k2: tensor<1x2x8x16xf32>, %v2: tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %ek = tensor.empty() : tensor<1x2x2x8x16xf32>
  %kr = linalg.generic {indexing_maps = [affine_map<(b, h, g, l, d) -> (b, h, l, d)>, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%k2 : tensor<1x2x8x16xf32>) outs(%ek : tensor<1x2x2x8x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
  } -> tensor<1x2x2x8x16xf32>
  %kk = tensor.collapse_shape %kr [[0], [1, 2], [3], [4]] : tensor<1x2x2x8x16xf32> into tensor<1x4x8x16xf32>
  %vr = linalg.generic {indexing_maps = [affine_map<(b, h, g, l, d) -> (b, h, l, d)>, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%v2 : tensor<1x2x8x16xf32>) outs(%ek : tensor<1x2x2x8x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
  } -> tensor<1x2x2x8x16xf32>
  %vv = tensor.collapse_shape %vr [[0], [1, 2], [3], [4]] : tensor<1x2x2x8x16xf32> into tensor<1x4x8x16xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kk : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) outs(%f : tensor<1x4x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x4x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x4x8x8xf32>) outs(%e : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %eo = tensor.empty() : tensor<1x4x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vv : tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) outs(%fo : tensor<1x4x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Negative for GQA: the copy repeats the heads in the outer position
// (repeat / tile: head h reads kv head h mod 2), which is not
// attn.attention's grouping. The copies stay; attention reads 4 heads.
// CHECK-LABEL: func.func @tiled_heads_not_gqa
// CHECK-COUNT-2: linalg.generic
// CHECK: attn.attention {{.*}} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#ij4 = affine_map<(b, h, i, j) -> (i, j)>
#scalar4 = affine_map<(b, h, i, j) -> ()>
#id2 = affine_map<(i, j) -> (i, j)>
#row2 = affine_map<(i, j) -> (0, j)>
#col2 = affine_map<(i, j) -> (i, 0)>
#scalar2 = affine_map<(i, j) -> ()>
#id1 = affine_map<(i) -> (i)>
#id5 = affine_map<(b, h, g, l, d) -> (b, h, g, l, d)>
func.func @tiled_heads_not_gqa(%q: tensor<1x4x8x16xf32>, %k2: tensor<1x2x8x16xf32>, %v2: tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %ek = tensor.empty() : tensor<1x2x2x8x16xf32>
  %kr = linalg.generic {indexing_maps = [affine_map<(b, g, h, l, d) -> (b, h, l, d)>, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%k2 : tensor<1x2x8x16xf32>) outs(%ek : tensor<1x2x2x8x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
  } -> tensor<1x2x2x8x16xf32>
  %kk = tensor.collapse_shape %kr [[0], [1, 2], [3], [4]] : tensor<1x2x2x8x16xf32> into tensor<1x4x8x16xf32>
  %vr = linalg.generic {indexing_maps = [affine_map<(b, g, h, l, d) -> (b, h, l, d)>, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%v2 : tensor<1x2x8x16xf32>) outs(%ek : tensor<1x2x2x8x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
  } -> tensor<1x2x2x8x16xf32>
  %vv = tensor.collapse_shape %vr [[0], [1, 2], [3], [4]] : tensor<1x2x2x8x16xf32> into tensor<1x4x8x16xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kk : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) outs(%f : tensor<1x4x8x8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x4x8x8xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<1x4x8x8xf32>) outs(%e : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %eo = tensor.empty() : tensor<1x4x8x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vv : tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) outs(%fo : tensor<1x4x8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

