// attn.kernelized (attn-kernelized-to-cpu's kernels for elu + 1, ReLU and
// causal FAVOR+ when the head dims are whole vectors, else
// attn-decompose-kernelized) against the f64 reference,
// which evaluates the quadratic form sum_j (phi(q_i) . phi(k_j)) v_j /
// sum_j phi(q_i) . phi(k_j) directly (j <= i when causal), without the
// FAVOR+ max-stabilisation: so the causal cases check the chunked
// prefix-sum form against the quadratic causal form of the same feature
// map. Tolerance 1e-4 of the output scale: features and their sums over up
// to 1025 keys round in f32 (observed: up to 1.1e-6).
// Non-causal FAVOR+ runs as two softmax attentions with per-key biases
// (DecomposeKernelized.cpp): on both vector widths and the generic path,
// and with 256 features, cross lengths (key tiles of 64 and 1024 rows end
// mid-tile) and Dv != D.
// RUN: attn-run %s --entry=favor_gqa --check --tolerance=1e-4 | FileCheck %s
// RUN: attn-run %s --entry=favor_gqa --check --tolerance=1e-4 --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=favor_gqa --check --tolerance=1e-4 --generic | FileCheck %s
// RUN: attn-run %s --entry=favor_cross --check --tolerance=1e-4 --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=favor_cross --check --tolerance=1e-4 --generic | FileCheck %s
// RUN: attn-run %s --entry=favor_causal --check --tolerance=1e-4 | FileCheck %s
// RUN: attn-run %s --entry=elu_causal --check --tolerance=1e-4 | FileCheck %s
// RUN: attn-run %s --entry=relu --check --tolerance=1e-4 | FileCheck %s
// Non-causal elu + 1 and ReLU run on attn-kernelized-to-cpu's kernel
// (KernelizedToCpu.cpp, CpuLinearKernel.h) when the head dims are whole
// vectors: GQA 6:2, batch 2, Lq = 131 (two query blocks of 64 and 3 rows:
// the 2 and 1 row remainders), Lk = 1100 (a partial key tile), D = 48,
// Dv = 80 (AVX-512: chunks of 4 and 1 vectors; AVX2: 5 chunks of 2), and
// the generic path through the decomposition for comparison.
// RUN: attn-run %s --entry=elu_gqa_cross --check --tolerance=1e-4 --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=elu_gqa_cross --check --tolerance=1e-4 --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=elu_gqa_cross --check --tolerance=1e-4 --generic | FileCheck %s
// RUN: attn-run %s --entry=elu --check --tolerance=1e-4 --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=elu --check --tolerance=1e-4 --target=cpu-avx2 | FileCheck %s
// Causal elu + 1 and ReLU run on the same kernel's causal form (chunks of
// 64 rows, masked scores inside a chunk): GQA 6:2, batch 2, D = 48,
// Dv = 80, more queries than keys (queries past the keys see them all)
// and fewer (keys past the queries are never seen), lengths that end
// inside a chunk.
// RUN: attn-run %s --entry=elu_causal_gqa_long_queries --check --tolerance=1e-4 --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=elu_causal_gqa_long_queries --check --tolerance=1e-4 --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=relu_causal_gqa_long_keys --check --tolerance=1e-4 --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=relu_causal_gqa_long_keys --check --tolerance=1e-4 --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=elu_causal --check --tolerance=1e-4 --target=cpu-avx2 | FileCheck %s
// Causal FAVOR+ on the same kernel: the features are products with s W^T
// and exp(t - max); S and z carry the largest key exponent so far and are
// rescaled when it grows (fails with NaN mismatches when the rescale
// factor is inverted).
// RUN: attn-run %s --entry=favor_causal --check --tolerance=1e-4 --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=favor_causal --check --tolerance=1e-4 --generic | FileCheck %s
// RUN: attn-run %s --entry=favor_causal_gqa --check --tolerance=1e-4 --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=favor_causal_gqa --check --tolerance=1e-4 --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=elu_causal --check --tolerance=1e-4 --generic | FileCheck %s
// ReLU with every 5th query row non-positive: phi(q) = 0, a zero
// denominator, and the op's 0 for it (the reference's too); then with a
// NaN value row as well, which makes every other output NaN but not the
// zero-denominator rows (fails with 25600 NaN mismatches when the kernel
// scales by the 0 reciprocal without selecting 0).
// RUN: rm -rf %t.relu && mkdir -p %t.relu
// RUN: python3 %S/Inputs/make-matrix-npy.py negative-rows %t.relu/negative-q.npy 3 5 1 2 1000 64
// RUN: attn-run %s --entry=relu --input q=%t.relu/negative-q.npy --random-inputs --check --tolerance=1e-4 --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=relu --input q=%t.relu/negative-q.npy --random-inputs --check --tolerance=1e-4 --target=cpu-avx2 | FileCheck %s
// RUN: python3 %S/Inputs/plant-nonfinite.py --values-only %t.relu 1 2 1000 1000 64 nan 7
// RUN: attn-run %s --entry=relu --input q=%t.relu/negative-q.npy --input k=%t.relu/k.npy --input v=%t.relu/v.npy --check --tolerance=1e-4 --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=relu --input q=%t.relu/negative-q.npy --input k=%t.relu/k.npy --input v=%t.relu/v.npy --check --tolerance=1e-4 --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=relu_causal_cross --check --tolerance=1e-4 | FileCheck %s
// CHECK: check: {{.*}}: PASS
//
// RFA's sin/cos features have no sign, so the denominator can cancel to
// near 0 when the projections are wide: with omega ~ N(0, 1) this case's
// outputs reach 6e3 and f32 rounding, amplified by the cancellation, gives
// a scaled error of 2e-3 (the quotient itself is ill-conditioned). The RFA
// paper tunes the projection scale; this test uses omega ~ N(0, 0.3^2),
// whose denominators stay well away from 0.
// RUN: rm -rf %t && mkdir -p %t
// RUN: python3 %S/Inputs/make-matrix-npy.py normal %t/omega.npy 32 40 0.3 7
// RUN: attn-run %s --entry=rfa_causal --random-inputs --input omega=%t/omega.npy --check --tolerance=1e-4 | FileCheck %s
// D = 40 is whole vectors of 8: with AVX2 the feature-map kernel takes it
// (sines and cosines of products with s W^T, no maximum).
// RUN: attn-run %s --entry=rfa_causal --random-inputs --input omega=%t/omega.npy --check --tolerance=1e-4 --target=cpu-avx2 | FileCheck %s
// RFA on the kernel at both widths: non-causal GQA 6:2 with cross lengths,
// causal with more queries than keys; 16 projections (32 features), D 48,
// Dv 80.
// RUN: python3 %S/Inputs/make-matrix-npy.py normal %t/omega16.npy 16 48 0.3 5
// RUN: attn-run %s --entry=rfa_gqa_cross --random-inputs --input omega=%t/omega16.npy --check --tolerance=1e-4 --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=rfa_gqa_cross --random-inputs --input omega=%t/omega16.npy --check --tolerance=1e-4 --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=rfa_gqa_cross --random-inputs --input omega=%t/omega16.npy --check --tolerance=1e-4 --generic | FileCheck %s
// RUN: attn-run %s --entry=rfa_causal_gqa --random-inputs --input omega=%t/omega16.npy --check --tolerance=1e-4 --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=rfa_causal_gqa --random-inputs --input omega=%t/omega16.npy --check --tolerance=1e-4 --target=cpu-avx2 | FileCheck %s

// FAVOR+ with 32 features, 4 query heads on 2 key/value heads, L = 97, D = 40.
func.func @favor_gqa(%q: tensor<1x4x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                     %v: tensor<1x2x97x40xf32>, %w: tensor<32x40xf32>)
    -> tensor<1x4x97x40xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor
      : (tensor<1x4x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>,
         tensor<32x40xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}

// FAVOR+ with 256 features, Lq = 300 queries on Lk = 1100 keys, Dv = 48.
func.func @favor_cross(%q: tensor<1x2x300x64xf32>, %k: tensor<1x2x1100x64xf32>,
                       %v: tensor<1x2x1100x48xf32>, %w: tensor<256x64xf32>)
    -> tensor<1x2x300x48xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor
      : (tensor<1x2x300x64xf32>, tensor<1x2x1100x64xf32>,
         tensor<1x2x1100x48xf32>, tensor<256x64xf32>) -> tensor<1x2x300x48xf32>
  return %o : tensor<1x2x300x48xf32>
}

// Causal FAVOR+, L = 1025 (16 chunks of 64 and one padded), D = 64.
func.func @favor_causal(%q: tensor<1x2x1025x64xf32>,
                        %k: tensor<1x2x1025x64xf32>,
                        %v: tensor<1x2x1025x64xf32>, %w: tensor<64x64xf32>)
    -> tensor<1x2x1025x64xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor causal
      : (tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>,
         tensor<1x2x1025x64xf32>, tensor<64x64xf32>) -> tensor<1x2x1025x64xf32>
  return %o : tensor<1x2x1025x64xf32>
}

// Causal RFA (2 x 32 features), L = 1000, D = 40.
func.func @rfa_causal(%q: tensor<1x2x1000x40xf32>,
                      %k: tensor<1x2x1000x40xf32>,
                      %v: tensor<1x2x1000x40xf32>, %w: tensor<32x40xf32>)
    -> tensor<1x2x1000x40xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = rfa causal
      : (tensor<1x2x1000x40xf32>, tensor<1x2x1000x40xf32>,
         tensor<1x2x1000x40xf32>, tensor<32x40xf32>) -> tensor<1x2x1000x40xf32>
  return %o : tensor<1x2x1000x40xf32>
}

// Causal elu + 1 (Katharopoulos et al.), L = 1025, D = 64, batch 2.
func.func @elu_causal(%q: tensor<2x2x1025x64xf32>, %k: tensor<2x2x1025x64xf32>,
                      %v: tensor<2x2x1025x64xf32>) -> tensor<2x2x1025x64xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = elu_plus_one causal
      : (tensor<2x2x1025x64xf32>, tensor<2x2x1025x64xf32>,
         tensor<2x2x1025x64xf32>) -> tensor<2x2x1025x64xf32>
  return %o : tensor<2x2x1025x64xf32>
}

// ReLU features, non-causal, L = 1000, D = 64.
func.func @relu(%q: tensor<1x2x1000x64xf32>, %k: tensor<1x2x1000x64xf32>,
                %v: tensor<1x2x1000x64xf32>) -> tensor<1x2x1000x64xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = relu
      : (tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>,
         tensor<1x2x1000x64xf32>) -> tensor<1x2x1000x64xf32>
  return %o : tensor<1x2x1000x64xf32>
}

// Causal ReLU with Lq = 97 queries on Lk = 100 keys (query i sees keys
// 0..i) and an MQA key/value head.
func.func @relu_causal_cross(%q: tensor<1x3x97x40xf32>,
                             %k: tensor<1x1x100x40xf32>,
                             %v: tensor<1x1x100x40xf32>)
    -> tensor<1x3x97x40xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = relu causal
      : (tensor<1x3x97x40xf32>, tensor<1x1x100x40xf32>,
         tensor<1x1x100x40xf32>) -> tensor<1x3x97x40xf32>
  return %o : tensor<1x3x97x40xf32>
}

// Non-causal elu + 1 with GQA 6:2, batch 2, Lq = 131, Lk = 1100, D = 48,
// Dv = 80.
func.func @elu_gqa_cross(%q: tensor<2x6x131x48xf32>,
                         %k: tensor<2x2x1100x48xf32>,
                         %v: tensor<2x2x1100x80xf32>)
    -> tensor<2x6x131x80xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = elu_plus_one
      : (tensor<2x6x131x48xf32>, tensor<2x2x1100x48xf32>,
         tensor<2x2x1100x80xf32>) -> tensor<2x6x131x80xf32>
  return %o : tensor<2x6x131x80xf32>
}

// Non-causal elu + 1, L = 1000, D = 64 (the benchmark's head dim).
func.func @elu(%q: tensor<1x3x1000x64xf32>, %k: tensor<1x3x1000x64xf32>,
               %v: tensor<1x3x1000x64xf32>) -> tensor<1x3x1000x64xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = elu_plus_one
      : (tensor<1x3x1000x64xf32>, tensor<1x3x1000x64xf32>,
         tensor<1x3x1000x64xf32>) -> tensor<1x3x1000x64xf32>
  return %o : tensor<1x3x1000x64xf32>
}

// Causal elu + 1, GQA 6:2, batch 2, Lq = 200 queries on Lk = 130 keys,
// D = 48, Dv = 80.
func.func @elu_causal_gqa_long_queries(%q: tensor<2x6x200x48xf32>,
                                       %k: tensor<2x2x130x48xf32>,
                                       %v: tensor<2x2x130x80xf32>)
    -> tensor<2x6x200x80xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = elu_plus_one causal
      : (tensor<2x6x200x48xf32>, tensor<2x2x130x48xf32>,
         tensor<2x2x130x80xf32>) -> tensor<2x6x200x80xf32>
  return %o : tensor<2x6x200x80xf32>
}

// Causal ReLU, GQA 6:2, batch 2, Lq = 70 queries on Lk = 300 keys,
// D = 48, Dv = 80.
func.func @relu_causal_gqa_long_keys(%q: tensor<2x6x70x48xf32>,
                                     %k: tensor<2x2x300x48xf32>,
                                     %v: tensor<2x2x300x80xf32>)
    -> tensor<2x6x70x80xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = relu causal
      : (tensor<2x6x70x48xf32>, tensor<2x2x300x48xf32>,
         tensor<2x2x300x80xf32>) -> tensor<2x6x70x80xf32>
  return %o : tensor<2x6x70x80xf32>
}

// Causal FAVOR+ with 32 features, GQA 6:2, batch 2, Lq = 200 queries on
// Lk = 130 keys, D = 48, Dv = 80.
func.func @favor_causal_gqa(%q: tensor<2x6x200x48xf32>,
                            %k: tensor<2x2x130x48xf32>,
                            %v: tensor<2x2x130x80xf32>,
                            %w: tensor<32x48xf32>)
    -> tensor<2x6x200x80xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor causal
      : (tensor<2x6x200x48xf32>, tensor<2x2x130x48xf32>,
         tensor<2x2x130x80xf32>, tensor<32x48xf32>) -> tensor<2x6x200x80xf32>
  return %o : tensor<2x6x200x80xf32>
}

// RFA (16 projections: 32 features), GQA 6:2, batch 2, Lq = 131 queries on
// Lk = 1100 keys, D = 48, Dv = 80.
func.func @rfa_gqa_cross(%q: tensor<2x6x131x48xf32>,
                         %k: tensor<2x2x1100x48xf32>,
                         %v: tensor<2x2x1100x80xf32>,
                         %w: tensor<16x48xf32>)
    -> tensor<2x6x131x80xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = rfa
      : (tensor<2x6x131x48xf32>, tensor<2x2x1100x48xf32>,
         tensor<2x2x1100x80xf32>, tensor<16x48xf32>) -> tensor<2x6x131x80xf32>
  return %o : tensor<2x6x131x80xf32>
}

// Causal RFA, GQA 6:2, batch 2, Lq = 200 queries on Lk = 130 keys.
func.func @rfa_causal_gqa(%q: tensor<2x6x200x48xf32>,
                          %k: tensor<2x2x130x48xf32>,
                          %v: tensor<2x2x130x80xf32>,
                          %w: tensor<16x48xf32>)
    -> tensor<2x6x200x80xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = rfa causal
      : (tensor<2x6x200x48xf32>, tensor<2x2x130x48xf32>,
         tensor<2x2x130x80xf32>, tensor<16x48xf32>) -> tensor<2x6x200x80xf32>
  return %o : tensor<2x6x200x80xf32>
}
