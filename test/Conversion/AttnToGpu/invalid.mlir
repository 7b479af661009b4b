// What GPU targets do not take yet is an error at its location.
// RUN: attn-opt %s --split-input-file --attn-tile=target=vulkan --attn-to-gpu-kernels=target=vulkan --verify-diagnostics
// RUN: not attn-opt %s --attn-to-gpu-kernels=target=tpu 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not attn-opt %s --attn-to-gpu-kernels=target=cpu 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: attn-to-gpu-kernels: unknown GPU target

func.func @dynamic(%q: tensor<1x2x?x40xf32>, %k: tensor<1x2x?x40xf32>,
                   %v: tensor<1x2x?x40xf32>) -> tensor<1x2x?x40xf32> {
  // expected-error @below {{attn-to-gpu-kernels: GPU kernels take tensors of static shape (not supported by target 'vulkan-lavapipe' yet)}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x?x40xf32>, tensor<1x2x?x40xf32>, tensor<1x2x?x40xf32>)
      -> tensor<1x2x?x40xf32>
  return %o : tensor<1x2x?x40xf32>
}

// -----

// expected-error @below {{attn-to-gpu-kernels: 'two_ops' is not one attention of its arguments; target 'vulkan' runs such functions only}}
func.func @two_ops(%q: tensor<1x2x16x40xf32>, %k: tensor<1x2x16x40xf32>,
                   %v: tensor<1x2x16x40xf32>) -> tensor<1x2x16x40xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x16x40xf32>, tensor<1x2x16x40xf32>, tensor<1x2x16x40xf32>)
      -> tensor<1x2x16x40xf32>
  %p = attn.attention %o, %k, %v
      : (tensor<1x2x16x40xf32>, tensor<1x2x16x40xf32>, tensor<1x2x16x40xf32>)
      -> tensor<1x2x16x40xf32>
  return %p : tensor<1x2x16x40xf32>
}

// -----

func.func @computed_key(%q: tensor<1x2x16x40xf32>, %k: tensor<1x2x16x40xf32>,
                        %v: tensor<1x2x16x40xf32>) -> tensor<1x2x16x40xf32> {
  %k2 = arith.addf %k, %k : tensor<1x2x16x40xf32>
  // expected-error @+1 {{attn-to-gpu-kernels: Q, K, V, segment ids, mask, bias and rel_table must be arguments of the function (not supported by target 'vulkan-lavapipe' yet)}}
  %o = attn.attention %q, %k2, %v
      : (tensor<1x2x16x40xf32>, tensor<1x2x16x40xf32>, tensor<1x2x16x40xf32>)
      -> tensor<1x2x16x40xf32>
  return %o : tensor<1x2x16x40xf32>
}

// -----

func.func @f64(%q: tensor<1x2x16x40xf64>, %k: tensor<1x2x16x40xf64>,
               %v: tensor<1x2x16x40xf64>) -> tensor<1x2x16x40xf64> {
  // expected-error @below {{attn-to-gpu-kernels: element type f64 (not supported by target 'vulkan-lavapipe' yet)}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x16x40xf64>, tensor<1x2x16x40xf64>, tensor<1x2x16x40xf64>)
      -> tensor<1x2x16x40xf64>
  return %o : tensor<1x2x16x40xf64>
}

// -----

// One key row of 4100 + 4100 floats is more than 32 KiB of workgroup memory.
func.func @huge_rows(%q: tensor<1x1x4x4100xf32>, %k: tensor<1x1x4x4100xf32>,
                     %v: tensor<1x1x4x4100xf32>) -> tensor<1x1x4x4100xf32> {
  // expected-error @below {{attn-tile: one key row of this attention does not fit the workgroup memory of target 'vulkan'}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x1x4x4100xf32>, tensor<1x1x4x4100xf32>, tensor<1x1x4x4100xf32>)
      -> tensor<1x1x4x4100xf32>
  return %o : tensor<1x1x4x4100xf32>
}
