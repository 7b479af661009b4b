// The backward lowers for every target: CPUs through the fused kernel or
// attn-lower-attention-grad, GPU targets through attn-to-gpu-kernels
// (which refuses at the op what its kernels do not take yet:
// Conversion/AttnToGpu/invalid.mlir). attn-verify-target lets it pass.
// RUN: attn-opt %s --attn-set-target=target=vulkan --attn-verify-target | FileCheck %s
// RUN: attn-opt %s --attn-set-target=target=cuda --attn-verify-target | FileCheck %s
// RUN: attn-opt %s --attn-set-target=target=cpu --attn-verify-target | FileCheck %s
// CHECK: attn.attention_grad

func.func @grad(%q: tensor<1x2x16x8xf32>, %lse: tensor<1x2x16xf32>) -> tensor<1x2x16x8xf32> {
  %dq, %dk, %dv = attn.attention_grad %q, %q, %q, %q, %q, %lse
      : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16xf32>)
      -> (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  return %dq : tensor<1x2x16x8xf32>
}

