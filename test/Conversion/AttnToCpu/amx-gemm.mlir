// RUN: attn-opt %s --attn-set-target=target=cpu-amx --attn-matmul-to-cpu-gemm --canonicalize | FileCheck %s
// RUN: attn-opt %s --attn-set-target=target=cpu-avx512 --attn-matmul-to-cpu-gemm | FileCheck %s --check-prefix=NOAMX

// bf16 weights packed in k pairs (AmxGemm.h): A is copied to bf16 rows
// (32 x ceil(M / 32) of them, masked loads, truncf), then a forall over
// (32-row block, column group) calls the block function, which copies C's
// 32 x 32 block to a stack scratch, runs 256 / 32 = 8 steps unrolled with
// the four accumulator tiles loaded once (2 A tiles, 2 B tiles, 4
// tdpbf16ps per step: 32 in all) and copies the block back masked by M
// and N (60 columns: the second pair is partial).
#x = affine_map<(m, n, k) -> (m, k)>
#wpairs = affine_map<(m, n, k) -> (n floordiv 16, k floordiv 2, (n mod 16) * 2 + k mod 2)>
#y = affine_map<(m, n, k) -> (m, n)>
// CHECK-LABEL: func.func @pairs_bf16
// CHECK: %[[A:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x256xbf16>
// CHECK: scf.forall
// CHECK: vector.maskedload %arg0
// CHECK: arith.truncf {{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: vector.store {{.*}}, %[[A]]
// CHECK: %[[W:.*]] = memref.collapse_shape %arg1 {{\[\[}}0, 1], [2]] : memref<4x128x32xbf16> into memref<512x32xbf16>
// CHECK: scf.forall
// CHECK: func.call @__attn_amx_gemm_block(%[[A]], %[[W]], %arg2
// CHECK: memref.dealloc %[[A]]
// CHECK-NOT: linalg.generic
// Without amx=1 the product is left for other lowerings.
// NOAMX-LABEL: func.func @pairs_bf16
// NOAMX: linalg.generic
func.func @pairs_bf16(%x: memref<?x256xf32>, %w: memref<4x128x32xbf16>, %y: memref<?x60xf32>) {
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
  return
}

// Left for other lowerings: an odd panel count (no whole pair of B tiles),
// pair rows not a multiple of 16, and A not rounded to bf16 first.
// CHECK-LABEL: func.func @odd_panels
// CHECK: linalg.generic
// CHECK-LABEL: func.func @partial_depth
// CHECK: linalg.generic
// CHECK-LABEL: func.func @unrounded
// CHECK: linalg.generic
// The block function (one per product) comes last.
// CHECK: func.func private @__attn_amx_gemm_block
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<32x32xf32>
// CHECK: vector.maskedload %arg2
// CHECK-COUNT-4: amx.tile_load {{.*}} : memref<32x32xf32> into !amx.tile<16x16xf32>
// CHECK-COUNT-32: amx.tile_mulf
// CHECK-COUNT-4: amx.tile_store
// CHECK: vector.maskedstore %arg2
func.func @odd_panels(%x: memref<?x32xf32>, %w: memref<3x16x32xbf16>, %y: memref<?x48xf32>) {
  linalg.generic {indexing_maps = [#x, #wpairs, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<?x32xf32>, memref<3x16x32xbf16>) outs(%y : memref<?x48xf32>) {
  ^bb0(%a: f32, %b: bf16, %c: f32):
    %ab = arith.truncf %a : f32 to bf16
    %aw = arith.extf %ab : bf16 to f32
    %bw = arith.extf %b : bf16 to f32
    %p = arith.mulf %aw, %bw : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}
func.func @partial_depth(%x: memref<?x16xf32>, %w: memref<2x8x32xbf16>, %y: memref<?x32xf32>) {
  linalg.generic {indexing_maps = [#x, #wpairs, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<?x16xf32>, memref<2x8x32xbf16>) outs(%y : memref<?x32xf32>) {
  ^bb0(%a: f32, %b: bf16, %c: f32):
    %ab = arith.truncf %a : f32 to bf16
    %aw = arith.extf %ab : bf16 to f32
    %bw = arith.extf %b : bf16 to f32
    %p = arith.mulf %aw, %bw : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}
func.func @unrounded(%x: memref<?x32xf32>, %w: memref<2x16x32xbf16>, %y: memref<?x32xf32>) {
  linalg.generic {indexing_maps = [#x, #wpairs, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<?x32xf32>, memref<2x16x32xbf16>) outs(%y : memref<?x32xf32>) {
  ^bb0(%a: f32, %b: bf16, %c: f32):
    %bw = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bw : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}
