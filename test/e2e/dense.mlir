// Dense attention at sizes that break naive tilings.
// The compiled kernels against the f64 reference, three ways: the
// vectorized CPU kernels blocked for AVX2 (256-bit) and for AVX-512
// (run as pairs of AVX2 registers where AVX-512 is missing), and the
// generic lowering of the tiled form (--generic). Tolerance 1e-5 of the output's scale: f32 has 6e-8 relative
// precision, and the dot products (D <= 128 terms) plus the tile-wise
// rescaling of the online softmax (<= 9 tiles of keys) accumulate well under
// 1e-6 relative error; 1e-5 leaves room without hiding real bugs, which give
// errors of order 1e-2 or larger.
// RUN: attn-run %s --entry=len1 --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=len1 --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=len1 --check --generic | FileCheck %s
// RUN: attn-run %s --entry=len97_d40 --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=len97_d40 --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=len97_d40 --check --generic | FileCheck %s
// RUN: attn-run %s --entry=len1000_d80 --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=len1000_d80 --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=len1000_d80 --check --generic | FileCheck %s
// RUN: attn-run %s --entry=len1025_d128 --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=len1025_d128 --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=len1025_d128 --check --generic | FileCheck %s
// RUN: attn-run %s --entry=cross_lq97_lk1025 --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=cross_lq97_lk1025 --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=cross_lq97_lk1025 --check --generic | FileCheck %s
// RUN: attn-run %s --entry=gqa_4_to_1 --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=gqa_4_to_1 --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=gqa_4_to_1 --check --generic | FileCheck %s
// RUN: attn-run %s --entry=mqa --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=mqa --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=mqa --check --generic | FileCheck %s
// Logits of order 1e3 carry an f32 rounding error of about |x| * 2^-24 * D
// (~1e-4 absolute) before any softmax, which the weights inherit: a
// looser, justified bound for this case only.
// RUN: attn-run %s --entry=huge_logits --check --tolerance=1e-3 --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=huge_logits --check --tolerance=1e-3 --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=huge_logits --check --tolerance=1e-3 --generic | FileCheck %s
// CHECK: check: {{.*}}: PASS

func.func @len1(%q: tensor<1x2x1x64xf32>, %k: tensor<1x2x1x64xf32>, %v: tensor<1x2x1x64xf32>) -> tensor<1x2x1x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x1x64xf32>, tensor<1x2x1x64xf32>, tensor<1x2x1x64xf32>) -> tensor<1x2x1x64xf32>
  return %o : tensor<1x2x1x64xf32>
}

func.func @len97_d40(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @len1000_d80(%q: tensor<1x1x1000x80xf32>, %k: tensor<1x1x1000x80xf32>, %v: tensor<1x1x1000x80xf32>) -> tensor<1x1x1000x80xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x1x1000x80xf32>, tensor<1x1x1000x80xf32>, tensor<1x1x1000x80xf32>) -> tensor<1x1x1000x80xf32>
  return %o : tensor<1x1x1000x80xf32>
}

func.func @len1025_d128(%q: tensor<1x1x1025x128xf32>, %k: tensor<1x1x1025x128xf32>, %v: tensor<1x1x1025x128xf32>) -> tensor<1x1x1025x128xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x1x1025x128xf32>, tensor<1x1x1025x128xf32>, tensor<1x1x1025x128xf32>) -> tensor<1x1x1025x128xf32>
  return %o : tensor<1x1x1025x128xf32>
}

func.func @cross_lq97_lk1025(%q: tensor<1x2x97x64xf32>, %k: tensor<1x2x1025x64xf32>, %v: tensor<1x2x1025x64xf32>) -> tensor<1x2x97x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x97x64xf32>, tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>) -> tensor<1x2x97x64xf32>
  return %o : tensor<1x2x97x64xf32>
}

func.func @gqa_4_to_1(%q: tensor<2x8x97x64xf32>, %k: tensor<2x2x100x64xf32>, %v: tensor<2x2x100x48xf32>) -> tensor<2x8x97x48xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<2x8x97x64xf32>, tensor<2x2x100x64xf32>, tensor<2x2x100x48xf32>) -> tensor<2x8x97x48xf32>
  return %o : tensor<2x8x97x48xf32>
}

func.func @mqa(%q: tensor<1x4x97x64xf32>, %k: tensor<1x1x97x64xf32>, %v: tensor<1x1x97x64xf32>) -> tensor<1x4x97x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x97x64xf32>, tensor<1x1x97x64xf32>, tensor<1x1x97x64xf32>) -> tensor<1x4x97x64xf32>
  return %o : tensor<1x4x97x64xf32>
}

// Logits of order 1e3: the running max keeps exp finite.
func.func @huge_logits(%q: tensor<1x2x97x64xf32>, %k: tensor<1x2x97x64xf32>, %v: tensor<1x2x97x64xf32>) -> tensor<1x2x97x64xf32> {
  %o = attn.attention %q, %k, %v scale = 100.0
      : (tensor<1x2x97x64xf32>, tensor<1x2x97x64xf32>, tensor<1x2x97x64xf32>) -> tensor<1x2x97x64xf32>
  return %o : tensor<1x2x97x64xf32>
}
