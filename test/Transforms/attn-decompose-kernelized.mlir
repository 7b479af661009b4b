// RUN: attn-opt %s --split-input-file --attn-decompose-kernelized --canonicalize --cse | FileCheck %s

// Non-causal ReLU: features, then the state phi(K)^T V [B, Hkv, D, Dv] and
// its row sum z, repeated to the 4 query heads (h -> h floordiv 2), then
// phi(Q) S / phi(Q) z with 0 where the denominator is 0. No L x L tensor.
// CHECK-DAG: #[[REPEAT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 2, d2, d3)>
// CHECK-LABEL: func.func @relu_gqa
// CHECK: arith.maximumf
// CHECK: %[[STATE:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x16x16xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[REPEAT]], {{.*}} ins(%[[STATE]] : tensor<1x2x16x16xf32>) outs(%{{.*}} : tensor<1x4x16x16xf32>)
// CHECK: arith.cmpf oeq
// CHECK: arith.divf
// CHECK: arith.select
// CHECK-NOT: tensor<1x4x8x8xf32>
// CHECK-NOT: scf.for
// CHECK: return
func.func @relu_gqa(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                    %v: tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = relu
      : (tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Causal FAVOR+ on L = 100: W x' contracted over D, exp of the exponent
// minus its row maximum (queries) or its (batch, head) maximum (keys), the
// rows padded to 128 = 2 chunks of 64, and an scf.for over chunks carrying
// (S [m, Dv], z [m], O); inside, the 64 x 64 intra-chunk scores are kept
// where j <= i.
// CHECK-LABEL: func.func @favor_causal
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x1x100x16xf32>, tensor<8x16xf32>) outs(%{{.*}} : tensor<1x1x100x8xf32>)
// CHECK: math.exp
// CHECK: tensor.insert_slice {{.*}} into {{.*}}[0, 0, 0, 0] [1, 1, 100, 8] [1, 1, 1, 1] : tensor<1x1x100x8xf32> into tensor<1x1x128x8xf32>
// CHECK: scf.for %[[ROW:.*]] = %c0 to %c128 step %c64 iter_args({{.*}}) -> (tensor<1x1x8x16xf32>, tensor<1x1x8xf32>, tensor<1x1x128x16xf32>)
// CHECK:   tensor.extract_slice {{.*}}[0, 0, %[[ROW]], 0] [1, 1, 64, 8]
// CHECK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<1x1x64x64xf32>)
// CHECK:   %[[J:.*]] = linalg.index 3 : index
// CHECK:   %[[I:.*]] = linalg.index 2 : index
// CHECK:   arith.cmpi ule, %[[J]], %[[I]] : index
// CHECK:   tensor.insert_slice {{.*}}[0, 0, %[[ROW]], 0] [1, 1, 64, 16]
// CHECK:   scf.yield
// CHECK: tensor.extract_slice {{.*}}[0, 0, 0, 0] [1, 1, 100, 16] [1, 1, 1, 1] : tensor<1x1x128x16xf32> to tensor<1x1x100x16xf32>
func.func @favor_causal(%q: tensor<1x1x100x16xf32>, %k: tensor<1x1x100x16xf32>,
                        %v: tensor<1x1x100x16xf32>, %w: tensor<8x16xf32>)
    -> tensor<1x1x100x16xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor causal
      : (tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>,
         tensor<1x1x100x16xf32>, tensor<8x16xf32>) -> tensor<1x1x100x16xf32>
  return %o : tensor<1x1x100x16xf32>
}

// -----

// RFA: sines and cosines of W x' side by side, 2 m = 16 features.
// CHECK-LABEL: func.func @rfa
// CHECK: math.sin
// CHECK: tensor.insert_slice {{.*}}[0, 0, 0, 0] [1, 1, 8, 8] [1, 1, 1, 1] : tensor<1x1x8x8xf32> into tensor<1x1x8x16xf32>
// CHECK: math.cos
// CHECK: tensor.insert_slice {{.*}}[0, 0, 0, 8] [1, 1, 8, 8] [1, 1, 1, 1] : tensor<1x1x8x8xf32> into tensor<1x1x8x16xf32>
func.func @rfa(%q: tensor<1x1x8x16xf32>, %w: tensor<8x16xf32>)
    -> tensor<1x1x8x16xf32> {
  %o = attn.kernelized %q, %q, %q omega(%w) feature_map = rfa
      : (tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>,
         tensor<8x16xf32>) -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}

// -----

// Non-causal FAVOR+ is two softmax attentions (scale D^(-1/4) = 0.5): the
// m = 32 rows of omega, broadcast to (batch, kv head), attend over the keys
// with the per-key bias -|k'|^2 / 2 (sum of squares times -1/8), giving
// (V', lse); the queries attend over the same rows with values V' and the
// per-key bias lse repeated to the 4 query heads (h -> h floordiv 2). No
// [L, m] feature map and no exp outside the attentions.
// CHECK-DAG: #[[REPEAT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1 floordiv 2, d2)>
// CHECK-LABEL: func.func @favor_gqa
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x10x16xf32>, %[[K:.*]]: tensor<1x2x12x16xf32>, %[[V:.*]]: tensor<1x2x12x8xf32>, %[[W:.*]]: tensor<32x16xf32>)
// CHECK-DAG: %[[EIGHTH:.*]] = arith.constant -1.250000e-01 : f32
// CHECK: %[[ROWS:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<32x16xf32>) outs(%{{.*}} : tensor<1x2x32x16xf32>)
// CHECK: %[[SQUARES:.*]] = linalg.generic {{.*}} ins(%[[K]], %[[K]] : {{.*}}) outs(%{{.*}} : tensor<1x2x12xf32>)
// CHECK: %[[HALF:.*]] = linalg.generic {{.*}} ins(%[[SQUARES]] : tensor<1x2x12xf32>)
// CHECK: arith.mulf %{{.*}}, %[[EIGHTH]]
// CHECK: %[[KBIAS:.*]] = tensor.expand_shape %[[HALF]] {{.*}} into tensor<1x2x1x12xf32>
// CHECK: %[[STATE:.*]], %[[LSE:.*]] = attn.attention %[[ROWS]], %[[K]], %[[V]] bias(%[[KBIAS]]) scale = 5.000000e-01 : {{.*}} -> (tensor<1x2x32x8xf32>, tensor<1x2x32xf32>)
// CHECK: %[[REPEATED:.*]] = linalg.generic {indexing_maps = [#[[REPEAT]], {{.*}} ins(%[[LSE]] : tensor<1x2x32xf32>) outs(%{{.*}} : tensor<1x4x32xf32>)
// CHECK: %[[FBIAS:.*]] = tensor.expand_shape %[[REPEATED]] {{.*}} into tensor<1x4x1x32xf32>
// CHECK: %[[OUT:.*]] = attn.attention %[[Q]], %[[ROWS]], %[[STATE]] bias(%[[FBIAS]]) scale = 5.000000e-01 :
// CHECK-NOT: math.exp
// CHECK: return %[[OUT]]
func.func @favor_gqa(%q: tensor<1x4x10x16xf32>, %k: tensor<1x2x12x16xf32>,
                     %v: tensor<1x2x12x8xf32>, %w: tensor<32x16xf32>)
    -> tensor<1x4x10x8xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor
      : (tensor<1x4x10x16xf32>, tensor<1x2x12x16xf32>, tensor<1x2x12x8xf32>,
         tensor<32x16xf32>) -> tensor<1x4x10x8xf32>
  return %o : tensor<1x4x10x8xf32>
}
