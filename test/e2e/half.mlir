// f16 and bf16 inputs and outputs on the CPU: the vectorized kernels widen
// Q, K and V to f32 as they load them, keep scores, softmax state and
// accumulators in f32 and round O once (the dense mask / bias entry takes
// the generic lowering, which does the same). attn-run --check holds them to
// twice the error of the naive attention computed in the same type (S, P
// and O rounded to it), both against the f64 reference on the same 16-bit
// inputs: one rounding of O is what a correct kernel adds, so it sits near
// half the bar, while a kernel that drops keys or mis-scales lands far
// above it. The same entries as test/e2e/gpu/vulkan-16bit.mlir, on AVX2 and
// AVX-512 blockings.
// RUN: attn-run %s --check --entry=f16_causal_d128 --target=cpu-avx512 | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --check --entry=f16_causal_d128 --target=cpu-avx2 | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --check --entry=bf16_window_gqa --target=cpu-avx512 | FileCheck %s --check-prefix=BF16
// RUN: attn-run %s --check --entry=bf16_window_gqa --target=cpu-avx2 | FileCheck %s --check-prefix=BF16
// RUN: attn-run %s --check --entry=f16_cross_bottom_right --target=cpu-avx512 | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --check --entry=bf16_alibi_softcap --target=cpu-avx2 | FileCheck %s --check-prefix=BF16
// RUN: attn-run %s --check --entry=f16_documents --target=cpu-avx512 | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --check --entry=bf16_short_keys --target=cpu-avx512 | FileCheck %s --check-prefix=BF16
// RUN: attn-run %s --check --entry=dense_mask_bias_decode | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --check --entry=bf16_gqa_decode --target=cpu-avx512 | FileCheck %s --check-prefix=BF16
// RUN: attn-run %s --check --entry=f16_mqa_split --target=cpu-avx512 --num-threads=2 | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --check --entry=f16_mqa_split --target=cpu-avx2 --num-threads=2 | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --check --entry=f16_tiny --target=cpu-avx2 | FileCheck %s --check-prefix=F16
// RUN: attn-run %s --check --entry=f16_tiny --generic | FileCheck %s --check-prefix=F16
// F16: check: {{.*}} = 2 x the naive f16 attention's {{.*}}: PASS
// BF16: check: {{.*}} = 2 x the naive bf16 attention's {{.*}}: PASS
// The bar is the naive attention's, not the f32 default of 1e-5.
// RUN: not attn-run %s --check --entry=bf16_window_gqa --perturb-output=0.02 | FileCheck %s --check-prefix=PERTURBED
// PERTURBED: check: {{.*}}: FAIL
// The vectorized kernels take them (widening loads, one rounding store).
// RUN: attn-opt %s --attn-cpu-pipeline="target=cpu-avx512" -mlir-print-ir-after=attn-to-cpu-kernels 2>&1 >/dev/null | FileCheck %s --check-prefix=KERNEL
// KERNEL-LABEL: func.func private @bf16_window_gqa__attn_cpu_flash_tile
// KERNEL-SAME: memref<1x4x97x80xbf16>
// KERNEL: arith.extf %{{.*}} : bf16 to f32
// KERNEL: arith.truncf %{{.*}} : f32 to bf16
// Decoding shapes: packed heads, the value rows widened a vector at a time,
// the keys split over threads and merged.
// KERNEL-LABEL: func.func private @f16_mqa_split__attn_cpu_group_split_tile
// KERNEL: %[[NARROW:.*]] = vector.load %{{.*}} : memref<1x1x5000x64xf16>, vector<16xf16>
// KERNEL: arith.extf %[[NARROW]] : vector<16xf16> to vector<16xf32>
// KERNEL-LABEL: func.func private @f16_mqa_split__attn_cpu_group_merge
// KERNEL: arith.truncf %{{.*}} : f32 to f16

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

// Decoding with GQA 4:1 on bf16: the packed-heads kernel (the four query
// heads of a group in the lanes of one vector).
func.func @bf16_gqa_decode(%q: tensor<1x8x1x64xbf16>, %k: tensor<1x2x700x64xbf16>,
                           %v: tensor<1x2x700x64xbf16>) -> tensor<1x8x1x64xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x1x64xbf16>, tensor<1x2x700x64xbf16>, tensor<1x2x700x64xbf16>)
      -> tensor<1x8x1x64xbf16>
  return %o : tensor<1x8x1x64xbf16>
}

// MQA on f16 with 5000 cached keys: one key/value head for two threads, so
// its keys are split and the partial states merged (the split and merge
// kernels of the packed-heads path).
func.func @f16_mqa_split(%q: tensor<1x8x1x64xf16>, %k: tensor<1x1x5000x64xf16>,
                         %v: tensor<1x1x5000x64xf16>) -> tensor<1x8x1x64xf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x1x64xf16>, tensor<1x1x5000x64xf16>, tensor<1x1x5000x64xf16>)
      -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}
