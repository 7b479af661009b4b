// RUN: attn-opt %s --split-input-file --attn-tile="target=cpu-avx512 kv-tile=0" --attn-to-cpu-kernels="vector-bits=512" --canonicalize | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-tile="target=cpu-avx2 kv-tile=0" --attn-to-cpu-kernels="vector-bits=256" --canonicalize | FileCheck %s --check-prefix=AVX2

// Decoding: 4 query heads per key/value head times one query fit one
// vector, so the kernel packs the group into its lanes: one call per
// (batch, key/value head) over a 16-lane query tile, blocks of 16 key rows
// (half the 32 zmm registers hold sums), the next key tile prefetched.
// CHECK-LABEL: func.func private @decode__attn_cpu_group_tile
// CHECK-SAME: (%{{.*}}: memref<1x8x1x128xf32>, %{{.*}}: memref<1x2x4096x128xf32>, %{{.*}}: memref<1x2x4096x128xf32>, %{{.*}}: memref<1x8x1x128xf32>, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index)
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<128x16xf32>
// CHECK: memref.prefetch %{{.*}}[{{.*}}], read, locality<3>, data : memref<1x2x4096x128xf32>
// CHECK: memref.prefetch %{{.*}}[{{.*}}], read, locality<3>, data : memref<1x2x4096x128xf32>
// CHECK: %{{.*}}:16 = scf.for %{{.*}} = %c0 to %c128 step %c1 iter_args(
// CHECK-COUNT-16: vector.fma
// The sizes are static and fit: no per-head kernel, no run-time choice.
// CHECK-NOT: __attn_cpu_flash_tile
// CHECK-LABEL: func.func @decode(
// CHECK-NOT: scf.if
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK-NEXT: func.call @decode__attn_cpu_group_tile
// AVX2-LABEL: func.func private @decode__attn_cpu_group_tile
// AVX2: memref.alloca() {alignment = 64 : i64} : memref<128x8xf32>
func.func @decode(%q: tensor<1x8x1x128xf32>, %k: tensor<1x2x4096x128xf32>, %v: tensor<1x2x4096x128xf32>) -> tensor<1x8x1x128xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x1x128xf32>, tensor<1x2x4096x128xf32>, tensor<1x2x4096x128xf32>) -> tensor<1x8x1x128xf32>
  return %o : tensor<1x8x1x128xf32>
}

// -----

// Dynamic lengths (a layer's one kernel for prompts and decoding steps):
// both kernels, chosen per call by whether heads per group times queries
// fit the vector.
// CHECK-LABEL: func.func @any_length(
// CHECK: %[[FITS:.*]] = arith.cmpi ule, %{{.*}}, %c16
// CHECK: scf.if %[[FITS]]
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
