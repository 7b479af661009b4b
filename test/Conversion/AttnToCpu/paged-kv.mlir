// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx512 --attn-tile=kv-tile=0 --attn-to-cpu-kernels --canonicalize | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx512-bf16 --attn-tile=kv-tile=0 --attn-to-cpu-kernels --canonicalize | FileCheck %s --check-prefix=DOT

// Decoding over a paged KV cache (attn.paged_kv, 16 rows per page): the
// packed-heads kernels take the pools [pages, 2, 16, 64] themselves, the
// table and the length after their other arguments, and read each key
// and value row at (table[b, row / 16] clamped to the pool, head,
// row mod 16): no gather, no copy of the cache.
// CHECK-LABEL: func.func private @paged_decode__attn_cpu_group_split_tile
// CHECK-SAME: %{{[a-z0-9]+}}: memref<?x2x16x64xf32>, %{{[a-z0-9]+}}: memref<?x2x16x64xf32>
// CHECK-SAME: %[[TABLE:[a-z0-9]+]]: memref<1x?xi32>, %[[LEN:[a-z0-9]+]]: index)
// The split ranges cover the length, not the pool.
// CHECK: arith.ceildivui %[[LEN]], %c128
// CHECK: %[[SLOT:.*]] = arith.divui %{{.*}}, %c16 : index
// CHECK: %[[ENTRY:.*]] = memref.load %[[TABLE]][%{{.*}}, %[[SLOT]]] : memref<1x?xi32>
// CHECK: %[[PAGE:.*]] = arith.index_cast %[[ENTRY]] : i32 to index
// CHECK: %[[LOW:.*]] = arith.minsi %[[PAGE]], %{{.*}} : index
// CHECK: %[[CLAMPED:.*]] = arith.maxsi %[[LOW]], %c0 : index
// CHECK: %[[ROW:.*]] = arith.remui %{{.*}}, %c16 : index
// CHECK: memref.prefetch %{{.*}}[%[[CLAMPED]], %{{.*}}, %[[ROW]], %{{.*}}], read, locality<2>, data : memref<?x2x16x64xf32>
// A block of 4 keys lies in one page: one table lookup, then rows +1..+3.
// CHECK: %[[SLOT2:.*]] = arith.divui %{{.*}}, %c16 : index
// CHECK: memref.load %[[TABLE]][%{{.*}}, %[[SLOT2]]] : memref<1x?xi32>
// CHECK: %[[PAGE2:.*]] = arith.maxsi %{{.*}}, %c0 : index
// CHECK-NEXT: %[[ROW2:.*]] = arith.remui %{{.*}}, %c16 : index
// CHECK-NEXT: %[[ROW3:.*]] = arith.addi %[[ROW2]], %c1 : index
// CHECK-NOT: memref.load %[[TABLE]]
// CHECK: vector.load %{{.*}}[%[[PAGE2]], %{{.*}}, %[[ROW2]], %{{.*}}] : memref<?x2x16x64xf32>, vector<16xf32>
// CHECK-NEXT: vector.load %{{.*}}[%[[PAGE2]], %{{.*}}, %[[ROW3]], %{{.*}}] : memref<?x2x16x64xf32>, vector<16xf32>
// CHECK-LABEL: func.func private @paged_decode__attn_cpu_group_merge
// CHECK-SAME: memref<?x2x16x64xf32>, %{{[a-z0-9]+}}: memref<?x2x16x64xf32>
// CHECK-LABEL: func.func private @paged_decode__attn_cpu_group_tile
// CHECK-SAME: memref<1x?xi32>, %{{[a-z0-9]+}}: index)
// CHECK-LABEL: func.func private @paged_decode__attn_cpu_flash_tile
// CHECK-SAME: memref<1x?xi32>, %{{[a-z0-9]+}}: index)
// CHECK-LABEL: func.func @paged_decode(
// CHECK-NOT: attn.paged_kv
// CHECK-NOT: linalg.generic
// CHECK: bufferization.to_buffer %arg1 {{.*}} : tensor<?x2x16x64xf32> to memref<?x2x16x64xf32>
// CHECK: bufferization.to_buffer %arg3 {{.*}} : tensor<1x?xi32> to memref<1x?xi32>
// CHECK: func.call @paged_decode__attn_cpu_group_split_tile({{.*}}, %arg4)
// DOT-LABEL: func.func @paged_decode(
// DOT-NOT: attn.paged_kv
func.func @paged_decode(%q: tensor<1x8x?x64xf32>, %kp: tensor<?x2x16x64xf32>, %vp: tensor<?x2x16x64xf32>, %table: tensor<1x?xi32>, %n: index) -> tensor<1x8x?x64xf32> {
  %k = attn.paged_kv %kp[%table] length %n : tensor<?x2x16x64xf32>, tensor<1x?xi32> -> tensor<1x2x?x64xf32>
  %v = attn.paged_kv %vp[%table] length %n : tensor<?x2x16x64xf32>, tensor<1x?xi32> -> tensor<1x2x?x64xf32>
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>) -> tensor<1x8x?x64xf32>
  return %o : tensor<1x8x?x64xf32>
}

// -----

// bf16: pair products (vdpbf16ps) would read V transposed whole once per
// call, copying the cache on every decode step; over a paged cache the
// kernels read the pools in place and widen bf16 rows instead (no
// vdpbf16ps, no transposed V).
// DOT-LABEL: func.func private @paged_bf16__attn_cpu_flash_tile
// DOT-SAME: memref<?x2x16x64xbf16>, %{{[a-z0-9]+}}: memref<?x2x16x64xbf16>
// DOT-SAME: memref<1x?xi32>, %{{[a-z0-9]+}}: index)
// DOT-NOT: x86vector.avx512.dot
// DOT-LABEL: func.func @paged_bf16(
// DOT-NOT: attn.paged_kv
func.func @paged_bf16(%q: tensor<1x8x?x64xbf16>, %kp: tensor<?x2x16x64xbf16>, %vp: tensor<?x2x16x64xbf16>, %table: tensor<1x?xi32>, %n: index) -> tensor<1x8x?x64xbf16> {
  %k = attn.paged_kv %kp[%table] length %n : tensor<?x2x16x64xbf16>, tensor<1x?xi32> -> tensor<1x2x?x64xbf16>
  %v = attn.paged_kv %vp[%table] length %n : tensor<?x2x16x64xbf16>, tensor<1x?xi32> -> tensor<1x2x?x64xbf16>
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) -> tensor<1x8x?x64xbf16>
  return %o : tensor<1x8x?x64xbf16>
}
