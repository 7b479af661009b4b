// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx512-bf16 --attn-matmul-to-cpu-gemm --canonicalize | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx512 --attn-matmul-to-cpu-gemm | FileCheck %s --check-prefix=NODOT
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx2 --attn-matmul-to-cpu-gemm | FileCheck %s --check-prefix=NODOT
// RUN: attn-opt %s --split-input-file --attn-cpu-pipeline="target=cpu-avx512-bf16" | FileCheck %s --check-prefix=LLVM

// bf16 weights packed in k pairs of 32-column panels (AmxGemm.h's form
// with 2V columns) by vdpbf16ps (MatmulToCpuGemm.cpp, bf16-dot): A's
// k-block becomes i32 words of bf16 pairs, [row block][ceil(min(K, 768) / 2) = 38][12]; whole row
// blocks round 32 k's of each of 12 rows (one vector<32xf32> load, one
// truncf) and transpose the words in registers, the K = 75's last pairs
// go one word at a time (the 38th pair's second k is past K: zero). The
// micro-kernel's step is a pair: two 32-bf16 rows of the panel, 12
// broadcast words and 24 dots into the 12 x 2 accumulators, over the
// 38 pair rows (the first 12 steps also prefetch C).
#x = affine_map<(m, n, k) -> (m, k)>
#wpairs = affine_map<(m, n, k) -> (n floordiv 32, k floordiv 2, (n mod 32) * 2 + k mod 2)>
#y = affine_map<(m, n, k) -> (m, n)>
// CHECK-LABEL: func.func @dot_pairs
// CHECK: %[[A:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x38x12xi32>
// CHECK: scf.forall
// CHECK: vector.load %arg0{{.*}} : memref<?x75xf32>, vector<32xf32>
// CHECK: arith.truncf {{.*}} : vector<32xf32> to vector<32xbf16>
// CHECK: vector.bitcast {{.*}} : vector<32xbf16> to vector<16xi32>
// CHECK: vector.shuffle
// CHECK: vector.extract_strided_slice {{.*}} {offsets = [0], sizes = [12], strides = [1]} : vector<16xi32> to vector<12xi32>
// CHECK: vector.store {{.*}}, %[[A]]{{.*}} : memref<?x38x12xi32>, vector<12xi32>
// CHECK: vector.from_elements {{.*}} : vector<2xf32>
// CHECK: arith.truncf {{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: scf.forall
// CHECK: scf.for %{{.*}} = %c0 to %c12 step %c1 iter_args
// CHECK: memref.prefetch
// CHECK-COUNT-2: vector.load %arg1{{.*}} : memref<2x38x64xbf16>, vector<32xbf16>
// CHECK: memref.load %[[A]]{{.*}} : memref<?x38x12xi32>
// CHECK: vector.broadcast {{.*}} : i32 to vector<16xi32>
// CHECK: vector.bitcast {{.*}} : vector<16xi32> to vector<32xbf16>
// CHECK-COUNT-24: x86vector.avx512.dot
// CHECK: scf.for %{{.*}} = %c12 to %c38 step %c1 iter_args
// CHECK-NOT: memref.prefetch
// CHECK-COUNT-24: x86vector.avx512.dot
// CHECK: vector.maskedstore %arg2
// CHECK: memref.dealloc %[[A]]
// CHECK-NOT: linalg.generic
// Without bf16-dot, or blocked for 256-bit vectors, the product is left
// for other lowerings.
// NODOT-LABEL: func.func @dot_pairs
// NODOT: linalg.generic
// NODOT-NOT: x86vector
// The whole CPU pipeline lowers the dots to the AVX-512 BF16 intrinsic.
// LLVM-LABEL: llvm.func @dot_pairs
// LLVM: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
func.func @dot_pairs(%x: memref<?x75xf32>, %w: memref<2x38x64xbf16>, %y: memref<?x60xf32>) {
  linalg.generic {indexing_maps = [#x, #wpairs, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<?x75xf32>, memref<2x38x64xbf16>) outs(%y : memref<?x60xf32>) {
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

// -----

// A zero fill before becomes the first k-block's zero start and a bias
// after it the epilogue, as in the f32 GEMM.
#x = affine_map<(m, n, k) -> (m, k)>
#wpairs = affine_map<(m, n, k) -> (n floordiv 32, k floordiv 2, (n mod 32) * 2 + k mod 2)>
#y = affine_map<(m, n, k) -> (m, n)>
#row = affine_map<(m, n) -> (n)>
#id = affine_map<(m, n) -> (m, n)>
// CHECK-LABEL: func.func @dot_fill_bias
// CHECK-NOT: linalg.fill
// CHECK: x86vector.avx512.dot
// CHECK: arith.addf
// CHECK: vector.store {{.*}}, %arg3
// CHECK-NOT: linalg.generic
func.func @dot_fill_bias(%x: memref<?x64xf32>, %w: memref<1x32x64xbf16>, %bias: memref<32xf32>, %y: memref<?x32xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x32xf32>)
  linalg.generic {indexing_maps = [#x, #wpairs, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<?x64xf32>, memref<1x32x64xbf16>) outs(%y : memref<?x32xf32>) {
  ^bb0(%a: f32, %b: bf16, %c: f32):
    %ab = arith.truncf %a : f32 to bf16
    %aw = arith.extf %ab : bf16 to f32
    %bw = arith.extf %b : bf16 to f32
    %p = arith.mulf %aw, %bw : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
    ins(%bias : memref<32xf32>) outs(%y : memref<?x32xf32>) {
  ^bb0(%b: f32, %c: f32):
    %s = arith.addf %c, %b : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Not this form, left alone: AMX's 16-column pair panels, A not rounded to
// bf16 first (a different product), and a static K past the pair rows.
#x = affine_map<(m, n, k) -> (m, k)>
#w16 = affine_map<(m, n, k) -> (n floordiv 16, k floordiv 2, (n mod 16) * 2 + k mod 2)>
#wpairs = affine_map<(m, n, k) -> (n floordiv 32, k floordiv 2, (n mod 32) * 2 + k mod 2)>
#y = affine_map<(m, n, k) -> (m, n)>
// CHECK-LABEL: func.func @amx_panels
// CHECK: linalg.generic
// CHECK-LABEL: func.func @unrounded
// CHECK: linalg.generic
// CHECK-LABEL: func.func @short_weights
// CHECK: linalg.generic
// CHECK-NOT: x86vector
func.func @amx_panels(%x: memref<?x32xf32>, %w: memref<2x16x32xbf16>, %y: memref<?x32xf32>) {
  linalg.generic {indexing_maps = [#x, #w16, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<?x32xf32>, memref<2x16x32xbf16>) outs(%y : memref<?x32xf32>) {
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
func.func @unrounded(%x: memref<?x32xf32>, %w: memref<1x16x64xbf16>, %y: memref<?x32xf32>) {
  linalg.generic {indexing_maps = [#x, #wpairs, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<?x32xf32>, memref<1x16x64xbf16>) outs(%y : memref<?x32xf32>) {
  ^bb0(%a: f32, %b: bf16, %c: f32):
    %bw = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bw : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  }
  return
}
func.func @short_weights(%x: memref<?x40xf32>, %w: memref<1x16x64xbf16>, %y: memref<?x32xf32>) {
  linalg.generic {indexing_maps = [#x, #wpairs, #y], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%x, %w : memref<?x40xf32>, memref<1x16x64xbf16>) outs(%y : memref<?x32xf32>) {
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
