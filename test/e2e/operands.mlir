// Dense mask and bias operands (the escape hatch front ends hand us), with
// size-1 batch / head dimensions broadcast. They take the generic path.
// Tolerance as in dense.mlir: 1e-5 of the output's scale.
// RUN: attn-run %s --entry=mask_broadcast --check | FileCheck %s
// RUN: attn-run %s --entry=bias_per_head --check | FileCheck %s
// RUN: attn-run %s --entry=mask_bias_causal --check | FileCheck %s
// CHECK: check: {{.*}}: PASS

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
