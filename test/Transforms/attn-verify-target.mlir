// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-set-target=target=cpu --attn-verify-target
// RUN: not attn-opt %s --attn-set-target=target=tpu --attn-verify-target 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: attn-set-target: unknown target 'tpu' (cpu, cpu-avx2, cpu-avx512, cpu-avx512-bf16, cpu-amx, host, vulkan,

// f64 verifies in the dialect and is refused by the CPU target, at the op,
// naming the type and the target.
func.func @f64(%q: tensor<1x1x16x8xf64>) -> tensor<1x1x16x8xf64> {
  // expected-error @+1 {{element type 'f64' is not supported by target 'cpu-avx2' yet (its lowerings take f32, f16, bf16)}}
  %o = attn.attention %q, %q, %q
      : (tensor<1x1x16x8xf64>, tensor<1x1x16x8xf64>, tensor<1x1x16x8xf64>) -> tensor<1x1x16x8xf64>
  return %o : tensor<1x1x16x8xf64>
}

// -----

// f16 and bf16 pass (the CPU kernels widen them on load).
func.func @bf16(%q: tensor<1x1x16x8xbf16>) -> tensor<1x1x16x8xbf16> {
  %o = attn.attention %q, %q, %q pattern(#attn.causal)
      : (tensor<1x1x16x8xbf16>, tensor<1x1x16x8xbf16>, tensor<1x1x16x8xbf16>) -> tensor<1x1x16x8xbf16>
  return %o : tensor<1x1x16x8xbf16>
}

// -----

// f32 passes untouched.
func.func @f32(%q: tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32> {
  %o = attn.attention %q, %q, %q
      : (tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}
