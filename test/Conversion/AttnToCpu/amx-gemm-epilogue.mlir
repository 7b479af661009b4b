// RUN: attn-opt %s --attn-set-target=target=cpu-amx --attn-matmul-to-cpu-gemm --canonicalize | FileCheck %s

#x = affine_map<(m, n, k) -> (m, k)>
#wpairs = affine_map<(m, n, k) -> (n floordiv 16, k floordiv 2, (n mod 16) * 2 + k mod 2)>
#y = affine_map<(m, n, k) -> (m, n)>

// A zero fill before the product and a bias + ReLU epilogue after it: the
// block function takes the bias as an extra argument, fills its scratch
// with zeros instead of reading C, and copies each row back through the
// epilogue (bias loaded per column vector, maximumf on vectors); neither
// the fill nor the generic is left.
// CHECK-LABEL: func.func @pairs_bias_relu
// CHECK-NOT: linalg.fill
// CHECK: func.call @__attn_amx_gemm_block(%{{.*}}, %{{.*}}, %arg3, {{.*}}, %arg2) : (memref<?x256xbf16>, memref<512x32xbf16>, memref<?x60xf32>, index, index, index, index, index, memref<60xf32>) -> ()
// CHECK-NOT: linalg.generic
// CHECK: func.func private @__attn_amx_gemm_block(
// CHECK-SAME: %[[BIAS:[^:]*]]: memref<60xf32>)
// CHECK-NOT: vector.maskedload %arg2
// CHECK: amx.tile_mulf
// CHECK: vector.maskedload %[[BIAS]]
// CHECK: arith.addf {{.*}} : vector<16xf32>
// CHECK: arith.maximumf {{.*}} : vector<16xf32>
// CHECK: vector.maskedstore %arg2
func.func @pairs_bias_relu(%x: memref<?x256xf32>, %w: memref<4x128x32xbf16>, %bias: memref<60xf32>, %y: memref<?x60xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x60xf32>)
  linalg.generic {indexing_maps = [#x, #wpairs, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<?x256xf32>, memref<4x128x32xbf16>) outs(%y : memref<?x60xf32>) {
  ^bb0(%a: f32, %b: bf16, %c: f32):
    %ab = arith.truncf %a : f32 to bf16
    %aw = arith.extf %ab : bf16 to f32
    %bw = arith.extf %b : bf16 to f32
    %p = arith.mulf %aw, %bw : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%bias : memref<60xf32>) outs(%y : memref<?x60xf32>) {
  ^bb0(%b: f32, %c: f32):
    %floor = arith.constant 0.0 : f32
    %s = arith.addf %c, %b : f32
    %r = arith.maximumf %s, %floor : f32
    linalg.yield %r : f32
  }
  return
}
