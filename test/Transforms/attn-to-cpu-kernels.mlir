// RUN: attn-opt %s --split-input-file --attn-to-cpu-kernels="vector-bits=256" --canonicalize | FileCheck %s --check-prefixes=CHECK,AVX2
// RUN: attn-opt %s --split-input-file --attn-to-cpu-kernels="vector-bits=512" --canonicalize | FileCheck %s --check-prefixes=CHECK,AVX512

// The op becomes a forall over (head, query tile) calling an outlined tile
// function on buffers; the result is the output buffer as a tensor.
// CHECK-LABEL: func.func private @dense__attn_cpu_flash_tile
// CHECK-SAME: (%[[Q:.*]]: memref<1x4x97x64xf32>, %[[K:.*]]: memref<1x2x100x64xf32>, %[[V:.*]]: memref<1x2x100x64xf32>, %[[O:.*]]: memref<1x4x97x64xf32>, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index)
// Scratch lives in the call's frame: packed Q^T, S^T, acc^T, m, l.
// AVX2:   memref.alloca() {alignment = 64 : i64} : memref<64x24xf32>
// AVX2:   memref.alloca() {alignment = 64 : i64} : memref<128x24xf32>
// AVX512: memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// AVX512: memref.alloca() {alignment = 64 : i64} : memref<128x64xf32>
// The score micro-kernel: (4 rows x 3 | 6 rows x 4) vectors accumulated
// over D.
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(
// AVX2-COUNT-3: vector.load {{.*}} : memref<64x24xf32>, vector<8xf32>
// AVX512-COUNT-4: vector.load {{.*}} : memref<64x64xf32>, vector<16xf32>
// CHECK: memref.load %[[K]]
// CHECK: vector.broadcast
// CHECK: vector.fma
// Online softmax: vertical max, exp with exact zeros for -inf, sums.
// CHECK: arith.maximumf {{.*}} : vector<{{8|16}}xf32>
// CHECK: math.exp {{.*}} : vector<{{8|16}}xf32>
// CHECK: arith.select
// The accumulator update reads V.
// CHECK: memref.load %[[V]]
// CHECK: vector.fma
// Rows that kept nothing are stored as 0.
// CHECK: arith.cmpf oeq
// CHECK: memref.store {{.*}}, %[[O]]
// CHECK-LABEL: func.func @dense
// CHECK: %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x4x97x64xf32>
// AVX2:   scf.forall (%[[H:.*]], %[[T:.*]]) in (4, 5)
// AVX512: scf.forall (%[[H:.*]], %[[T:.*]]) in (4, 2)
// CHECK:   func.call @dense__attn_cpu_flash_tile({{.*}}, %[[OUT]], %c0, %[[H]], %[[T]])
// CHECK: bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NOT: attn.attention
func.func @dense(%q: tensor<1x4x97x64xf32>, %k: tensor<1x2x100x64xf32>,
                 %v: tensor<1x2x100x64xf32>) -> tensor<1x4x97x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x97x64xf32>, tensor<1x2x100x64xf32>, tensor<1x2x100x64xf32>)
      -> tensor<1x4x97x64xf32>
  return %o : tensor<1x4x97x64xf32>
}

// -----

// Causal: the kv loop skips empty tiles and masks only partial ones
// (canonicalization folds "not empty" / "not full" into the comparisons).
// CHECK-LABEL: func.func private @causal__attn_cpu_flash_tile
// CHECK: scf.for %{{.*}} = %c0 to %c300 step %c128 {
// CHECK:   %[[NONEMPTY:.*]] = arith.cmpi sle
// CHECK:   scf.if %[[NONEMPTY]] {
// CHECK:     vector.fma
// CHECK:     %[[PARTIAL:.*]] = arith.cmpi sgt
// CHECK:     scf.if %[[PARTIAL]] {
// The pattern is evaluated for a vector of queries against one key.
// CHECK:       arith.cmpi sle, %{{.*}}, %{{.*}} : vector<{{8|16}}xindex>
// CHECK:       arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<{{8|16}}xi1>, vector<{{8|16}}xf32>
func.func @causal(%q: tensor<1x1x300x64xf32>, %k: tensor<1x1x300x64xf32>,
                  %v: tensor<1x1x300x64xf32>) -> tensor<1x1x300x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x1x300x64xf32>, tensor<1x1x300x64xf32>, tensor<1x1x300x64xf32>)
      -> tensor<1x1x300x64xf32>
  return %o : tensor<1x1x300x64xf32>
}

// -----

// What the fast path lacks (dense operands, table-operand mods) stays for
// attn-tile.
// CHECK-LABEL: func.func @with_bias
// CHECK: attn.attention
// CHECK-NOT: func.call
func.func @with_bias(%q: tensor<1x1x8x16xf32>, %b: tensor<1x1x8x8xf32>)
    -> tensor<1x1x8x16xf32> {
  %o = attn.attention %q, %q, %q bias(%b)
      : (tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>,
         tensor<1x1x8x8xf32>) -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}

// -----

// Lane-wise score mods run in the kernel: ALiBi's slope for the tile's head
// comes from a constant table and is broadcast over the query lanes.
// CHECK-LABEL: func.func private @alibi__attn_cpu_flash_tile
// CHECK: vector.fma
// CHECK: tensor.extract %{{.*}}[%{{.*}}] : tensor<2xf32>
// CHECK: vector.broadcast {{.*}} : f32 to vector<{{8|16}}xf32>
// CHECK: math.absf {{.*}} : vector<{{8|16}}xf32>
// CHECK: math.tanh {{.*}} : vector<{{8|16}}xf32>
func.func @alibi(%q: tensor<1x2x64x16xf32>) -> tensor<1x2x64x16xf32> {
  %o = attn.attention %q, %q, %q pattern(#attn.causal)
      mods = [#attn.alibi<max_bias = 8.0>, #attn.softcap<cap = 30.0>]
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}
