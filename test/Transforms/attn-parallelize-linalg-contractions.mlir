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
