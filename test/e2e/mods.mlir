// Score mods against the f64 reference: on the vectorized CPU kernels
// (lane-wise mods, Shaw and T5 tables gathered per query lane; blocked for
// AVX2 (256-bit) and for AVX-512) and on the generic lowering of the tiled form (--generic). The reference is
// tooling/lib/Reference.cpp, written from docs/Dialect.md. Tolerance 1e-5 of the
// output scale, as in dense.mlir: the mods add a few f32 operations per
// logit (tanh and log are polynomial approximations with ~1e-7 relative
// error), far below 1e-5. Table operands get seeded N(0, 1) values.
// RUN: attn-run %s --entry=alibi_causal --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=alibi_causal --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=alibi_causal --check --generic | FileCheck %s
// RUN: attn-run %s --entry=softcap --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=softcap --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=softcap --check --generic | FileCheck %s
// RUN: attn-run %s --entry=shaw --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=shaw --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=shaw --check --generic | FileCheck %s
// RUN: attn-run %s --entry=t5_bidirectional --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=t5_bidirectional --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=t5_bidirectional --check --generic | FileCheck %s
// RUN: attn-run %s --entry=t5_causal_decoder --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=t5_causal_decoder --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=t5_causal_decoder --check --generic | FileCheck %s
// RUN: attn-run %s --entry=distance_weight --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=distance_weight --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=distance_weight --check --generic | FileCheck %s
// RUN: attn-run %s --entry=adaptive_span --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=adaptive_span --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=adaptive_span --check --generic | FileCheck %s
// RUN: attn-run %s --entry=alibi_then_softcap --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=alibi_then_softcap --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=alibi_then_softcap --check --generic | FileCheck %s
// CHECK: check: {{.*}}: PASS

func.func @alibi_causal(%q: tensor<1x6x97x40xf32>, %k: tensor<1x6x97x40xf32>, %v: tensor<1x6x97x40xf32>) -> tensor<1x6x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) mods = [#attn.alibi<max_bias = 8.0>]
      : (tensor<1x6x97x40xf32>, tensor<1x6x97x40xf32>, tensor<1x6x97x40xf32>) -> tensor<1x6x97x40xf32>
  return %o : tensor<1x6x97x40xf32>
}

func.func @softcap(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x97x40xf32>, %v: tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v mods = [#attn.softcap<cap = 2.0>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}

func.func @shaw(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x97x40xf32>, %v: tensor<1x4x97x40xf32>, %t: tensor<4x33xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v rel_table(%t) mods = [#attn.shaw_bias<max_distance = 16>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<4x33xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}

func.func @t5_bidirectional(%q: tensor<1x4x300x40xf32>, %k: tensor<1x4x300x40xf32>, %v: tensor<1x4x300x40xf32>, %t: tensor<4x32xf32>) -> tensor<1x4x300x40xf32> {
  %o = attn.attention %q, %k, %v rel_table(%t) mods = [#attn.t5_bias<buckets = 32, max_distance = 64, bidirectional = true>]
      : (tensor<1x4x300x40xf32>, tensor<1x4x300x40xf32>, tensor<1x4x300x40xf32>, tensor<4x32xf32>) -> tensor<1x4x300x40xf32>
  return %o : tensor<1x4x300x40xf32>
}

func.func @t5_causal_decoder(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x200x40xf32>, %v: tensor<1x4x200x40xf32>, %t: tensor<4x16xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v rel_table(%t) pattern(#attn.causal) align = bottom_right mods = [#attn.t5_bias<buckets = 16, max_distance = 40, bidirectional = false>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x200x40xf32>, tensor<1x4x200x40xf32>, tensor<4x16xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}

func.func @distance_weight(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x97x40xf32>, %v: tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v mods = [#attn.distance_weight<weights = [0.5, 0.25, 0.125, 0.0625], threshold = 1.0>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}

func.func @adaptive_span(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x97x40xf32>, %v: tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) mods = [#attn.adaptive_span<spans = [4.0, 16.0, 32.0, 64.0], ramp = 8.0>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}

func.func @alibi_then_softcap(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x97x40xf32>, %v: tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 40, right = 0>) mods = [#attn.alibi<max_bias = 8.0>, #attn.softcap<cap = 5.0>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}
