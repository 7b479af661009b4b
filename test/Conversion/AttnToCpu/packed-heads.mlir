// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx512 --attn-tile=kv-tile=0 --attn-to-cpu-kernels --canonicalize | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx2 --attn-tile=kv-tile=0 --attn-to-cpu-kernels --canonicalize | FileCheck %s --check-prefix=AVX2

// Decoding: 2 query heads per key/value head times one query fit one
// vector, so the kernel packs the group into its lanes: one call per
// (batch, key/value head) over a 16-lane query tile.
// 16 key/value heads give 16 calls: the keys are not split.
// CHECK-LABEL: func.func private @decode__attn_cpu_group_tile
// CHECK-SAME: (%{{.*}}: memref<1x32x1x128xf32>, %{{.*}}: memref<1x16x4096x128xf32>, %{{.*}}: memref<1x16x4096x128xf32>, %{{.*}}: memref<1x32x1x128xf32>, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index)
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<128x16xf32>
// acc is kept by query row (lanes over the head dim): P V loads each V
// vector once for 4 rows instead of broadcasting V per FMA.
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<16x128xf32>
// The scores are dot products along the head dim (lanes over D): blocks
// of 4 keys x 4 query rows (zero rows past the group's 2), per step of 16
// dims one vector of each key row and of each query row, 16 FMAs; then
// one transposing sum (4 levels of shuffle pairs) stores each key's 4
// scores at once; the keys past whole blocks reduce one by one. Each
// block first prefetches its 4 rows of K 3 key tiles (384 rows) ahead,
// clamped to the last row, into L2 (locality 2: 384 KiB ahead is past any
// L1); V's rows are asked for by P V, so that requests go out all along
// the tile.
// CHECK: scf.for %[[R0:.*]] = %c0 to %{{.*}} step %c4 {
// CHECK: %[[AHEAD:.*]] = arith.addi %{{.*}}, %c384 : index
// CHECK: scf.for %[[R:.*]] = %[[R0]] to %{{.*}} step %c1 {
// CHECK: %[[ROW:.*]] = arith.addi %[[AHEAD]], %[[R]] : index
// CHECK: %[[CLAMPED:.*]] = arith.minsi %[[ROW]], %c4095 : index
// CHECK: memref.prefetch %arg1[%{{.*}}, %{{.*}}, %[[CLAMPED]], %{{.*}}], read, locality<2>, data : memref<1x16x4096x128xf32>
// CHECK-NOT: memref.prefetch %arg2
// CHECK: %{{.*}}:16 = scf.for %{{.*}} = %c0 to %c128 step %c16 iter_args(
// CHECK-COUNT-4: vector.load %{{.*}} : memref<1x16x4096x128xf32>, vector<16xf32>
// CHECK-COUNT-16: vector.fma
// CHECK-NOT: scf.for
// CHECK-COUNT-30: vector.shuffle
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [4], strides = [1]}
// CHECK: vector.store %{{.*}} : memref<128x16xf32>, vector<4xf32>
// CHECK: %{{.*}}:4 = scf.for %{{.*}} = %c0 to %c128 step %c16 iter_args(
// CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc>
// P V, both rows in one block of 2 (no block of 4): 4 vectors of a V row
// per key, each loaded once for all the block's rows. The first block of
// columns prefetches V's row 3 key tiles ahead (clamped), the second not.
// CHECK: %{{.*}}:8 = scf.for %[[KEY:.*]] = %c0 to %{{.*}} step %c1 iter_args(
// CHECK: %[[TILEAHEAD:.*]] = arith.addi %{{.*}}, %c384 : index
// CHECK: %[[VAHEAD:.*]] = arith.addi %[[TILEAHEAD]], %[[KEY]] : index
// CHECK: %[[VROW:.*]] = arith.minsi %[[VAHEAD]], %c4095 : index
// CHECK: memref.prefetch %arg2[%{{.*}}, %{{.*}}, %[[VROW]], %{{.*}}], read, locality<2>, data : memref<1x16x4096x128xf32>
// CHECK-COUNT-4: vector.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %c{{[0-9]+}}] : memref<1x16x4096x128xf32>, vector<16xf32>
// CHECK-COUNT-8: vector.fma
// CHECK: %{{.*}}:8 = scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args(
// CHECK-NOT: memref.prefetch
// CHECK: vector.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %c64] : memref<1x16x4096x128xf32>, vector<16xf32>
// The sizes are static and fit: no per-head kernel, no run-time choice.
// CHECK-NOT: __attn_cpu_flash_tile
// CHECK-LABEL: func.func @decode(
// CHECK-NOT: scf.if
// CHECK: scf.forall (%{{.*}}) in (16)
// CHECK-NEXT: func.call @decode__attn_cpu_group_tile
// AVX2-LABEL: func.func private @decode__attn_cpu_group_tile
// AVX2: memref.alloca() {alignment = 64 : i64} : memref<128x8xf32>
// 8 lanes: blocks of 2 keys x 4 rows, 8 sums, 3 levels of shuffles.
// AVX2: %{{.*}}:8 = scf.for %{{.*}} = %c0 to %c128 step %c8 iter_args(
// AVX2-COUNT-8: vector.fma
// AVX2-NOT: scf.for
// AVX2-COUNT-14: vector.shuffle
// AVX2: vector.store %{{.*}} : memref<128x8xf32>, vector<4xf32>
func.func @decode(%q: tensor<1x32x1x128xf32>, %k: tensor<1x16x4096x128xf32>, %v: tensor<1x16x4096x128xf32>) -> tensor<1x32x1x128xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x32x1x128xf32>, tensor<1x16x4096x128xf32>, tensor<1x16x4096x128xf32>) -> tensor<1x32x1x128xf32>
  return %o : tensor<1x32x1x128xf32>
}

// -----

// MQA: one key/value head would be one call. When the OpenMP runtime has
// more threads (asked per call), its keys are split into up to 8 ranges of
// 4 key tiles (32 tiles), each leaving (acc, m, l) in a slot of a
// [ranges x (D + 2) x 16] buffer in the caller's frame; a merge weighs them
// by exp(m_s - max m) and stores the packed heads.
// CHECK-LABEL: func.func private @mqa__attn_cpu_group_split_tile
// CHECK-SAME: memref<?x?x16xf32>, %{{.*}}: index, %{{.*}}: index)
// CHECK-LABEL: func.func private @mqa__attn_cpu_group_merge
// CHECK: memref.alloca(%{{.*}}) {alignment = 64 : i64} : memref<?x16xf32>
// CHECK: math.exp
// CHECK-LABEL: func.func @mqa(
// CHECK: %[[THREADS:.*]] = call @omp_get_max_threads() : () -> i32
// CHECK: %[[SPLITS:.*]] = arith.maxui
// CHECK: %[[MANY:.*]] = arith.cmpi ugt, %[[SPLITS]], %c1
// CHECK: scf.if %[[MANY]]
// CHECK: memref.alloca_scope
// CHECK: memref.alloca(%[[SPLITS]]) {alignment = 64 : i64} : memref<?x130x16xf32>
// CHECK: scf.forall (%[[S:.*]]) in (%[[SPLITS]])
// CHECK-NEXT: func.call @mqa__attn_cpu_group_split_tile({{.*}}, %[[S]], %[[SPLITS]])
// CHECK: func.call @mqa__attn_cpu_group_merge({{.*}}, %[[SPLITS]])
// CHECK: } else {
// CHECK: func.call @mqa__attn_cpu_group_tile
func.func @mqa(%q: tensor<1x8x1x128xf32>, %k: tensor<1x1x4096x128xf32>, %v: tensor<1x1x4096x128xf32>) -> tensor<1x8x1x128xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x1x128xf32>, tensor<1x1x4096x128xf32>, tensor<1x1x4096x128xf32>) -> tensor<1x8x1x128xf32>
  return %o : tensor<1x8x1x128xf32>
}

// -----

// Dynamic lengths (a layer's one kernel for prompts and decoding steps):
// every kernel, chosen per call: packed heads when heads per group times
// queries fit the vector, split keys when the calls are few and the keys
// many.
// CHECK-LABEL: func.func @any_length(
// CHECK: %[[FITS:.*]] = arith.cmpi ule, %{{.*}}, %c16
// CHECK: scf.if %[[FITS]]
// CHECK: %[[MANY:.*]] = arith.cmpi ugt, %{{.*}}, %c1
// CHECK: scf.if %[[MANY]]
// CHECK: func.call @any_length__attn_cpu_group_split_tile
// CHECK: func.call @any_length__attn_cpu_group_merge
// CHECK: } else {
// CHECK: func.call @any_length__attn_cpu_group_tile
// CHECK: } else {
// CHECK: func.call @any_length__attn_cpu_flash_tile
func.func @any_length(%q: tensor<1x8x?x64xf32>, %k: tensor<1x2x?x64xf32>, %v: tensor<1x2x?x64xf32>) -> tensor<1x8x?x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>) -> tensor<1x8x?x64xf32>
  return %o : tensor<1x8x?x64xf32>
}

// -----

// Many queries cannot fit: the per-head kernel only.
// CHECK-LABEL: func.func @prompt(
// CHECK-NOT: scf.if
// CHECK: func.call @prompt__attn_cpu_flash_tile
// CHECK-NOT: group_tile
func.func @prompt(%q: tensor<1x8x64x64xf32>, %k: tensor<1x2x64x64xf32>, %v: tensor<1x2x64x64xf32>) -> tensor<1x8x64x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x8x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) -> tensor<1x8x64x64xf32>
  return %o : tensor<1x8x64x64xf32>
}
