// Round trip of every op and attribute: printed -> parsed -> printed must be
// identical, in custom and in generic form.
// RUN: attn-opt %s --split-input-file | FileCheck %s
// RUN: attn-opt %s --split-input-file > %t.1.mlir
// RUN: attn-opt %t.1.mlir --split-input-file > %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir
// RUN: attn-opt %s --split-input-file --mlir-print-op-generic | attn-opt --split-input-file > %t.3.mlir
// RUN: diff %t.1.mlir %t.3.mlir

// CHECK-LABEL: func @dense
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK-NOT: pattern
// CHECK-SAME: -> tensor<2x4x97x64xf32>
func.func @dense(%q: tensor<2x4x97x64xf32>, %k: tensor<2x4x97x64xf32>,
                 %v: tensor<2x4x97x64xf32>) -> tensor<2x4x97x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<2x4x97x64xf32>, tensor<2x4x97x64xf32>, tensor<2x4x97x64xf32>)
      -> tensor<2x4x97x64xf32>
  return %o : tensor<2x4x97x64xf32>
}

// -----

// GQA 4:1, cross attention with Lq != Lk, explicit scale, bf16.
// CHECK-LABEL: func @gqa_cross
// CHECK: attn.attention {{.*}} pattern(#attn.causal) scale = 2.500000e-01 align = bottom_right
// CHECK-SAME: (tensor<1x8x1x40xbf16>, tensor<1x2x1025x40xbf16>, tensor<1x2x1025x80xbf16>) -> tensor<1x8x1x80xbf16>
func.func @gqa_cross(%q: tensor<1x8x1x40xbf16>, %k: tensor<1x2x1025x40xbf16>,
                     %v: tensor<1x2x1025x80xbf16>) -> tensor<1x8x1x80xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) scale = 0.25
      align = bottom_right
      : (tensor<1x8x1x40xbf16>, tensor<1x2x1025x40xbf16>,
         tensor<1x2x1025x80xbf16>) -> tensor<1x8x1x80xbf16>
  return %o : tensor<1x8x1x80xbf16>
}

// -----

// Dynamic sizes everywhere, MQA.
// CHECK-LABEL: func @dynamic
// CHECK: attn.attention {{.*}} pattern(#attn.window<left = 3, right = 2>)
// CHECK-SAME: (tensor<?x?x?x?xf32>, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x?x?x?xf32>
func.func @dynamic(%q: tensor<?x?x?x?xf32>, %k: tensor<?x1x?x?xf32>,
                   %v: tensor<?x1x?x?xf32>) -> tensor<?x?x?x?xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 3, right = 2>)
      : (tensor<?x?x?x?xf32>, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>)
      -> tensor<?x?x?x?xf32>
  return %o : tensor<?x?x?x?xf32>
}

// -----

// Every primitive pattern.
// CHECK-LABEL: func @patterns
// CHECK: pattern(#attn.dilated<left = 8, right = 8, dilation = 2>)
// CHECK: pattern(#attn.strided<stride = 16>)
// CHECK: pattern(#attn.fixed<stride = 16, summary = 2>)
// CHECK: pattern(#attn.global<[0, 5, 63]>)
// CHECK: pattern(#attn.random_blocks<block = 16, count = 2, seed = 42>)
// CHECK: pattern(#attn.block_layout<block = 32, layout = dense<{{\[\[\[}}true, false], [true, true]]]> : tensor<1x2x2xi1>>)
func.func @patterns(%q: tensor<1x2x64x16xf32>, %k: tensor<1x2x64x16xf32>,
                    %v: tensor<1x2x64x16xf32>) {
  %0 = attn.attention %q, %k, %v
      pattern(#attn.dilated<left = 8, right = 8, dilation = 2>)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  %1 = attn.attention %q, %k, %v pattern(#attn.strided<stride = 16>)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  %2 = attn.attention %q, %k, %v pattern(#attn.fixed<stride = 16, summary = 2>)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  %3 = attn.attention %q, %k, %v pattern(#attn.global<[0, 5, 63]>)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  %4 = attn.attention %q, %k, %v
      pattern(#attn.random_blocks<block = 16, count = 2, seed = 42>)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  %5 = attn.attention %q, %k, %v
      pattern(#attn.block_layout<block = 32,
                  layout = dense<[[[1, 0], [1, 1]]]> : tensor<1x2x2xi1>>)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  return
}

// -----

// Longformer and BigBird are compositions; segment ids are operands.
// CHECK-LABEL: func @compositions
// CHECK: pattern(#attn.or<[#attn.window<left = 4, right = 4>, #attn.global<[0]>]>)
// CHECK: segments(%{{.*}}, %{{.*}}) pattern(#attn.and<[#attn.causal, #attn.segments]>)
func.func @compositions(%q: tensor<1x2x64x16xf32>, %k: tensor<1x2x64x16xf32>,
                        %v: tensor<1x2x64x16xf32>, %qs: tensor<1x64xi32>,
                        %ks: tensor<1x64xi32>) {
  %0 = attn.attention %q, %k, %v
      pattern(#attn.or<[#attn.window<left = 4, right = 4>, #attn.global<[0]>]>)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  %1 = attn.attention %q, %k, %v segments(%qs, %ks)
      pattern(#attn.and<[#attn.causal, #attn.segments]>)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>,
         tensor<1x64xi32>, tensor<1x64xi32>) -> tensor<1x2x64x16xf32>
  return
}

// -----

// Dense mask and bias operands (broadcast over batch / heads) and score mods.
// CHECK-LABEL: func @mods
// CHECK: mask(%{{.*}}) bias(%{{.*}}) mods = [#attn.alibi<max_bias = 8.000000e+00>, #attn.softcap<cap = 3.000000e+01>]
// CHECK: rel_table(%{{.*}}) mods = [#attn.shaw_bias<max_distance = 4>]
// CHECK: rel_table(%{{.*}}) mods = [#attn.t5_bias<buckets = 32, max_distance = 128, bidirectional = true>]
// CHECK: mods = [#attn.distance_weight<weights = [1.000000e+00, 5.000000e-01], threshold = 1.000000e+00>, #attn.adaptive_span<spans = [3.200000e+01], ramp = 8.000000e+00>]
func.func @mods(%q: tensor<1x2x64x16xf32>, %k: tensor<1x2x64x16xf32>,
                %v: tensor<1x2x64x16xf32>, %m: tensor<1x1x64x64xi1>,
                %b: tensor<1x2x64x64xf32>, %shaw: tensor<2x9xf32>,
                %t5: tensor<2x32xf32>) {
  %0 = attn.attention %q, %k, %v mask(%m) bias(%b)
      mods = [#attn.alibi<max_bias = 8.0>, #attn.softcap<cap = 30.0>]
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>,
         tensor<1x1x64x64xi1>, tensor<1x2x64x64xf32>) -> tensor<1x2x64x16xf32>
  %1 = attn.attention %q, %k, %v rel_table(%shaw)
      mods = [#attn.shaw_bias<max_distance = 4>]
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>,
         tensor<2x9xf32>) -> tensor<1x2x64x16xf32>
  %2 = attn.attention %q, %k, %v rel_table(%t5)
      mods = [#attn.t5_bias<buckets = 32, max_distance = 128,
                            bidirectional = true>]
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>,
         tensor<2x32xf32>) -> tensor<1x2x64x16xf32>
  %3 = attn.attention %q, %k, %v
      mods = [#attn.distance_weight<weights = [1.0, 0.5], threshold = 1.0>,
              #attn.adaptive_span<spans = [32.0], ramp = 8.0>]
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  return
}

// -----

// A custom score function (FlexAttention-style score_mod).
// CHECK-LABEL: func @score_region
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} score {
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: attn.yield %{{.*}} : f32
// CHECK-NEXT: } :
func.func @score_region(%q: tensor<1x1x8x16xf32>, %k: tensor<1x1x8x16xf32>,
                        %v: tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32> {
  %o = attn.attention %q, %k, %v score {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %c = arith.constant 0.5 : f32
      %y = arith.mulf %x, %c : f32
      attn.yield %y : f32
  } : (tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
    -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}

// -----

// CHECK-LABEL: func @linformer
// CHECK: attn.linformer %{{.*}}, %{{.*}}, %{{.*}} proj(%{{.*}}, %{{.*}}) :
// CHECK: attn.linformer {{.*}} proj({{.*}}) scale = 1.250000e-01 : {{.*}}tensor<4x32x128xf32>
func.func @linformer(%q: tensor<1x4x128x64xf32>, %k: tensor<1x4x128x64xf32>,
                     %v: tensor<1x4x128x64xf32>, %e: tensor<32x128xf32>,
                     %f: tensor<32x128xf32>, %eh: tensor<4x32x128xf32>) {
  %0 = attn.linformer %q, %k, %v proj(%e, %f)
      : (tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>,
         tensor<1x4x128x64xf32>, tensor<32x128xf32>, tensor<32x128xf32>)
      -> tensor<1x4x128x64xf32>
  %1 = attn.linformer %q, %k, %v proj(%eh, %eh) scale = 0.125
      : (tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>,
         tensor<1x4x128x64xf32>, tensor<4x32x128xf32>, tensor<4x32x128xf32>)
      -> tensor<1x4x128x64xf32>
  return
}

// -----

// CHECK-LABEL: func @nystrom
// CHECK: attn.nystrom {{.*}} landmarks = 16 :
// CHECK: attn.nystrom {{.*}} landmarks = 8 {pinv_iterations = 10 : i64} :
func.func @nystrom(%q: tensor<1x4x100x64xf32>, %k: tensor<1x4x100x64xf32>,
                   %v: tensor<1x4x100x64xf32>) {
  %0 = attn.nystrom %q, %k, %v landmarks = 16
      : (tensor<1x4x100x64xf32>, tensor<1x4x100x64xf32>,
         tensor<1x4x100x64xf32>) -> tensor<1x4x100x64xf32>
  %1 = attn.nystrom %q, %k, %v landmarks = 8 {pinv_iterations = 10 : i64}
      : (tensor<1x4x100x64xf32>, tensor<1x4x100x64xf32>,
         tensor<1x4x100x64xf32>) -> tensor<1x4x100x64xf32>
  return
}

// -----

// CHECK-LABEL: func @kernelized
// CHECK: attn.kernelized {{.*}} omega(%{{.*}}) feature_map = favor causal :
// CHECK: attn.kernelized {{.*}} omega(%{{.*}}) feature_map = rfa :
// CHECK: attn.kernelized {{.*}} feature_map = elu_plus_one :
// CHECK: attn.kernelized {{.*}} feature_map = relu causal :
func.func @kernelized(%q: tensor<1x4x128x64xf32>, %k: tensor<1x4x128x64xf32>,
                      %v: tensor<1x4x128x64xf32>, %w: tensor<256x64xf32>) {
  %0 = attn.kernelized %q, %k, %v omega(%w) feature_map = favor causal
      : (tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>,
         tensor<1x4x128x64xf32>, tensor<256x64xf32>) -> tensor<1x4x128x64xf32>
  %1 = attn.kernelized %q, %k, %v omega(%w) feature_map = rfa
      : (tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>,
         tensor<1x4x128x64xf32>, tensor<256x64xf32>) -> tensor<1x4x128x64xf32>
  %2 = attn.kernelized %q, %k, %v feature_map = elu_plus_one
      : (tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>,
         tensor<1x4x128x64xf32>) -> tensor<1x4x128x64xf32>
  %3 = attn.kernelized %q, %k, %v feature_map = relu causal
      : (tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>,
         tensor<1x4x128x64xf32>) -> tensor<1x4x128x64xf32>
  return
}

// -----

// CHECK-LABEL: func @lsh
// CHECK: attn.lsh %{{.*}}, %{{.*}} rotations(%{{.*}}) buckets = 8 rounds = 2 chunk = 32 causal :
func.func @lsh(%qk: tensor<1x4x256x64xf32>, %v: tensor<1x4x256x64xf32>,
               %r: tensor<2x64x4xf32>) -> tensor<1x4x256x64xf32> {
  %o = attn.lsh %qk, %v rotations(%r) buckets = 8 rounds = 2 chunk = 32 causal
      : (tensor<1x4x256x64xf32>, tensor<1x4x256x64xf32>, tensor<2x64x4xf32>)
      -> tensor<1x4x256x64xf32>
  return %o : tensor<1x4x256x64xf32>
}

// -----

// CHECK-LABEL: func @routing
// CHECK: attn.routing {{.*}} centroids(%{{.*}}) top_k = 16 :
func.func @routing(%q: tensor<1x4x256x64xf32>, %k: tensor<1x4x256x64xf32>,
                   %v: tensor<1x4x256x64xf32>, %c: tensor<16x64xf32>)
    -> tensor<1x4x256x64xf32> {
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 16
      : (tensor<1x4x256x64xf32>, tensor<1x4x256x64xf32>,
         tensor<1x4x256x64xf32>, tensor<16x64xf32>) -> tensor<1x4x256x64xf32>
  return %o : tensor<1x4x256x64xf32>
}

// -----

// CHECK-LABEL: func @mixing_and_positions
// CHECK: attn.fourier_mix %{{.*}} : tensor<2x128x768xf32> -> tensor<2x128x768xf32>
// CHECK: attn.rope %{{.*}} style = half : tensor<1x8x16x64xf32>
// CHECK: attn.rope %{{.*}} positions(%{{.*}} : tensor<16xi64>) style = interleaved {base = 5.000000e+05 : f64}
func.func @mixing_and_positions(%x: tensor<2x128x768xf32>,
                                %q: tensor<1x8x16x64xf32>,
                                %pos: tensor<16xi64>) {
  %0 = attn.fourier_mix %x : tensor<2x128x768xf32> -> tensor<2x128x768xf32>
  %1 = attn.rope %q style = half : tensor<1x8x16x64xf32> -> tensor<1x8x16x64xf32>
  %2 = attn.rope %q positions(%pos : tensor<16xi64>) style = interleaved
      {base = 500000.0 : f64} : tensor<1x8x16x64xf32> -> tensor<1x8x16x64xf32>
  return
}

// -----

// CHECK-LABEL: func.func @paged
// CHECK: attn.paged_kv %{{.*}}[%{{.*}}] length %{{.*}} : tensor<?x2x16x64xf32>, tensor<1x?xi32> -> tensor<1x2x?x64xf32>
func.func @paged(%pool: tensor<?x2x16x64xf32>, %table: tensor<1x?xi32>, %n: index) -> tensor<1x2x?x64xf32> {
  %k = attn.paged_kv %pool[%table] length %n : tensor<?x2x16x64xf32>, tensor<1x?xi32> -> tensor<1x2x?x64xf32>
  return %k : tensor<1x2x?x64xf32>
}

// -----

// CHECK-LABEL: func.func @grad
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = attn.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}) pattern(#attn.causal) scale = 1.250000e-01 align = bottom_right mods = [#attn.softcap<cap = 3.000000e+01>, #attn.alibi<max_bias = 8.000000e+00>] :
// CHECK-SAME: -> (tensor<1x8x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x32xf32>)
func.func @grad(%q: tensor<1x8x?x64xf32>, %k: tensor<1x2x?x64xf32>, %v: tensor<1x2x?x32xf32>, %o: tensor<1x8x?x32xf32>, %do: tensor<1x8x?x32xf32>, %lse: tensor<1x8x?xf32>, %bias: tensor<1x8x?x?xf32>) -> (tensor<1x8x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x32xf32>) {
  %dq, %dk, %dv = attn.attention_grad %q, %k, %v, %o, %do, %lse bias(%bias) pattern(#attn.causal) scale = 0.125 align = bottom_right mods = [#attn.softcap<cap = 30.0>, #attn.alibi<max_bias = 8.0>]
      : (tensor<1x8x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x32xf32>, tensor<1x8x?x32xf32>, tensor<1x8x?x32xf32>, tensor<1x8x?xf32>, tensor<1x8x?x?xf32>)
      -> (tensor<1x8x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x32xf32>)
  return %dq, %dk, %dv : tensor<1x8x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x32xf32>
}
