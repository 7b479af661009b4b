// Mask patterns evaluated by the tiled kernel (per element in partial
// tiles, skipped when empty, unmasked when full).
// The compiled kernels against the f64 reference, three ways: the
// vectorized CPU kernels blocked for AVX2 (256-bit) and for AVX-512
// (run as pairs of AVX2 registers where AVX-512 is missing), and the
// generic lowering of the tiled form (--generic). Tolerance 1e-5 of the output's scale: f32 has 6e-8 relative
// precision, and the dot products (D <= 128 terms) plus the tile-wise
// rescaling of the online softmax (<= 9 tiles of keys) accumulate well under
// 1e-6 relative error; 1e-5 leaves room without hiding real bugs, which give
// errors of order 1e-2 or larger.
// RUN: attn-run %s --entry=window --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=window --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=window --check --generic | FileCheck %s
// RUN: attn-run %s --entry=dilated --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=dilated --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=dilated --check --generic | FileCheck %s
// RUN: attn-run %s --entry=strided_sparse_transformer --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=strided_sparse_transformer --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=strided_sparse_transformer --check --generic | FileCheck %s
// RUN: attn-run %s --entry=fixed_sparse_transformer --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=fixed_sparse_transformer --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=fixed_sparse_transformer --check --generic | FileCheck %s
// RUN: attn-run %s --entry=longformer --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=longformer --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=longformer --check --generic | FileCheck %s
// RUN: attn-run %s --entry=window_bottom_right --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=window_bottom_right --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=window_bottom_right --check --generic | FileCheck %s
// CHECK: check: {{.*}}: PASS

func.func @window(%q: tensor<1x2x1000x64xf32>, %k: tensor<1x2x1000x64xf32>, %v: tensor<1x2x1000x64xf32>) -> tensor<1x2x1000x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 100, right = 37>)
      : (tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>) -> tensor<1x2x1000x64xf32>
  return %o : tensor<1x2x1000x64xf32>
}

func.func @dilated(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.dilated<left = 30, right = 30, dilation = 3>)
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @strided_sparse_transformer(%q: tensor<1x2x1025x64xf32>, %k: tensor<1x2x1025x64xf32>, %v: tensor<1x2x1025x64xf32>) -> tensor<1x2x1025x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.and<[#attn.causal, #attn.or<[#attn.window<left = 31, right = 0>, #attn.strided<stride = 32>]>]>)
      : (tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>) -> tensor<1x2x1025x64xf32>
  return %o : tensor<1x2x1025x64xf32>
}

func.func @fixed_sparse_transformer(%q: tensor<1x2x1000x64xf32>, %k: tensor<1x2x1000x64xf32>, %v: tensor<1x2x1000x64xf32>) -> tensor<1x2x1000x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.and<[#attn.causal, #attn.fixed<stride = 50, summary = 5>]>)
      : (tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>) -> tensor<1x2x1000x64xf32>
  return %o : tensor<1x2x1000x64xf32>
}

func.func @longformer(%q: tensor<1x2x1025x64xf32>, %k: tensor<1x2x1025x64xf32>, %v: tensor<1x2x1025x64xf32>) -> tensor<1x2x1025x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.or<[#attn.window<left = 64, right = 64>, #attn.global<[0, 1, 500]>]>)
      : (tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>) -> tensor<1x2x1025x64xf32>
  return %o : tensor<1x2x1025x64xf32>
}

func.func @window_bottom_right(%q: tensor<1x4x97x64xf32>, %k: tensor<1x2x1025x64xf32>, %v: tensor<1x2x1025x64xf32>) -> tensor<1x4x97x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.and<[#attn.causal, #attn.window<left = 200, right = 0>]>) align = bottom_right
      : (tensor<1x4x97x64xf32>, tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>) -> tensor<1x4x97x64xf32>
  return %o : tensor<1x4x97x64xf32>
}
