// Causal attention, both alignments.
// The compiled kernels against the f64 reference, three ways: the
// vectorized CPU kernels blocked for AVX2 (256-bit) and for AVX-512
// (run as pairs of AVX2 registers where AVX-512 is missing), and the
// generic lowering of the tiled form (--generic). Tolerance 1e-5 of the output's scale: f32 has 6e-8 relative
// precision, and the dot products (D <= 128 terms) plus the tile-wise
// rescaling of the online softmax (<= 9 tiles of keys) accumulate well under
// 1e-6 relative error; 1e-5 leaves room without hiding real bugs, which give
// errors of order 1e-2 or larger.
// RUN: attn-run %s --entry=top_left --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=top_left --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=top_left --check --generic | FileCheck %s
// RUN: attn-run %s --entry=top_left_cross --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=top_left_cross --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=top_left_cross --check --generic | FileCheck %s
// RUN: attn-run %s --entry=bottom_right_decode --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=bottom_right_decode --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=bottom_right_decode --check --generic | FileCheck %s
// RUN: attn-run %s --entry=bottom_right_cross --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=bottom_right_cross --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=bottom_right_cross --check --generic | FileCheck %s
// RUN: attn-run %s --entry=fully_masked_rows --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=fully_masked_rows --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=fully_masked_rows --check --generic | FileCheck %s
// CHECK: check: {{.*}}: PASS

func.func @top_left(%q: tensor<1x2x1025x64xf32>, %k: tensor<1x2x1025x64xf32>, %v: tensor<1x2x1025x64xf32>) -> tensor<1x2x1025x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>) -> tensor<1x2x1025x64xf32>
  return %o : tensor<1x2x1025x64xf32>
}

func.func @top_left_cross(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x1000x40xf32>, %v: tensor<1x2x1000x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x97x40xf32>, tensor<1x2x1000x40xf32>, tensor<1x2x1000x40xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

// One decoding step against a cache: sees every key.
func.func @bottom_right_decode(%q: tensor<1x4x1x64xf32>, %k: tensor<1x1x1000x64xf32>, %v: tensor<1x1x1000x64xf32>) -> tensor<1x4x1x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x4x1x64xf32>, tensor<1x1x1000x64xf32>, tensor<1x1x1000x64xf32>) -> tensor<1x4x1x64xf32>
  return %o : tensor<1x4x1x64xf32>
}

func.func @bottom_right_cross(%q: tensor<1x8x97x80xf32>, %k: tensor<1x2x1025x80xf32>, %v: tensor<1x2x1025x80xf32>) -> tensor<1x8x97x80xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x97x80xf32>, tensor<1x2x1025x80xf32>, tensor<1x2x1025x80xf32>) -> tensor<1x8x97x80xf32>
  return %o : tensor<1x8x97x80xf32>
}

// Rows 0..56 sit before the first key: their S is empty and they must be 0.
func.func @fully_masked_rows(%q: tensor<1x2x97x64xf32>, %k: tensor<1x2x40x64xf32>, %v: tensor<1x2x40x64xf32>) -> tensor<1x2x97x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x2x97x64xf32>, tensor<1x2x40x64xf32>, tensor<1x2x40x64xf32>) -> tensor<1x2x97x64xf32>
  return %o : tensor<1x2x97x64xf32>
}
