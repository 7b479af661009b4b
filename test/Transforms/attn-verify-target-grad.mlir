// The backward lowers for CPUs only: a GPU target refuses it at the op.
// RUN: attn-opt %s --verify-diagnostics --attn-verify-target="target=vulkan"
// RUN: attn-opt %s --verify-diagnostics --attn-verify-target="target=cuda"
// RUN: attn-opt %s --attn-verify-target="target=cpu" | FileCheck %s
// CHECK: attn.attention_grad

func.func @grad(%q: tensor<1x2x16x8xf32>, %lse: tensor<1x2x16xf32>) -> tensor<1x2x16x8xf32> {
  // expected-error-re @+1 {{attn.attention_grad is not supported by target '{{vulkan|cuda}}' yet (CPU targets only)}}
  %dq, %dk, %dv = attn.attention_grad %q, %q, %q, %q, %q, %lse
      : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16xf32>)
      -> (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  return %dq : tensor<1x2x16x8xf32>
}
