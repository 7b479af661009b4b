// The custom score function (the region) is inlined into the kernel: a
// region that halves every logit must match the same attention with half
// the scale. @halved is checked against the f64 reference, @region against
// @halved's output on the same seeded inputs (tolerance 1e-6: the two differ
// only by the rounding of one f32 multiply, 0.5 * (s * x) vs (0.5 s) * x).
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-run %s --entry=region --output %t/region.npy
// RUN: attn-run %s --entry=halved --output %t/halved.npy --check | FileCheck %s
// RUN: python3 %S/Inputs/compare-npy.py %t/region.npy %t/halved.npy 1e-6 | FileCheck %s --check-prefix=SAME
// CHECK: check: {{.*}}: PASS
// SAME: max abs difference {{.*}}: SAME

func.func @region(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                  %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) score {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %half = arith.constant 0.5 : f32
      %y = arith.mulf %x, %half : f32
      attn.yield %y : f32
  } : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
    -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

// 0.5 / sqrt(40) = 0.0790569415...
func.func @halved(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                  %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) scale = 0.0790569415
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
