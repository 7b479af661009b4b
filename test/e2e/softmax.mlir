// linalg.softmax outside attention (here over a middle dimension, which
// attn-raise leaves alone) compiles: attn-cpu-pipeline decomposes it with
// attn-decompose-aggregated-ops. Checked against a double-precision
// softmax of the same input. Tolerance 1e-6: probabilities are <= 1 and
// f32 exp / division are exact to a few ulp (~6e-8 each).
// RUN: rm -rf %t && mkdir -p %t
// RUN: python3 %S/Inputs/make-matrix-npy.py tensor %t/x.npy 7 3 33 17
// RUN: attn-run %s --input=arg0=%t/x.npy --output=%t/y.npy
// RUN: python3 %S/Inputs/softmax-reference.py %t/x.npy %t/y.npy 1 1e-6 | FileCheck %s
// CHECK: softmax max abs error {{.*}}: PASS
// The reference can fail: the same output is not a softmax along dim 2.
// RUN: python3 %S/Inputs/softmax-reference.py %t/x.npy %t/y.npy 2 1e-6 | FileCheck %s --check-prefix=WRONG
// WRONG: FAIL
func.func @softmax_middle(%x: tensor<3x33x17xf32>) -> tensor<3x33x17xf32> {
  %e = tensor.empty() : tensor<3x33x17xf32>
  %p = linalg.softmax dimension(1) ins(%x : tensor<3x33x17xf32>) outs(%e : tensor<3x33x17xf32>) -> tensor<3x33x17xf32>
  return %p : tensor<3x33x17xf32>
}
