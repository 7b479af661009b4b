// RUN: attn-opt %s --attn-set-target=target=cpu-avx512 --attn-matmul-to-cpu-gemm --canonicalize | FileCheck %s
// RUN: attn-opt %s --attn-set-target=target=cpu-avx2 --attn-matmul-to-cpu-gemm --canonicalize | FileCheck %s --check-prefix=AVX2

// B stored [K, N]: B is packed in a parallel loop (masked vector loads: N
// need not fill a panel; 94 panels of 32 columns hold N = 3000), then per
// block of 768 k's A is packed (parallel over row blocks) and a forall over
// (column group, row chunk) runs 12 x 32 register blocks: per k two B
// vectors, 12 broadcasts of packed A, 24 FMAs carried across the k-block.
// CHECK-LABEL: func.func @kn
// CHECK: %[[PB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<94x768x32xf32>
// CHECK: scf.forall
// CHECK: vector.maskedload %arg1
// CHECK: vector.store {{.*}}, %[[PB]]
// CHECK: %[[PA:.*]] = memref.alloc({{.*}}) {alignment = 64 : i64} : memref<?x768x12xf32>
// A whole row block packs 16 k's at a time: 12 row vectors, a 16 x 16
// transpose in registers (4 butterfly stages of 16 shuffles, 4 rows of
// zeros), 16 stores of 12 floats; the k's past whole vectors and blocks
// with rows past M are copied element by element.
// CHECK: scf.forall
// CHECK: scf.if
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c16 {
// CHECK-COUNT-12: vector.load %arg0[{{.*}}] : memref<?x768xf32>, vector<16xf32>
// CHECK-COUNT-64: vector.shuffle
// CHECK-COUNT-16: vector.store %{{.*}}, %[[PA]][{{.*}}] : memref<?x768x12xf32>, vector<12xf32>
// CHECK: memref.store {{.*}}, %[[PA]]
// CHECK: } else {
// CHECK: memref.store {{.*}}, %[[PA]]
// 16 groups of 6 panels (one per parallel tile).
// CHECK: scf.forall ({{.*}}, {{.*}}) in (16, 
// The first 12 k-steps prefetch a row each of the next row block's C
// tile (both vectors), the rest of the k-block runs the same steps alone.
// CHECK: vector.maskedload %arg2
// CHECK: %[[WARM:.*]]:24 = scf.for %{{.*}} = %c0 to %c12 step %c1 {{.*}} -> (vector<16xf32>
// CHECK-COUNT-2: memref.prefetch %arg2[{{.*}}], read, locality<3>, data
// CHECK-COUNT-2: vector.load %[[PB]]
// CHECK: memref.load %[[PA]]
// CHECK: vector.broadcast
// CHECK-COUNT-2: vector.fma
// CHECK: %[[SUMS:.*]]:24 = scf.for %{{.*}} = %c12 to %c768 step %c1 iter_args(%{{.*}} = %[[WARM]]#0
// CHECK-NOT: memref.prefetch
// CHECK-COUNT-2: vector.load %[[PB]]
// CHECK: vector.maskedstore %arg2{{.*}}, %[[SUMS]]#0
// CHECK: memref.dealloc %[[PA]]
// CHECK: memref.dealloc %[[PB]]
// CHECK-NOT: linalg.matmul
// AVX2-LABEL: func.func @kn
// AVX2: memref<188x768x16xf32>
// AVX2: memref<?x768x6xf32>
// AVX2: scf.for %{{.*}} = %c0 to %{{.*}} step %c8 {
// AVX2-COUNT-6: vector.load %arg0[{{.*}}] : memref<?x768xf32>, vector<8xf32>
// AVX2-COUNT-24: vector.shuffle
// AVX2-COUNT-8: vector.store %{{.*}} : memref<?x768x6xf32>, vector<6xf32>
// AVX2: %{{.*}}:12 = scf.for {{.*}} -> (vector<8xf32>
func.func @kn(%x: memref<?x768xf32>, %w: memref<768x3000xf32>, %y: memref<?x3000xf32>) {
  linalg.matmul ins(%x, %w : memref<?x768xf32>, memref<768x3000xf32>) outs(%y : memref<?x3000xf32>)
  return
}

// B stored [N, K] (nn.Linear's weight): the packing copy transposes, a
// whole panel 16 x 16 at a time in registers (per half of the panel 16
// row vectors, 64 shuffles, 16 stores), the k's past whole vectors and
// panels past N element by element, zeros past N.
// CHECK-LABEL: func.func @nk
// CHECK: scf.forall
// CHECK: %[[WHOLE:.*]] = arith.cmpi ule
// CHECK: %[[KSTART:.*]] = arith.select %[[WHOLE]]
// CHECK: scf.for %{{.*}} = %c0 to %[[KSTART]] step %c16 {
// CHECK-COUNT-16: vector.load %arg1
// CHECK-COUNT-64: vector.shuffle
// CHECK-COUNT-16: vector.store
// CHECK-COUNT-16: vector.load %arg1
// CHECK: scf.if
// CHECK: scf.for %{{.*}} = %[[KSTART]] to
// CHECK: memref.load %arg1
// CHECK: else
// CHECK: memref.store %cst
// CHECK: vector.fma
// CHECK-NOT: linalg.matmul
func.func @nk(%x: memref<?x?xf32>, %w: memref<?x?xf32>, %y: memref<?x?xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<?x?xf32>, memref<?x?xf32>) outs(%y : memref<?x?xf32>)
  return
}

// B already in panels of 32 columns (weights packed once): only A is
// packed; the micro-kernel reads the operand itself.
#x = affine_map<(m, n, k) -> (m, k)>
#w32 = affine_map<(m, n, k) -> (n floordiv 32, k, n mod 32)>
#y = affine_map<(m, n, k) -> (m, n)>
// M is dynamic: the product has a form per row count, chosen at run time
// (m > 1 ? (m > 4 ? 12 rows : 4 rows) : 1 row), each with its own packed A
// and micro-kernel of that many rows x 2 vectors (a decode step's single
// row would otherwise run 12 rows' FMAs); each micro-kernel has two k
// loops (the first prefetches C), so the 1-row form has 4 FMAs in all.
// CHECK-LABEL: func.func @packed
// CHECK: %[[M:.*]] = memref.dim %arg0, %c0
// CHECK: %[[MORE1:.*]] = arith.cmpi sgt, %[[M]], %c1
// CHECK: scf.if %[[MORE1]] {
// CHECK: %[[MORE4:.*]] = arith.cmpi sgt, %[[M]], %c4
// CHECK: scf.if %[[MORE4]] {
// A's block is no deeper than K = 64 (not the 768 of a k-block).
// CHECK: memref.alloc({{.*}}) {{.*}} : memref<?x64x12xf32>
// CHECK-COUNT-24: vector.fma
// CHECK: } else {
// CHECK: memref.alloc({{.*}}) {{.*}} : memref<?x64x4xf32>
// CHECK-COUNT-8: vector.fma
// CHECK: } else {
// CHECK: memref.alloc({{.*}}) {{.*}} : memref<?x64x1xf32>
// CHECK: vector.load %arg1
// CHECK-COUNT-4: vector.fma
// CHECK-NOT: vector.fma
// CHECK-NOT: linalg.generic
// CHECK: return
// AVX2-LABEL: func.func @packed
// AVX2: linalg.generic
func.func @packed(%x: memref<?x64xf32>, %w: memref<3x64x32xf32>, %y: memref<?x70xf32>) {
  linalg.generic {indexing_maps = [#x, #w32, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<?x64xf32>, memref<3x64x32xf32>) outs(%y : memref<?x70xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}

// M known to be 1: the 1-row form alone.
// CHECK-LABEL: func.func @packed_one_row
// CHECK-NOT: arith.cmpi sgt
// CHECK-NOT: x12xf32>
// CHECK: memref.alloc{{.*}} : memref<1x64x1xf32>
// CHECK-COUNT-4: vector.fma
// CHECK-NOT: vector.fma
// CHECK: return
func.func @packed_one_row(%x: memref<1x64xf32>, %w: memref<3x64x32xf32>, %y: memref<1x70xf32>) {
  linalg.generic {indexing_maps = [#x, #w32, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<1x64xf32>, memref<3x64x32xf32>) outs(%y : memref<1x70xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}

// Weights kept in bf16 / f16 (the body widens them): the micro-kernel
// loads 16 16-bit values per vector and widens them in registers before
// the same 24 FMAs; A, C and the sums stay f32.
#w16 = affine_map<(m, n, k) -> (n floordiv 16, k, n mod 16)>
// CHECK-LABEL: func.func @packed_bf16
// CHECK-COUNT-1: memref.alloc
// CHECK: %[[W0:.*]] = vector.load %arg1{{.*}} : memref<3x64x32xbf16>, vector<16xbf16>
// CHECK: arith.extf %[[W0]] : vector<16xbf16> to vector<16xf32>
// CHECK: %[[W1:.*]] = vector.load %arg1{{.*}} : memref<3x64x32xbf16>, vector<16xbf16>
// CHECK: arith.extf %[[W1]] : vector<16xbf16> to vector<16xf32>
// CHECK-COUNT-24: vector.fma
// CHECK-NOT: linalg.generic
// CHECK: return
// AVX2-LABEL: func.func @packed_f16
// AVX2: vector.load %arg1{{.*}} : memref<5x9x16xf16>, vector<8xf16>
// AVX2: arith.extf {{.*}} : vector<8xf16> to vector<8xf32>
// AVX2-COUNT-12: vector.fma
// AVX2-NOT: linalg.generic
func.func @packed_bf16(%x: memref<?x64xf32>, %w: memref<3x64x32xbf16>, %y: memref<?x70xf32>) {
  linalg.generic {indexing_maps = [#x, #w32, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<?x64xf32>, memref<3x64x32xbf16>) outs(%y : memref<?x70xf32>) {
  ^bb0(%a: f32, %b: bf16, %c: f32):
    %bw = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bw : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}
func.func @packed_f16(%x: memref<?x9xf32>, %w: memref<5x9x16xf16>, %y: memref<?x70xf32>) {
  linalg.generic {indexing_maps = [#x, #w16, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<?x9xf32>, memref<5x9x16xf16>) outs(%y : memref<?x70xf32>) {
  ^bb0(%a: f32, %b: f16, %c: f32):
    %bw = arith.extf %b : f16 to f32
    %p = arith.mulf %bw, %a : f32
    %s = arith.addf %p, %c : f32
    linalg.yield %s : f32
  }
  return
}

// A 16-bit weight the body does not widen to f32 (a product in f16) is
// left alone.
// CHECK-LABEL: func.func @packed_f16_product
// CHECK: linalg.generic
// AVX2-LABEL: func.func @packed_f16_product
// AVX2: linalg.generic
func.func @packed_f16_product(%x: memref<?x64xf16>, %w: memref<3x64x32xf16>, %y: memref<?x70xf16>) {
  linalg.generic {indexing_maps = [#x, #w32, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<?x64xf16>, memref<3x64x32xf16>) outs(%y : memref<?x70xf16>) {
  ^bb0(%a: f16, %b: f16, %c: f16):
    %p = arith.mulf %a, %b : f16
    %s = arith.addf %c, %p : f16
    linalg.yield %s : f16
  }
  return
}

// Left alone: a product on tensors, f16 elements, and a body that is not
// a multiply-add.
// C zero-filled just before the product (the decompositions' pattern):
// the fill runs only when K is 0 (the GEMM then writes nothing), and the
// micro-kernel's first k-block starts from zeros instead of reading C.
// CHECK-LABEL: func.func @overwrite
// CHECK: %[[K:.*]] = memref.dim %arg0, %c1
// CHECK: %[[EMPTY:.*]] = arith.cmpi eq, %[[K]], %c0
// CHECK: scf.if %[[EMPTY]] {
// CHECK-NEXT: linalg.fill
// CHECK: scf.for %[[K0:.*]] = %c0 to %{{.*}} step %c768
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[K0]], %c0
// CHECK: %{{.*}}:24 = scf.if %[[FIRST]] -> (vector<16xf32>
// CHECK-NOT: vector.maskedload
// CHECK: } else {
// CHECK: vector.maskedload %arg2
// CHECK: vector.fma
// A fill of another value stays.
// CHECK-LABEL: func.func @fill_one
// CHECK: linalg.fill
// CHECK-NOT: :24 = scf.if
// CHECK: vector.fma
func.func @overwrite(%x: memref<?x?xf32>, %w: memref<?x40xf32>, %y: memref<?x40xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x40xf32>)
  linalg.matmul ins(%x, %w : memref<?x?xf32>, memref<?x40xf32>) outs(%y : memref<?x40xf32>)
  return
}
func.func @fill_one(%x: memref<?x?xf32>, %w: memref<?x40xf32>, %y: memref<?x40xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%y : memref<?x40xf32>)
  linalg.matmul ins(%x, %w : memref<?x?xf32>, memref<?x40xf32>) outs(%y : memref<?x40xf32>)
  return
}

// CHECK-LABEL: func.func @tensors
// CHECK: linalg.matmul
func.func @tensors(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %y: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %r = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%y : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
// CHECK-LABEL: func.func @half
// CHECK: linalg.matmul
func.func @half(%x: memref<4x8xf16>, %w: memref<8x16xf16>, %y: memref<4x16xf16>) {
  linalg.matmul ins(%x, %w : memref<4x8xf16>, memref<8x16xf16>) outs(%y : memref<4x16xf16>)
  return
}
// CHECK-LABEL: func.func @not_multiply_add
// CHECK: linalg.generic
// CHECK: arith.maximumf
func.func @not_multiply_add(%x: memref<?x64xf32>, %w: memref<3x64x32xf32>, %y: memref<?x70xf32>) {
  linalg.generic {indexing_maps = [#x, #w32, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<?x64xf32>, memref<3x64x32xf32>) outs(%y : memref<?x70xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.maximumf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}

// A decomposition's batched contraction (Linformer's E^T K: a shared E
// stored [n, k'], so A is transposed; K per (batch, head)): with 12 batch
// indices (enough for the cores), a forall over them, each a GEMM on
// rank-reduced views; A is packed from its transposed layout: a whole
// block of 12 rows is one contiguous vector per k, rows past M (16 = 12 +
// 4) one at a time.
#eA = affine_map<(b, h, m, d, n) -> (n, m)>
#eB = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#eC = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
// CHECK-LABEL: func.func @batched
// CHECK: scf.forall (%[[B:.*]], %[[H:.*]]) in (2, 6)
// CHECK: memref.subview %arg1[%[[B]], %[[H]], 0, 0] [1, 1, 1025, 64] [1, 1, 1, 1] : memref<2x6x1025x64xf32> to memref<1025x64xf32, strided<[64, 1], offset: ?>>
// CHECK: memref.subview %arg2[%[[B]], %[[H]], 0, 0] [1, 1, 16, 64]
// CHECK: %[[ROWS:.*]] = vector.load %arg0[{{.*}}, {{.*}}] : memref<1025x16xf32>, vector<12xf32>
// CHECK: vector.store %[[ROWS]], %{{.*}}[{{.*}}, {{.*}}, %c0] : memref<2x768x12xf32>, vector<12xf32>
// CHECK: } else {
// CHECK: memref.load %arg0[{{.*}}, {{.*}}] : memref<1025x16xf32>
// CHECK: vector.fma
// CHECK-NOT: linalg.generic
func.func @batched(%e: memref<1025x16xf32>, %k: memref<2x6x1025x64xf32>, %o: memref<2x6x16x64xf32>) {
  linalg.generic {indexing_maps = [#eA, #eB, #eC], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
    ins(%e, %k : memref<1025x16xf32>, memref<2x6x1025x64xf32>) outs(%o : memref<2x6x16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}

// Few (or unknown) batch indices: one after the other, each GEMM split
// over the cores.
// CHECK-LABEL: func.func @batched_dynamic
// CHECK: scf.for
// CHECK: memref.subview
// CHECK: scf.forall
// CHECK: vector.fma
func.func @batched_dynamic(%e: memref<1025x16xf32>, %k: memref<?x1x1025x64xf32>, %o: memref<?x1x16x64xf32>) {
  linalg.generic {indexing_maps = [#eA, #eB, #eC], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
    ins(%e, %k : memref<1025x16xf32>, memref<?x1x1025x64xf32>) outs(%o : memref<?x1x16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}

// Inside a parallel loop (a tile attn-parallelize-linalg made), the
// contraction is left as it is.
// CHECK-LABEL: func.func @inside_forall
// CHECK: scf.forall
// CHECK: linalg.generic
func.func @inside_forall(%e: memref<1025x16xf32>, %k: memref<2x6x1025x64xf32>, %o: memref<2x6x16x64xf32>) {
  scf.forall (%i) in (2) {
    linalg.generic {indexing_maps = [#eA, #eB, #eC], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%e, %k : memref<1025x16xf32>, memref<2x6x1025x64xf32>) outs(%o : memref<2x6x16x64xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    }
  }
  return
}
