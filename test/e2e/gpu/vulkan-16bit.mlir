// f16 and bf16 inputs and outputs on the GPU (Vulkan on lavapipe): the
// kernels widen Q, K and V to f32 as they load them, keep the softmax in
// f32 and round O once. attn-run --check holds them to twice the error of
// the naive attention computed in the same type (S, P and O rounded to it;
// reference::AttentionProblem::computeIn), both measured against the f64
// reference on the same 16-bit inputs. One rounding of O (2^-11 relative
// for f16, 2^-8 for bf16) is what a correct kernel adds; the naive one adds
// roundings of S and P on top, so a correct kernel sits near half the bar
// and a kernel that drops keys or mis-scales lands far above it.
// REQUIRES: vulkan
// UNSUPPORTED: sanitize
// RUN: attn-run %s --device=vulkan --check --entry=f16_causal_d128 | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --device=vulkan --check --entry=bf16_window_gqa | FileCheck %s --check-prefix=BF16
// RUN: attn-run %s --device=vulkan --check --entry=f16_cross_bottom_right | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --device=vulkan --check --entry=bf16_alibi_softcap | FileCheck %s --check-prefix=BF16
// RUN: attn-run %s --device=vulkan --check --entry=f16_documents | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --device=vulkan --check --entry=bf16_short_keys | FileCheck %s --check-prefix=BF16
// RUN: attn-run %s --device=vulkan --check --entry=dense_mask_bias_decode | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --check --entry=dense_mask_bias_decode | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --device=vulkan --gpu-target=vulkan-generic --check --entry=bf16_window_gqa | FileCheck %s --check-prefix=BF16
// The tensor-core kernel of the CUDA target (GpuMmaFlashKernel.cpp), each
// mma.sync and ldmatrix emulated in workgroup memory from PTX's fragment
// layouts: its staging (swizzled chunks, the two-stage ring, Q in
// workgroup memory or, at D = 128 on lavapipe's 32 KiB, in registers),
// fragments, quad reductions and P-as-A-operand reuse run here. It also
// rounds P to the input type (as FlashAttention does), still well inside
// the bar. Without mods the scores are in log2 units (dense, causal,
// window, documents); ALiBi and the soft-cap keep natural units.
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --check --entry=f16_causal_d128 | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --check --entry=bf16_window_gqa | FileCheck %s --check-prefix=BF16
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --check --entry=f16_cross_bottom_right | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --check --entry=bf16_alibi_softcap | FileCheck %s --check-prefix=BF16
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --check --entry=f16_documents | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --check --entry=bf16_short_keys | FileCheck %s --check-prefix=BF16
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --check --entry=f16_tiny | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --check --entry=f16_dense_d64 | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --check --entry=bf16_dense_d128 | FileCheck %s --check-prefix=BF16
// GQA decoding: the query heads of a KV head share one workgroup's rows
// (4 heads x 1 row; then 3 heads x 5 rows with per-head ALiBi slopes).
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --check --entry=f16_decode_gqa | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --check --entry=bf16_gqa_alibi_short | FileCheck %s --check-prefix=BF16
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --stats --entry=bf16_window_gqa | FileCheck %s --check-prefix=STATS
// STATS: stats: query tile 64, key tile {{[0-9]+}}: visited [[N:[0-9]+]] of
// STATS-NEXT: stats: key tiles the pattern keeps something of (reference): [[N]]{{$}}
// F16: check: {{.*}} = 2 x the naive f16 attention's {{.*}}: PASS
// BF16: check: {{.*}} = 2 x the naive bf16 attention's {{.*}}: PASS
// The bar is the naive attention's, not the f32 default of 1e-5.
// RUN: not attn-run %s --device=vulkan --check --entry=bf16_window_gqa --perturb-output=0.02 | FileCheck %s --check-prefix=PERTURBED
// PERTURBED: check: {{.*}}: FAIL
// The same entries on the CPU: test/e2e/half.mlir.

// L = 1025, D = 128 (the largest K and V rows staged).
func.func @f16_causal_d128(%q: tensor<1x2x1025x128xf16>, %k: tensor<1x2x1025x128xf16>,
                           %v: tensor<1x2x1025x128xf16>) -> tensor<1x2x1025x128xf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x1025x128xf16>, tensor<1x2x1025x128xf16>, tensor<1x2x1025x128xf16>)
      -> tensor<1x2x1025x128xf16>
  return %o : tensor<1x2x1025x128xf16>
}

// GQA 2:1, D = 80, a sliding window (partial tiles), L = 97.
func.func @bf16_window_gqa(%q: tensor<1x4x97x80xbf16>, %k: tensor<1x2x97x80xbf16>,
                           %v: tensor<1x2x97x80xbf16>) -> tensor<1x4x97x80xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 20, right = 5>)
      : (tensor<1x4x97x80xbf16>, tensor<1x2x97x80xbf16>, tensor<1x2x97x80xbf16>)
      -> tensor<1x4x97x80xbf16>
  return %o : tensor<1x4x97x80xbf16>
}

// Lq != Lk, bottom-right causal, D = 40, batch 2.
func.func @f16_cross_bottom_right(%q: tensor<2x2x97x40xf16>, %k: tensor<2x2x1025x40xf16>,
                                  %v: tensor<2x2x1025x40xf16>) -> tensor<2x2x97x40xf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<2x2x97x40xf16>, tensor<2x2x1025x40xf16>, tensor<2x2x1025x40xf16>)
      -> tensor<2x2x97x40xf16>
  return %o : tensor<2x2x97x40xf16>
}

// ALiBi and soft-capping on bf16 inputs.
func.func @bf16_alibi_softcap(%q: tensor<1x4x97x64xbf16>, %k: tensor<1x4x97x64xbf16>,
                              %v: tensor<1x4x97x64xbf16>) -> tensor<1x4x97x64xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      mods = [#attn.alibi<max_bias = 8.0>, #attn.softcap<cap = 2.0>]
      : (tensor<1x4x97x64xbf16>, tensor<1x4x97x64xbf16>, tensor<1x4x97x64xbf16>)
      -> tensor<1x4x97x64xbf16>
  return %o : tensor<1x4x97x64xbf16>
}

// Document masks (segment ids read at run time) with f16 inputs.
func.func @f16_documents(%q: tensor<2x2x97x40xf16>, %k: tensor<2x2x97x40xf16>,
                         %v: tensor<2x2x97x40xf16>, %qi: tensor<2x97xi32>,
                         %ki: tensor<2x97xi32>) -> tensor<2x2x97x40xf16> {
  %o = attn.attention %q, %k, %v segments(%qi, %ki)
      pattern(#attn.and<[#attn.causal, #attn.segments]>)
      : (tensor<2x2x97x40xf16>, tensor<2x2x97x40xf16>, tensor<2x2x97x40xf16>,
         tensor<2x97xi32>, tensor<2x97xi32>) -> tensor<2x2x97x40xf16>
  return %o : tensor<2x2x97x40xf16>
}

// Lk = 37 (a last key tile of 5 keys), D = 24 (padded to 32 in the
// fragments), Dv = 20 (padded to 24), fully masked rows (bottom-right
// causal with Lq > Lk).
func.func @bf16_short_keys(%q: tensor<1x2x70x24xbf16>, %k: tensor<1x2x37x24xbf16>,
                           %v: tensor<1x2x37x20xbf16>) -> tensor<1x2x70x20xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x2x70x24xbf16>, tensor<1x2x37x24xbf16>, tensor<1x2x37x20xbf16>)
      -> tensor<1x2x70x20xbf16>
  return %o : tensor<1x2x70x20xbf16>
}

// A dense mask (per head) and an f16 bias (broadcast over heads) on a
// decoding shape: the scalar kernel splits its 19 key tiles.
func.func @dense_mask_bias_decode(%q: tensor<1x4x1x64xf16>, %k: tensor<1x4x600x64xf16>,
                                  %v: tensor<1x4x600x64xf16>, %m: tensor<1x4x1x600xi1>,
                                  %bias: tensor<1x1x1x600xf16>) -> tensor<1x4x1x64xf16> {
  %o = attn.attention %q, %k, %v mask(%m) bias(%bias)
      : (tensor<1x4x1x64xf16>, tensor<1x4x600x64xf16>, tensor<1x4x600x64xf16>,
         tensor<1x4x1x600xi1>, tensor<1x1x1x600xf16>) -> tensor<1x4x1x64xf16>
  return %o : tensor<1x4x1x64xf16>
}

// Three keys, D = 8 (one half-filled k-step), Dv = 3, batch 3.
func.func @f16_tiny(%q: tensor<3x1x5x8xf16>, %k: tensor<3x1x3x8xf16>,
                    %v: tensor<3x1x3x3xf16>) -> tensor<3x1x5x3xf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<3x1x5x8xf16>, tensor<3x1x3x8xf16>, tensor<3x1x3x3xf16>)
      -> tensor<3x1x5x3xf16>
  return %o : tensor<3x1x5x3xf16>
}

// Dense, no mods (scores in log2 units), odd lengths: L = 131, D = 64.
func.func @f16_dense_d64(%q: tensor<2x2x131x64xf16>, %k: tensor<2x2x131x64xf16>,
                         %v: tensor<2x2x131x64xf16>) -> tensor<2x2x131x64xf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<2x2x131x64xf16>, tensor<2x2x131x64xf16>, tensor<2x2x131x64xf16>)
      -> tensor<2x2x131x64xf16>
  return %o : tensor<2x2x131x64xf16>
}

// bf16, D = 128, dense, Lq = 70 against Lk = 200.
func.func @bf16_dense_d128(%q: tensor<1x2x70x128xbf16>, %k: tensor<1x2x200x128xbf16>,
                           %v: tensor<1x2x200x128xbf16>) -> tensor<1x2x70x128xbf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x70x128xbf16>, tensor<1x2x200x128xbf16>, tensor<1x2x200x128xbf16>)
      -> tensor<1x2x70x128xbf16>
  return %o : tensor<1x2x70x128xbf16>
}

// GQA 4:1 decoding, 600 keys: 4 packed rows per workgroup, split keys.
func.func @f16_decode_gqa(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x600x64xf16>,
                          %v: tensor<1x2x600x64xf16>) -> tensor<1x8x1x64xf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x8x1x64xf16>, tensor<1x2x600x64xf16>, tensor<1x2x600x64xf16>)
      -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

// GQA 3:1, 5 queries against 77 keys (bottom-right causal), ALiBi slopes
// per query head: 15 packed rows.
func.func @bf16_gqa_alibi_short(%q: tensor<2x6x5x32xbf16>, %k: tensor<2x2x77x32xbf16>,
                                %v: tensor<2x2x77x32xbf16>) -> tensor<2x6x5x32xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      mods = [#attn.alibi<max_bias = 8.0>]
      : (tensor<2x6x5x32xbf16>, tensor<2x2x77x32xbf16>, tensor<2x2x77x32xbf16>)
      -> tensor<2x6x5x32xbf16>
  return %o : tensor<2x6x5x32xbf16>
}
