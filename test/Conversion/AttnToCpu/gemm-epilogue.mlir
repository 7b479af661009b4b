// RUN: attn-opt %s --attn-set-target=target=cpu-avx512 --attn-matmul-to-cpu-gemm --canonicalize | FileCheck %s

// A layer's product y = gelu(x W + bias) on packed weights: the zero fill
// becomes the first k-block's zero start, and the element-wise generic is
// applied to the 12 x 2 accumulator vectors of the last k-block (k0 + 768
// >= 1536) before the masked stores: the bias read once per column vector,
// the body's ops on vectors. Nothing is left to run over y again.
// CHECK-LABEL: func.func @bias_gelu
// CHECK-NOT: linalg.fill
// CHECK: scf.for %[[K0:.*]] = %c0 to %c1536 step %c768
// CHECK: memref.prefetch
// CHECK: %[[SUMS:.*]]:24 = scf.for
// CHECK: %[[LAST:.*]] = arith.cmpi sge, %{{.*}}, %c1536
// CHECK: %[[DONE:.*]]:24 = scf.if %[[LAST]]
// CHECK-COUNT-2: vector.maskedload %arg2[{{.*}} : memref<3072xf32>
// CHECK: arith.addf %[[SUMS]]#0, {{.*}} : vector<16xf32>
// CHECK: math.erf {{.*}} : vector<16xf32>
// CHECK: scf.yield
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[SUMS]]#0, %[[SUMS]]#1
// CHECK: vector.maskedstore %arg3[{{.*}}], {{.*}}, %[[DONE]]#0
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @bias_gelu(%x: memref<?x1536xf32>, %w: memref<96x1536x32xf32>, %bias: memref<3072xf32>, %y: memref<?x3072xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x3072xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n floordiv 32, k, n mod 32)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<?x1536xf32>, memref<96x1536x32xf32>) outs(%y : memref<?x3072xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%bias : memref<3072xf32>) outs(%y : memref<?x3072xf32>) {
  ^bb0(%b: f32, %c: f32):
    %half = arith.constant 0.5 : f32
    %s = arith.addf %c, %b : f32
    %g = math.erf %s : f32
    %t = arith.mulf %g, %half : f32
    linalg.yield %t : f32
  }
  return
}

// SwiGLU's gate: an (m, n) operand read with C's row masks (rows past M
// load zeros, as C's own rows do), and a scalar from outside the body
// broadcast. K is dynamic: the epilogue stays behind, under K = 0 only
// (no k-block runs then to apply it), and so does the fill.
// CHECK-LABEL: func.func @gate_dynamic_k
// CHECK: %[[K:.*]] = memref.dim %arg0, %c1
// CHECK: %[[EMPTY:.*]] = arith.cmpi eq, %[[K]], %c0
// CHECK: scf.if %[[EMPTY]] {
// CHECK-NEXT: linalg.fill
// CHECK: scf.forall
// CHECK: arith.cmpi sge, {{.*}}, %[[K]]
// CHECK: scf.if
// CHECK: vector.maskedload %arg3[{{.*}} : memref<?x64xf32>
// CHECK: math.exp {{.*}} : vector<16xf32>
// CHECK: vector.broadcast %arg4 : f32 to vector<16xf32>
// CHECK: vector.maskedstore %arg2
// CHECK: memref.dealloc
// The product's forms for 4 rows and 1 (matmul-to-cpu-gemm.mlir) end
// with the last one's packed A (min(K, 768) deep: K is dynamic here).
// CHECK: memref.dealloc {{.*}} : memref<?x?x1xf32>
// CHECK: %[[EMPTY2:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK-NEXT: scf.if %[[EMPTY2]] {
// CHECK-NEXT: linalg.generic
func.func @gate_dynamic_k(%x: memref<?x?xf32>, %w: memref<?x64xf32>, %y: memref<?x64xf32>, %up: memref<?x64xf32>, %scale: f32) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x64xf32>)
  linalg.matmul ins(%x, %w : memref<?x?xf32>, memref<?x64xf32>) outs(%y : memref<?x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%up : memref<?x64xf32>) outs(%y : memref<?x64xf32>) {
  ^bb0(%u: f32, %c: f32):
    %n = arith.negf %c : f32
    %e = math.exp %n : f32
    %one = arith.constant 1.0 : f32
    %d = arith.addf %e, %one : f32
    %s = arith.divf %c, %d : f32
    %g = arith.mulf %s, %u : f32
    %t = arith.mulf %g, %scale : f32
    linalg.yield %t : f32
  }
  return
}

// Left alone (the products become GEMMs, the generics stay): an input read
// along columns (m), C itself as an input (earlier k-blocks have stored
// partial sums into it by the time the last one runs), an op outside arith
// and math, and a generic that does not follow the product.
// CHECK-LABEL: func.func @not_epilogues
// CHECK: vector.fma
// CHECK-NOT: arith.cmpi sge
// CHECK: linalg.generic
// CHECK: vector.fma
// CHECK-NOT: arith.cmpi sge
// CHECK: linalg.generic
// CHECK: vector.fma
// CHECK-NOT: arith.cmpi sge
// CHECK: linalg.generic
// CHECK: vector.fma
// CHECK-NOT: arith.cmpi sge
// CHECK: memref.copy
// CHECK: linalg.generic
func.func @not_epilogues(%x: memref<?x64xf32>, %w: memref<64x64xf32>, %y: memref<?x64xf32>, %col: memref<?xf32>, %t: memref<?x64xf32>) {
  linalg.matmul ins(%x, %w : memref<?x64xf32>, memref<64x64xf32>) outs(%y : memref<?x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%col : memref<?xf32>) outs(%y : memref<?x64xf32>) {
  ^bb0(%b: f32, %c: f32):
    %s = arith.addf %c, %b : f32
    linalg.yield %s : f32
  }
  linalg.matmul ins(%x, %w : memref<?x64xf32>, memref<64x64xf32>) outs(%y : memref<?x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%y : memref<?x64xf32>) outs(%y : memref<?x64xf32>) {
  ^bb0(%b: f32, %c: f32):
    %s = arith.addf %c, %b : f32
    linalg.yield %s : f32
  }
  linalg.matmul ins(%x, %w : memref<?x64xf32>, memref<64x64xf32>) outs(%y : memref<?x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} outs(%y : memref<?x64xf32>) {
  ^bb0(%c: f32):
    %i = linalg.index 0 : index
    %f = arith.index_cast %i : index to i64
    %g = arith.sitofp %f : i64 to f32
    %s = arith.addf %c, %g : f32
    linalg.yield %s : f32
  }
  linalg.matmul ins(%x, %w : memref<?x64xf32>, memref<64x64xf32>) outs(%y : memref<?x64xf32>)
  memref.copy %y, %t : memref<?x64xf32> to memref<?x64xf32>
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%t : memref<?x64xf32>) outs(%y : memref<?x64xf32>) {
  ^bb0(%b: f32, %c: f32):
    %s = arith.addf %c, %b : f32
    linalg.yield %s : f32
  }
  return
}
