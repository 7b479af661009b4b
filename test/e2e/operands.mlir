// Dense mask and bias operands (the escape hatch front ends hand us), with
// size-1 batch / head dimensions broadcast. Masks and [Lq, Lk] biases take
// the generic path.
// Tolerance as in dense.mlir: 1e-5 of the output's scale.
// RUN: attn-run %s --entry=mask_broadcast --check | FileCheck %s
// RUN: attn-run %s --entry=bias_per_head --check | FileCheck %s
// RUN: attn-run %s --entry=mask_bias_causal --check | FileCheck %s
//
// Per-key biases [B|1, Hq|1, 1, Lk] run on the vectorized kernels (AVX2 and
// AVX-512 blocking) as well as the generic path: with GQA and a batch of
// biases; per head on a causal pattern after a softcap and before ALiBi
// (docs/Dialect.md's order); and as a padding mask (-inf on slots 90-99,
// whose values hold NaN: their zero weights must not reach the sum; a NaN
// key would make its score NaN, which no bias drops).
// RUN: attn-run %s --entry=bias_per_key --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=bias_per_key --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=bias_per_key --check --generic | FileCheck %s
// RUN: attn-run %s --entry=bias_per_key_mods --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=bias_per_key_mods --check --generic | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: python3 %S/Inputs/plant-nonfinite.py --values-only %t 1 2 7 100 64 nan 90 91 92 93 94 95 96 97 98 99
// RUN: python3 %S/Inputs/make-key-bias.py %t/bias.npy 1 1 100 90 91 92 93 94 95 96 97 98 99
// RUN: attn-run %s --entry=bias_padding --input q=%t/q.npy --input k=%t/k.npy --input v=%t/v.npy --input bias=%t/bias.npy --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=bias_padding --input q=%t/q.npy --input k=%t/k.npy --input v=%t/v.npy --input bias=%t/bias.npy --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=bias_padding --input q=%t/q.npy --input k=%t/k.npy --input v=%t/v.npy --input bias=%t/bias.npy --check --generic | FileCheck %s
//
// Per-key boolean masks [B|1, Hq|1, 1, Lk] (padding masks) run on the
// vectorized kernels too: the kept flag selects the score or -inf per key
// row. With GQA, a batch of masks, a per-key bias, a causal pattern and
// mods; and as a padding mask whose masked keys hold NaN in K and V (a
// select, unlike a -inf bias, keeps even a NaN key out).
// RUN: attn-run %s --entry=mask_per_key --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=mask_per_key --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=mask_per_key --check --generic | FileCheck %s
// Their backward (the fused CPU kernel and the generic loops) reads them the
// same way.
// RUN: attn-run %s --entry=mask_per_key --backward --check --backward-operand-grads=false | FileCheck %s --check-prefix=GRAD
// RUN: attn-run %s --entry=mask_per_key --backward --check --generic | FileCheck %s --check-prefix=GRAD
// GRAD: check dq: {{.*}}: PASS
// GRAD: check dk: {{.*}}: PASS
// GRAD: check dv: {{.*}}: PASS
// RUN: mkdir -p %t/nan && python3 %S/Inputs/plant-nonfinite.py %t/nan 1 2 7 100 64 nan 90 91 92 93 94 95 96 97 98 99
// RUN: python3 %S/Inputs/make-key-mask.py %t/nan/mask.npy 1 1 100 90 91 92 93 94 95 96 97 98 99
// RUN: attn-run %s --entry=mask_padding --input q=%t/nan/q.npy --input k=%t/nan/k.npy --input v=%t/nan/v.npy --input mask=%t/nan/mask.npy --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=mask_padding --input q=%t/nan/q.npy --input k=%t/nan/k.npy --input v=%t/nan/v.npy --input mask=%t/nan/mask.npy --check --target=cpu-avx512 | FileCheck %s
// CHECK: check: {{.*}}: PASS
// The per-key mask takes the vectorized tile function, not the generic loops.
// RUN: attn-opt %s --attn-set-target=target=cpu-avx512 --attn-tile --attn-to-cpu-kernels | FileCheck %s --check-prefix=FAST
// FAST: func.func private @mask_per_key__attn_cpu_flash_tile(
// FAST-SAME: memref<2x1x1x100xi1>

func.func @mask_broadcast(%q: tensor<2x2x97x64xf32>, %k: tensor<2x2x100x64xf32>,
                          %v: tensor<2x2x100x64xf32>, %m: tensor<1x1x97x100xi1>)
    -> tensor<2x2x97x64xf32> {
  %o = attn.attention %q, %k, %v mask(%m)
      : (tensor<2x2x97x64xf32>, tensor<2x2x100x64xf32>, tensor<2x2x100x64xf32>,
         tensor<1x1x97x100xi1>) -> tensor<2x2x97x64xf32>
  return %o : tensor<2x2x97x64xf32>
}

func.func @bias_per_head(%q: tensor<1x4x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                         %v: tensor<1x2x97x40xf32>, %b: tensor<1x4x97x97xf32>)
    -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v bias(%b)
      : (tensor<1x4x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>,
         tensor<1x4x97x97xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}

func.func @mask_bias_causal(%q: tensor<1x2x97x64xf32>, %k: tensor<1x2x97x64xf32>,
                            %v: tensor<1x2x97x64xf32>, %m: tensor<1x2x97x97xi1>,
                            %b: tensor<1x1x97x97xf32>) -> tensor<1x2x97x64xf32> {
  %o = attn.attention %q, %k, %v mask(%m) bias(%b) pattern(#attn.causal)
      : (tensor<1x2x97x64xf32>, tensor<1x2x97x64xf32>, tensor<1x2x97x64xf32>,
         tensor<1x2x97x97xi1>, tensor<1x1x97x97xf32>) -> tensor<1x2x97x64xf32>
  return %o : tensor<1x2x97x64xf32>
}

func.func @bias_per_key(%q: tensor<2x4x97x64xf32>, %k: tensor<2x2x100x64xf32>,
                        %v: tensor<2x2x100x64xf32>, %b: tensor<2x1x1x100xf32>)
    -> tensor<2x4x97x64xf32> {
  %o = attn.attention %q, %k, %v bias(%b)
      : (tensor<2x4x97x64xf32>, tensor<2x2x100x64xf32>, tensor<2x2x100x64xf32>,
         tensor<2x1x1x100xf32>) -> tensor<2x4x97x64xf32>
  return %o : tensor<2x4x97x64xf32>
}

func.func @bias_per_key_mods(%q: tensor<1x4x130x32xf32>,
                             %k: tensor<1x4x130x32xf32>,
                             %v: tensor<1x4x130x32xf32>,
                             %b: tensor<1x4x1x130xf32>)
    -> tensor<1x4x130x32xf32> {
  %o = attn.attention %q, %k, %v bias(%b) pattern(#attn.causal)
      mods = [#attn.softcap<cap = 2.0>, #attn.alibi<max_bias = 8.0>]
      : (tensor<1x4x130x32xf32>, tensor<1x4x130x32xf32>, tensor<1x4x130x32xf32>,
         tensor<1x4x1x130xf32>) -> tensor<1x4x130x32xf32>
  return %o : tensor<1x4x130x32xf32>
}

func.func @bias_padding(%q: tensor<1x2x7x64xf32>, %k: tensor<1x2x100x64xf32>,
                        %v: tensor<1x2x100x64xf32>, %b: tensor<1x1x1x100xf32>)
    -> tensor<1x2x7x64xf32> {
  %o = attn.attention %q, %k, %v bias(%b)
      : (tensor<1x2x7x64xf32>, tensor<1x2x100x64xf32>, tensor<1x2x100x64xf32>,
         tensor<1x1x1x100xf32>) -> tensor<1x2x7x64xf32>
  return %o : tensor<1x2x7x64xf32>
}

func.func @mask_per_key(%q: tensor<2x4x97x64xf32>, %k: tensor<2x2x100x64xf32>,
                        %v: tensor<2x2x100x64xf32>, %m: tensor<2x1x1x100xi1>,
                        %b: tensor<1x4x1x100xf32>)
    -> tensor<2x4x97x64xf32> {
  %o = attn.attention %q, %k, %v mask(%m) bias(%b) pattern(#attn.causal)
      align = bottom_right mods = [#attn.softcap<cap = 2.0>, #attn.alibi<max_bias = 8.0>]
      : (tensor<2x4x97x64xf32>, tensor<2x2x100x64xf32>, tensor<2x2x100x64xf32>,
         tensor<2x1x1x100xi1>, tensor<1x4x1x100xf32>) -> tensor<2x4x97x64xf32>
  return %o : tensor<2x4x97x64xf32>
}

func.func @mask_padding(%q: tensor<1x2x7x64xf32>, %k: tensor<1x2x100x64xf32>,
                        %v: tensor<1x2x100x64xf32>, %mask: tensor<1x1x1x100xi1>)
    -> tensor<1x2x7x64xf32> {
  %o = attn.attention %q, %k, %v mask(%mask)
      : (tensor<1x2x7x64xf32>, tensor<1x2x100x64xf32>, tensor<1x2x100x64xf32>,
         tensor<1x1x1x100xi1>) -> tensor<1x2x7x64xf32>
  return %o : tensor<1x2x7x64xf32>
}
