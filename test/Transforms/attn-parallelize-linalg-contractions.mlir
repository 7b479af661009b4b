// RUN: attn-opt %s --attn-parallelize-linalg=keep-contractions --canonicalize | FileCheck %s
// RUN: attn-opt %s --attn-parallelize-linalg --canonicalize | FileCheck %s --check-prefix=SPLIT

// With keep-contractions (the CPU pipeline with its kernels on), an f32
// C[b, h, m, n] += A B stays whole for attn-matmul-to-cpu-gemm; other
// generics are still split. Without the option, the contraction is split
// like any generic.
#eA = affine_map<(b, h, m, d, n) -> (n, m)>
#eB = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#eC = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
// CHECK-LABEL: func.func @contraction
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
// SPLIT-LABEL: func.func @contraction
// SPLIT: scf.forall
// SPLIT: linalg.generic
func.func @contraction(%e: tensor<64x16xf32>, %k: tensor<2x6x64x8xf32>, %o: tensor<2x6x16x8xf32>) -> tensor<2x6x16x8xf32> {
  %r = linalg.generic {indexing_maps = [#eA, #eB, #eC], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
    ins(%e, %k : tensor<64x16xf32>, tensor<2x6x64x8xf32>) outs(%o : tensor<2x6x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x6x16x8xf32>
  return %r : tensor<2x6x16x8xf32>
}

// A generic that is not a multiply-add is split either way.
// CHECK-LABEL: func.func @max_reduction
// CHECK: scf.forall
#mA = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
func.func @max_reduction(%x: tensor<2x6x16x64xf32>, %k: tensor<2x6x64x8xf32>, %o: tensor<2x6x16x8xf32>) -> tensor<2x6x16x8xf32> {
  %r = linalg.generic {indexing_maps = [#mA, #eB, #eC], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
    ins(%x, %k : tensor<2x6x16x64xf32>, tensor<2x6x64x8xf32>) outs(%o : tensor<2x6x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.maximumf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x6x16x8xf32>
  return %r : tensor<2x6x16x8xf32>
}

// A layer's product on packed weights (B in panels of 16 columns, as
// attn-compile builds a layer artifact's) and the element-wise epilogue on
// its result stay whole too: the GEMM splits the product over the cores
// and fuses the epilogue. Split by rows, each row would be a GEMM of its
// own (the layer ran 3x slower).
// CHECK-LABEL: func.func @packed_product
// CHECK-NOT: scf.forall
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK-NOT: scf.forall
// SPLIT-LABEL: func.func @packed_product
// SPLIT: scf.forall
#pA = affine_map<(m, n, k) -> (m, k)>
#pB = affine_map<(m, n, k) -> (n floordiv 16, k, n mod 16)>
#pC = affine_map<(m, n, k) -> (m, n)>
#bias = affine_map<(m, n) -> (n)>
#id = affine_map<(m, n) -> (m, n)>
func.func @packed_product(%x: tensor<?x32xf32>, %w: tensor<3x32x16xf32>, %bias: tensor<48xf32>, %init: tensor<?x48xf32>) -> tensor<?x48xf32> {
  %p = linalg.generic {indexing_maps = [#pA, #pB, #pC], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : tensor<?x32xf32>, tensor<3x32x16xf32>) outs(%init : tensor<?x48xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x48xf32>
  %e = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel"]}
    ins(%bias : tensor<48xf32>) outs(%p : tensor<?x48xf32>) {
  ^bb0(%b: f32, %c: f32):
    %s = arith.addf %c, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x48xf32>
  return %e : tensor<?x48xf32>
}

// The same element-wise generic on anything else is split.
// CHECK-LABEL: func.func @elementwise_alone
// CHECK: scf.forall
func.func @elementwise_alone(%bias: tensor<48xf32>, %y: tensor<?x48xf32>) -> tensor<?x48xf32> {
  %e = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel"]}
    ins(%bias : tensor<48xf32>) outs(%y : tensor<?x48xf32>) {
  ^bb0(%b: f32, %c: f32):
    %s = arith.addf %c, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x48xf32>
  return %e : tensor<?x48xf32>
}
