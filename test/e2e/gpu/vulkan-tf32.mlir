// f32 attention on the tensor-core kernel with TF32 products (attn-run
// --gpu-tf32, pass option tf32): Q, K, V and P are rounded to TF32 (10-bit
// mantissas) before each m16n8k8 mma, S and O accumulate in f32. Each mma
// and ldmatrix is emulated on lavapipe (--gpu-emulate-mma) from PTX's
// m16n8k8 TF32 fragment layout. --check's bar is twice the error of the
// naive attention with Q, K and V rounded to TF32 and S, P and O to f16's
// 10-bit mantissa (what a correct TF32 kernel adds is one rounding of the
// inputs and of P, so it sits near half the bar; a kernel with a wrong
// fragment or swizzle lands far above it, as the perturbed run shows).
// REQUIRES: vulkan
// UNSUPPORTED: sanitize
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --gpu-tf32 --check --entry=dense_d64 | FileCheck %s
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --gpu-tf32 --check --entry=causal_d128 | FileCheck %s
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --gpu-tf32 --check --entry=window_alibi_softcap_d40 | FileCheck %s
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --gpu-tf32 --check --entry=decode_gqa | FileCheck %s
// CHECK: check: {{.*}} = 2 x the naive tf32 attention's {{.*}}: PASS
// RUN: not attn-run %s --device=vulkan --gpu-emulate-mma --gpu-tf32 --check --entry=dense_d64 --perturb-output=0.01 | FileCheck %s --check-prefix=PERTURBED
// PERTURBED: check: {{.*}}: FAIL
// 3xTF32 (--gpu-3xtf32, pass option tf32x3): each product a b runs as
// a_lo b_hi + a_hi b_lo + a_hi b_hi on TF32 parts, which leaves about f32's
// error, so it is held to the f32 bar (1e-5 scaled, 10x the f32 kernels'
// own error here); TF32 alone misses that bar by two orders of magnitude.
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --gpu-3xtf32 --check --entry=window_alibi_softcap_d40 | FileCheck %s --check-prefix=X3
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --gpu-3xtf32 --check --entry=decode_gqa | FileCheck %s --check-prefix=X3
// Past D + Dv = 128, 3xTF32 keeps Q in workgroup memory (one stage):
// dense_d72 takes that path here as on CUDA (D = 128 does too on CUDA, but
// lavapipe's 32 KiB hold Q there only with 16-row workgroups, minutes of
// shader compilation).
// RUN: attn-run %s --device=vulkan --gpu-emulate-mma --gpu-3xtf32 --check --entry=dense_d72 | FileCheck %s --check-prefix=X3
// X3: check: {{.*}} (tolerance 1.0e-05): PASS
// RUN: not attn-run %s --device=vulkan --gpu-emulate-mma --gpu-tf32 --check --tolerance=1e-5 --entry=window_alibi_softcap_d40 | FileCheck %s --check-prefix=TF32-AT-F32
// TF32-AT-F32: check: {{.*}} (tolerance 1.0e-05): FAIL
// The flags are refused where they cannot apply.
// RUN: not attn-run %s --device=vulkan --gpu-tf32 --entry=dense_d64 2>&1 | FileCheck %s --check-prefix=REFUSED
// REFUSED: --gpu-tf32 applies to --device=cuda (or --device=vulkan with --gpu-emulate-mma)
// RUN: not attn-run %s --device=vulkan --gpu-emulate-mma --gpu-tf32 --gpu-3xtf32 --entry=dense_d64 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: --gpu-tf32 and --gpu-3xtf32 exclude each other

// Dense, L = 131 (a short last key tile), D = 64.
func.func @dense_d64(%q: tensor<1x2x131x64xf32>, %k: tensor<1x2x131x64xf32>,
                     %v: tensor<1x2x131x64xf32>) -> tensor<1x2x131x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x131x64xf32>, tensor<1x2x131x64xf32>, tensor<1x2x131x64xf32>)
      -> tensor<1x2x131x64xf32>
  return %o : tensor<1x2x131x64xf32>
}

// Causal, D = 128 (Q in registers on lavapipe's 32 KiB).
func.func @causal_d128(%q: tensor<1x1x150x128xf32>, %k: tensor<1x1x150x128xf32>,
                       %v: tensor<1x1x150x128xf32>) -> tensor<1x1x150x128xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x1x150x128xf32>, tensor<1x1x150x128xf32>, tensor<1x1x150x128xf32>)
      -> tensor<1x1x150x128xf32>
  return %o : tensor<1x1x150x128xf32>
}

// A sliding window, ALiBi and a soft-cap (natural-unit scores), D = 40,
// Dv = 24.
func.func @window_alibi_softcap_d40(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                                    %v: tensor<1x2x97x24xf32>) -> tensor<1x2x97x24xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 20, right = 5>)
      mods = [#attn.alibi<max_bias = 8.0>, #attn.softcap<cap = 20.0>]
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x24xf32>)
      -> tensor<1x2x97x24xf32>
  return %o : tensor<1x2x97x24xf32>
}

// GQA 4:1 decoding over 600 keys: packed heads and split keys.
func.func @decode_gqa(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x600x64xf32>,
                      %v: tensor<1x2x600x64xf32>) -> tensor<1x8x1x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x8x1x64xf32>, tensor<1x2x600x64xf32>, tensor<1x2x600x64xf32>)
      -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// Dense, L = 53, D = 72: 3xTF32 stages Q (D + Dv > 128).
func.func @dense_d72(%q: tensor<1x2x53x72xf32>, %k: tensor<1x2x53x72xf32>,
                     %v: tensor<1x2x53x72xf32>) -> tensor<1x2x53x72xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x53x72xf32>, tensor<1x2x53x72xf32>, tensor<1x2x53x72xf32>)
      -> tensor<1x2x53x72xf32>
  return %o : tensor<1x2x53x72xf32>
}
