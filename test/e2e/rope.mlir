// attn.rope (attn-decompose-rope: one element-wise linalg.generic) against
// the f64 reference of tooling/lib/ReferenceEfficient.cpp, written from
// docs/Dialect.md. Tolerance 1e-5 of the output scale, as for attention:
// the output is x cos + x' sin with the angle, cos and sin in f64 and one
// f32 multiply-add (~1e-7 relative). Positions up to 8191 (`long`) would be
// off by up to ~5e-4 rad with an f32 angle and fail here.
// RUN: attn-run %s --entry=half --check | FileCheck %s
// RUN: attn-run %s --entry=interleaved_positions --check | FileCheck %s
// RUN: attn-run %s --entry=long --check | FileCheck %s
// RUN: attn-run %s --entry=per_sequence_positions --check | FileCheck %s
// CHECK: check: {{.*}}: PASS
// The check can fail: a rotated output off by 0.1 % of its scale.
// RUN: not attn-run %s --entry=half --check --perturb-output=0.001 | FileCheck %s --check-prefix=PERTURBED
// PERTURBED: check: {{.*}}: FAIL

// GPT-NeoX / Llama pairing (x[n], x[n + D/2]), positions 0..L-1.
func.func @half(%x: tensor<2x3x37x64xf32>) -> tensor<2x3x37x64xf32> {
  %y = attn.rope %x style = half : tensor<2x3x37x64xf32> -> tensor<2x3x37x64xf32>
  return %y : tensor<2x3x37x64xf32>
}

// GPT-J pairing (x[2n], x[2n+1]), per-batch positions, Llama 3's base.
func.func @interleaved_positions(%x: tensor<2x2x19x32xf32>, %positions: tensor<2x19xi64>)
    -> tensor<2x2x19x32xf32> {
  %y = attn.rope %x positions(%positions : tensor<2x19xi64>) style = interleaved
      {base = 500000.0 : f64} : tensor<2x2x19x32xf32> -> tensor<2x2x19x32xf32>
  return %y : tensor<2x2x19x32xf32>
}

// Long sequences: angles up to 8191 rad for the first pair.
func.func @long(%x: tensor<1x1x8192x16xf32>) -> tensor<1x1x8192x16xf32> {
  %y = attn.rope %x style = half : tensor<1x1x8192x16xf32> -> tensor<1x1x8192x16xf32>
  return %y : tensor<1x1x8192x16xf32>
}

// One position list for every batch row, i32.
func.func @per_sequence_positions(%x: tensor<3x2x11x8xf32>, %positions: tensor<11xi32>)
    -> tensor<3x2x11x8xf32> {
  %y = attn.rope %x positions(%positions : tensor<11xi32>) style = half
      : tensor<3x2x11x8xf32> -> tensor<3x2x11x8xf32>
  return %y : tensor<3x2x11x8xf32>
}
