// Non-finite values at the edges (docs/Dialect.md, "Non-finite values"):
// keys the pattern drops contribute nothing even when K and V hold NaN or
// inf there; a NaN in a kept key makes the rows that see it NaN, as in the
// reference. Each case plants NaN (or inf) in every element of some K and V
// rows and runs the vectorized kernels (256- and 512-bit blocking) and the
// generic path against the f64 reference, whose --check fails on any
// non-finite value that is not the reference's own. Tolerance 1e-5 as in
// patterns.mlir.
// RUN: rm -rf %t && mkdir -p %t/a %t/b %t/c %t/d %t/e
//
// Causal, L = 333, NaN in key 5: rows 0-4 cannot see it and stay finite.
// RUN: python3 %S/Inputs/plant-nonfinite.py %t/a 1 2 333 333 40 nan 5
// RUN: attn-run %s --entry=causal --input q=%t/a/q.npy --input k=%t/a/k.npy --input v=%t/a/v.npy --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=causal --input q=%t/a/q.npy --input k=%t/a/k.npy --input v=%t/a/v.npy --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=causal --input q=%t/a/q.npy --input k=%t/a/k.npy --input v=%t/a/v.npy --check --generic | FileCheck %s
//
// A window of 3 around row 300 holding +inf: only rows 297-303 see it.
// RUN: python3 %S/Inputs/plant-nonfinite.py %t/b 1 2 333 333 40 inf 300
// RUN: attn-run %s --entry=window --input q=%t/b/q.npy --input k=%t/b/k.npy --input v=%t/b/v.npy --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=window --input q=%t/b/q.npy --input k=%t/b/k.npy --input v=%t/b/v.npy --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=window --input q=%t/b/q.npy --input k=%t/b/k.npy --input v=%t/b/v.npy --check --generic | FileCheck %s
//
// A block layout whose dropped blocks hold NaN keys.
// RUN: python3 %S/Inputs/plant-nonfinite.py %t/c 1 2 97 97 40 nan 40 41 70
// RUN: attn-run %s --entry=block_layout --input q=%t/c/q.npy --input k=%t/c/k.npy --input v=%t/c/v.npy --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=block_layout --input q=%t/c/q.npy --input k=%t/c/k.npy --input v=%t/c/v.npy --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=block_layout --input q=%t/c/q.npy --input k=%t/c/k.npy --input v=%t/c/v.npy --check --generic | FileCheck %s
//
// Documents (segment ids generated from the seed): NaN keys of one document
// leave the others finite.
// RUN: attn-run %s --entry=documents --random-inputs --input q=%t/c/q.npy --input k=%t/c/k.npy --input v=%t/c/v.npy --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=documents --random-inputs --input q=%t/c/q.npy --input k=%t/c/k.npy --input v=%t/c/v.npy --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=documents --random-inputs --input q=%t/c/q.npy --input k=%t/c/k.npy --input v=%t/c/v.npy --check --generic | FileCheck %s
//
// A KV cache of 100 slots of which the first 90 are filled: the 4 new
// queries at positions 86-89 (keys j <= i + 86) never see the garbage
// (NaN) in the unused slots 90-99.
// RUN: python3 %S/Inputs/plant-nonfinite.py %t/d 1 2 4 100 64 nan 90 91 92 93 94 95 96 97 98 99
// RUN: attn-run %s --entry=cache --input q=%t/d/q.npy --input k=%t/d/k.npy --input v=%t/d/v.npy --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=cache --input q=%t/d/q.npy --input k=%t/d/k.npy --input v=%t/d/v.npy --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=cache --input q=%t/d/q.npy --input k=%t/d/k.npy --input v=%t/d/v.npy --check --generic | FileCheck %s
//
// Logits around 1e4 neither overflow nor lose rows. The scores carry f32
// rounding of ~D * 6e-8 * scale ~ 2e-3, which moves softmax weights by
// ~0.2 %: tolerance 1e-2.
// RUN: attn-run %s --entry=huge_logits --check --tolerance=1e-2 --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=huge_logits --check --tolerance=1e-2 --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=huge_logits --check --tolerance=1e-2 --generic | FileCheck %s
//
// Soft-capping comes before the bias: with a -inf bias on keys 20-31 the
// capped attention equals the same attention over keys 0-19 alone
// (compared outside attn), not one where dropped keys keep weight -cap.
// RUN: python3 %S/Inputs/make-softcap-bias.py %t/e
// RUN: attn-run %s --entry=softcap_bias --input q=%t/e/q.npy --input k=%t/e/k.npy --input v=%t/e/v.npy --input bias=%t/e/bias.npy --output %t/e/biased.npy --check | FileCheck %s
// RUN: attn-run %s --entry=softcap_kept --input q=%t/e/q.npy --input k=%t/e/k20.npy --input v=%t/e/v20.npy --output %t/e/kept.npy --check --target=cpu-avx2 | FileCheck %s
// RUN: python3 %S/Inputs/compare-npy.py %t/e/biased.npy %t/e/kept.npy 1e-6 | FileCheck %s --check-prefix=SAME
// CHECK: check: {{.*}}: PASS
// SAME: SAME

func.func @causal(%q: tensor<1x2x333x40xf32>, %k: tensor<1x2x333x40xf32>, %v: tensor<1x2x333x40xf32>) -> tensor<1x2x333x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x333x40xf32>, tensor<1x2x333x40xf32>, tensor<1x2x333x40xf32>) -> tensor<1x2x333x40xf32>
  return %o : tensor<1x2x333x40xf32>
}

func.func @window(%q: tensor<1x2x333x40xf32>, %k: tensor<1x2x333x40xf32>, %v: tensor<1x2x333x40xf32>) -> tensor<1x2x333x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 3, right = 3>)
      : (tensor<1x2x333x40xf32>, tensor<1x2x333x40xf32>, tensor<1x2x333x40xf32>) -> tensor<1x2x333x40xf32>
  return %o : tensor<1x2x333x40xf32>
}

func.func @block_layout(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.block_layout<block = 32, layout = dense<[[[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 1]]]> : tensor<1x4x4xi1>>)
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @documents(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>,
                     %qs: tensor<1x97xi32>, %ks: tensor<1x97xi32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v segments(%qs, %ks) pattern(#attn.segments)
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x97xi32>, tensor<1x97xi32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @cache(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x100x64xf32>, %v: tensor<1x2x100x64xf32>) -> tensor<1x2x4x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 100, right = 86>)
      : (tensor<1x2x4x64xf32>, tensor<1x2x100x64xf32>, tensor<1x2x100x64xf32>) -> tensor<1x2x4x64xf32>
  return %o : tensor<1x2x4x64xf32>
}

func.func @huge_logits(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) scale = 1.0e3
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @softcap_bias(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x32x8xf32>, %v: tensor<1x1x32x8xf32>, %bias: tensor<1x1x16x32xf32>) -> tensor<1x1x16x8xf32> {
  %o = attn.attention %q, %k, %v bias(%bias) mods = [#attn.softcap<cap = 5.0>]
      : (tensor<1x1x16x8xf32>, tensor<1x1x32x8xf32>, tensor<1x1x32x8xf32>, tensor<1x1x16x32xf32>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}

func.func @softcap_kept(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x20x8xf32>, %v: tensor<1x1x20x8xf32>) -> tensor<1x1x16x8xf32> {
  %o = attn.attention %q, %k, %v mods = [#attn.softcap<cap = 5.0>]
      : (tensor<1x1x16x8xf32>, tensor<1x1x20x8xf32>, tensor<1x1x20x8xf32>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}
