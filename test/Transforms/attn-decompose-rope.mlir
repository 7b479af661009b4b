// RUN: attn-opt %s --attn-decompose-rope | FileCheck %s

// One parallel generic over [B, H, L, D]: the pair partner read with
// tensor.extract, the angle and its cos / sin in f64, y = x cos +- x' sin.
// CHECK-LABEL: func @half
// CHECK-NOT: attn.rope
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK: math.cos %{{.*}} : f64
// CHECK: math.sin %{{.*}} : f64
// CHECK: %[[OTHER:.*]] = tensor.extract %arg0
// CHECK: arith.negf %[[OTHER]]
// CHECK: linalg.yield
func.func @half(%x: tensor<1x2x16x64xf32>) -> tensor<1x2x16x64xf32> {
  %y = attn.rope %x style = half : tensor<1x2x16x64xf32> -> tensor<1x2x16x64xf32>
  return %y : tensor<1x2x16x64xf32>
}

// Positions are read per (b, l); bf16 inputs widen and the result rounds.
// CHECK-LABEL: func @bf16_positions
// CHECK: linalg.generic
// CHECK: tensor.extract %arg1[%{{.*}}, %{{.*}}] : tensor<1x16xi32>
// CHECK: arith.sitofp %{{.*}} : i32 to f64
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @bf16_positions(%x: tensor<1x2x16x64xbf16>, %p: tensor<1x16xi32>)
    -> tensor<1x2x16x64xbf16> {
  %y = attn.rope %x positions(%p : tensor<1x16xi32>) style = interleaved
      : tensor<1x2x16x64xbf16> -> tensor<1x2x16x64xbf16>
  return %y : tensor<1x2x16x64xbf16>
}
