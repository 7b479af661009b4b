// attn-attention-grad-to-cpu: the fused backward kernel. One forall over
// (batch, key/value head, split) calls the work function; a second over
// (batch, query head) sums the splits' dQ; the work function's products are
// register-blocked FMAs on vectors of the target's width.
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx512 --attn-attention-grad-to-cpu | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx2 --attn-attention-grad-to-cpu | FileCheck %s --check-prefix=AVX2

// The head dim 40 is padded to whole vectors (48 lanes on AVX-512) in the
// scratch rows and the partial dQ; dK and dV rows of a key tile have one
// writer.
// With static sizes each key tile's query tiles are listed at compile time
// (one key tile, one partial query tile: entry 0 * 2 + 0).
// CHECK: memref.global "private" constant @causal__attn_backward_columns : memref<2xi32> = dense<[0, 1]>
// CHECK: memref.global "private" constant @causal__attn_backward_entries : memref<1xi32> = dense<0>
// CHECK-LABEL: func.func private @causal__attn_cpu_backward(
// CHECK-SAME: memref<?x?x?x?x48xf32>
// K^T and V^T of a 64-key tile, K / Q / dO rows, P and dS, dK and dV sums.
// CHECK-COUNT-2: memref.alloca() {alignment = 64 : i64} : memref<40x64xf32>
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// Key tiles split, split + splits, ...
// CHECK: scf.for %{{.*}} = %arg11 to %{{.*}} step %arg12
// The listed query tiles of this key tile.
// CHECK: memref.get_global @causal__attn_backward_columns
// CHECK: memref.get_global @causal__attn_backward_entries
// Full tiles carry no mask code.
// CHECK: scf.if
// A 6 x 4 block of accumulators: 24 FMAs per step of the sum.
// CHECK-COUNT-24: vector.fma %{{.*}} : vector<16xf32>
// CHECK: func.func private @causal__attn_cpu_backward_dq(
// CHECK-LABEL: func.func @causal(
// CHECK-NOT: attn.attention_grad
// CHECK: %[[SPLITS:.*]] = arith.maxui
// CHECK: %[[PARTIAL:.*]] = memref.alloc(%[[SPLITS]], {{.*}}) {alignment = 64 : i64} : memref<?x?x?x?x48xf32>
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 2, %[[SPLITS]])
// CHECK: func.call @causal__attn_cpu_backward(
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (1, 4)
// CHECK: func.call @causal__attn_cpu_backward_dq(%[[PARTIAL]]
// AVX2-LABEL: func.func private @causal__attn_cpu_backward(
// AVX2-SAME: memref<?x?x?x?x40xf32>
// AVX2: scf.if
// AVX2-COUNT-12: vector.fma %{{.*}} : vector<8xf32>
// AVX2-NOT: vector<16xf32>
// AVX2-LABEL: func.func @causal(
func.func @causal(%q: tensor<1x4x37x40xf32>, %k: tensor<1x2x45x40xf32>, %v: tensor<1x2x45x40xf32>, %o: tensor<1x4x37x40xf32>, %do: tensor<1x4x37x40xf32>, %lse: tensor<1x4x37xf32>) -> (tensor<1x4x37x40xf32>, tensor<1x2x45x40xf32>, tensor<1x2x45x40xf32>) {
  %dq, %dk, %dv = attn.attention_grad %q, %k, %v, %o, %do, %lse pattern(#attn.causal) align = bottom_right
      : (tensor<1x4x37x40xf32>, tensor<1x2x45x40xf32>, tensor<1x2x45x40xf32>, tensor<1x4x37x40xf32>, tensor<1x4x37x40xf32>, tensor<1x4x37xf32>) -> (tensor<1x4x37x40xf32>, tensor<1x2x45x40xf32>, tensor<1x2x45x40xf32>)
  return %dq, %dk, %dv : tensor<1x4x37x40xf32>, tensor<1x2x45x40xf32>, tensor<1x2x45x40xf32>
}

// -----

// bf16 rows widen as they are packed; the gradients narrow as they are
// stored. A soft-cap keeps its slope 1 - (x / c)^2 per score.
// CHECK-LABEL: func.func private @softcap_bf16__attn_cpu_backward(
// CHECK: arith.extf %{{.*}} : vector<16xbf16> to vector<16xf32>
// CHECK: math.tanh
// CHECK: arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
func.func @softcap_bf16(%q: tensor<2x2x64x64xbf16>, %lse: tensor<2x2x64xf32>) -> tensor<2x2x64x64xbf16> {
  %dq, %dk, %dv = attn.attention_grad %q, %q, %q, %q, %q, %lse mods = [#attn.softcap<cap = 5.0>]
      : (tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<2x2x64xf32>) -> (tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16>, tensor<2x2x64x64xbf16>)
  return %dq : tensor<2x2x64x64xbf16>
}

// -----

// What the kernel does not cover stays for attn-lower-attention-grad: a
// bias operand (and its gradient), a dynamic head dim.
// CHECK-LABEL: func.func @bias_grad
// CHECK: attn.attention_grad
// CHECK-NOT: __attn_cpu_backward
func.func @bias_grad(%q: tensor<1x1x8x8xf32>, %b: tensor<1x1x8x8xf32>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x8xf32> {
  %dq, %dk, %dv, %db = attn.attention_grad %q, %q, %q, %q, %q, %lse bias(%b)
      : (tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8xf32>, tensor<1x1x8x8xf32>) -> (tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>)
  return %db : tensor<1x1x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @dynamic_head_dim
// CHECK: attn.attention_grad
func.func @dynamic_head_dim(%q: tensor<1x1x8x?xf32>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x?xf32> {
  %dq, %dk, %dv = attn.attention_grad %q, %q, %q, %q, %q, %lse
      : (tensor<1x1x8x?xf32>, tensor<1x1x8x?xf32>, tensor<1x1x8x?xf32>, tensor<1x1x8x?xf32>, tensor<1x1x8x?xf32>, tensor<1x1x8xf32>) -> (tensor<1x1x8x?xf32>, tensor<1x1x8x?xf32>, tensor<1x1x8x?xf32>)
  return %dq : tensor<1x1x8x?xf32>
}

// -----

// A dynamic length: the query tiles of each key tile are classified at run
// time (emitTileClass's comparisons), no tables.
// CHECK-LABEL: func.func private @window_dynamic__attn_cpu_backward(
// CHECK-NOT: memref.get_global
// CHECK: arith.cmpi
// CHECK: scf.if
// CHECK-LABEL: func.func @window_dynamic(
// CHECK-NOT: memref.global
func.func @window_dynamic(%q: tensor<1x2x?x64xf32>, %lse: tensor<1x2x?xf32>) -> tensor<1x2x?x64xf32> {
  %dq, %dk, %dv = attn.attention_grad %q, %q, %q, %q, %q, %lse pattern(#attn.window<left = 100, right = 0>)
      : (tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?xf32>) -> (tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>)
  return %dq : tensor<1x2x?x64xf32>
}

// -----

// Head dims past 256 would put over 1 MiB of scratch on a worker thread's
// stack: left for attn-lower-attention-grad.
// CHECK-LABEL: func.func @wide_head
// CHECK: attn.attention_grad
func.func @wide_head(%q: tensor<1x1x8x264xf32>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x264xf32> {
  %dq, %dk, %dv = attn.attention_grad %q, %q, %q, %q, %q, %lse
      : (tensor<1x1x8x264xf32>, tensor<1x1x8x264xf32>, tensor<1x1x8x264xf32>, tensor<1x1x8x264xf32>, tensor<1x1x8x264xf32>, tensor<1x1x8xf32>) -> (tensor<1x1x8x264xf32>, tensor<1x1x8x264xf32>, tensor<1x1x8x264xf32>)
  return %dq : tensor<1x1x8x264xf32>
}
