// attn-to-cpu-kernels{amx}: bf16 attentions whose head dims are whole AMX
// tiles (D a multiple of 32, Dv of 16) compute S^T = K Q^T and
// acc^T += V^T P^T with tdpbf16ps (amx.tile_mulf); V is transposed once
// per call, before the forall over tiles; P^T is rounded to bf16 and
// interleaved into key pairs. Other head dims and f32 keep the vector
// kernel, and so does everything without the option.
// RUN: attn-opt %s --attn-set-target=target=cpu-amx --attn-tile --attn-to-cpu-kernels | FileCheck %s
// RUN: attn-opt %s --attn-set-target=target=cpu-avx512 --attn-tile --attn-to-cpu-kernels | FileCheck %s --check-prefix=OFF
// RUN: attn-opt %s --attn-cpu-pipeline="target=cpu-amx" | FileCheck %s --check-prefix=LLVM
// bf16-dot (vdpbf16ps, for CPUs without AMX) on the same pair layouts; AMX
// wins when both are asked for.
// RUN: attn-opt %s --attn-set-target=target=cpu-avx512-bf16 --attn-tile --attn-to-cpu-kernels | FileCheck %s --check-prefix=DOT
// RUN: attn-opt %s --attn-set-target=target=cpu-amx --attn-tile --attn-to-cpu-kernels | FileCheck %s
// RUN: attn-opt %s --attn-cpu-pipeline="target=cpu-avx512-bf16" | FileCheck %s --check-prefix=DOTLLVM

// CHECK-LABEL: func.func private @dense_bf16__attn_cpu_flash_tile
// CHECK-SAME: %[[K:[a-z0-9]+]]: memref<1x2x300x64xbf16>, %{{.*}}: memref<1x2x300x64xbf16>
// CHECK-SAME: %[[VT:[a-z0-9]+]]: memref<?x?x64x?xbf16>, %{{[a-z0-9]+}}: memref<?x?x?xi8>)
// Q's dim pairs copied as they are (32-bit words; exp applies the scale).
// CHECK: %[[QP:.*]] = vector.load %{{.*}} : memref<1x2x200x64xbf16>, vector<2xbf16>
// CHECK: vector.store %[[QP]], %{{.*}} : memref<32x128xbf16>, vector<2xbf16>
// Scores: 16 key rows x 32 dims of K in place, times Q's dim pairs.
// CHECK: %[[S0:.*]] = amx.tile_zero : !amx.tile<16x16xf32>
// CHECK: %[[A:.*]] = amx.tile_load %[[K]][{{.*}}] : memref<1x2x300x64xbf16> into !amx.tile<16x32xbf16>
// CHECK: %[[B:.*]] = amx.tile_load %{{.*}} : memref<32x128xbf16> into !amx.tile<16x32xbf16>
// CHECK: amx.tile_mulf %[[A]], %[[B]], %[[S0]]
// CHECK: amx.tile_store %{{.*}} : memref<{{[0-9]+}}x64xf32>, !amx.tile<16x16xf32>
// The last 16-row block of keys from a zero-padded copy.
// CHECK: amx.tile_load %{{.*}} : memref<16x64xbf16> into !amx.tile<16x32xbf16>
// P^T as key pairs.
// CHECK: arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: vector.interleave %{{.*}} : vector<16xbf16> -> vector<32xbf16>
// P V: acc^T tiles loaded, V^T tiles times P's key pairs, stored back.
// CHECK: %[[ACC:.*]] = amx.tile_load %{{.*}} : memref<?x64xf32> into !amx.tile<16x16xf32>
// CHECK: %[[VA:.*]] = amx.tile_load %[[VT]][{{.*}}] : memref<?x?x64x?xbf16> into !amx.tile<16x32xbf16>
// CHECK: amx.tile_mulf %[[VA]], %{{.*}}, %[[ACC]]
// CHECK: amx.tile_store %{{.*}} : memref<?x64xf32>, !amx.tile<16x16xf32>
// V^T and, per key tile, whether its values are all finite, written in a
// forall over (batch, head, key tile) before the tiles run.
// CHECK-LABEL: func.func @dense_bf16(
// CHECK: %[[T:.*]] = memref.alloc({{.*}}) {alignment = 64 : i64} : memref<?x?x64x?xbf16>
// CHECK: %[[F:.*]] = memref.alloc({{.*}}) : memref<?x?x?xi8>
// CHECK: scf.forall
// CHECK: arith.cmpf olt, %{{.*}} : vector<16xf32>
// CHECK: vector.reduction <and>
// CHECK: memref.store %{{.*}}, %[[F]]
// CHECK: memref.store %{{.*}}, %[[T]]
// CHECK: scf.forall
// CHECK: func.call @dense_bf16__attn_cpu_flash_tile({{.*}}, %[[T]], %[[F]])

// Partial tiles of a pattern whose values are not all finite keep the f32
// update of P V, guarded per lane (0 x NaN would reach the sum).
// CHECK-LABEL: func.func private @causal_bf16__attn_cpu_flash_tile
// CHECK: amx.tile_mulf
// CHECK: %[[FLAG:.*]] = memref.load %{{.*}} : memref<?x?x?xi8>
// CHECK: arith.cmpi ne, %[[FLAG]]
// CHECK: scf.if
// CHECK: arith.cmpf one
// CHECK: amx.tile_mulf

// D = 80 is not whole tiles: the vector kernel, bf16 widened.
// CHECK-LABEL: func.func private @d80_bf16__attn_cpu_flash_tile
// CHECK-NOT: amx.
// CHECK: arith.extf
// CHECK-NOT: amx.
// CHECK-LABEL: func.func @d80_bf16(
// CHECK-LABEL: func.func private @dense_f32__attn_cpu_flash_tile
// CHECK-NOT: amx.
// CHECK-LABEL: func.func @dense_f32(

// OFF-NOT: amx.
// OFF-NOT: vector.interleave

// DOT-LABEL: func.func private @dense_bf16__attn_cpu_flash_tile
// DOT-NOT: amx.
// Scores: a K pair broadcast to every 32-bit lane, dotted with Q's pairs.
// DOT: %[[PAIR:.*]] = vector.load %{{.*}} : memref<1x2x300x64xbf16>, vector<2xbf16>
// DOT: vector.bitcast %[[PAIR]] : vector<2xbf16> to vector<1xi32>
// DOT: %[[KB:.*]] = vector.bitcast %{{.*}} : vector<16xi32> to vector<32xbf16>
// DOT: x86vector.avx512.dot %{{.*}}, %{{.*}}, %[[KB]] : vector<32xbf16> -> vector<16xf32>
// DOT: vector.interleave
// P V: pairs of V^T.
// DOT: vector.load %{{.*}} : memref<?x?x64x?xbf16>, vector<2xbf16>
// DOT: x86vector.avx512.dot
// DOT-LABEL: func.func @dense_bf16(
// DOT-LABEL: func.func private @d80_bf16__attn_cpu_flash_tile
// DOT-NOT: x86vector
// DOT-LABEL: func.func @d80_bf16(

// DOTLLVM: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"

// LLVM: llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"
// LLVM: llvm.call_intrinsic "llvm.x86.tilestored64.internal"

func.func @dense_bf16(%q: tensor<1x2x200x64xbf16>, %k: tensor<1x2x300x64xbf16>,
                      %v: tensor<1x2x300x64xbf16>) -> tensor<1x2x200x64xbf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x200x64xbf16>, tensor<1x2x300x64xbf16>, tensor<1x2x300x64xbf16>)
      -> tensor<1x2x200x64xbf16>
  return %o : tensor<1x2x200x64xbf16>
}
func.func @causal_bf16(%q: tensor<1x2x200x64xbf16>, %k: tensor<1x2x200x64xbf16>,
                      %v: tensor<1x2x200x64xbf16>) -> tensor<1x2x200x64xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>)
      -> tensor<1x2x200x64xbf16>
  return %o : tensor<1x2x200x64xbf16>
}
func.func @d80_bf16(%q: tensor<1x2x200x80xbf16>, %k: tensor<1x2x200x80xbf16>,
                    %v: tensor<1x2x200x80xbf16>) -> tensor<1x2x200x80xbf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x200x80xbf16>, tensor<1x2x200x80xbf16>, tensor<1x2x200x80xbf16>)
      -> tensor<1x2x200x80xbf16>
  return %o : tensor<1x2x200x80xbf16>
}
func.func @dense_f32(%q: tensor<1x2x200x64xf32>, %k: tensor<1x2x200x64xf32>,
                     %v: tensor<1x2x200x64xf32>) -> tensor<1x2x200x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x200x64xf32>, tensor<1x2x200x64xf32>, tensor<1x2x200x64xf32>)
      -> tensor<1x2x200x64xf32>
  return %o : tensor<1x2x200x64xf32>
}
