// The mask algebra's canonical forms.
// RUN: attn-opt %s --split-input-file --canonicalize | FileCheck %s

// A window wider than the sequence keeps everything: the pattern goes.
// CHECK-LABEL: func @window_covers_everything
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK-NOT: pattern
func.func @window_covers_everything(%q: tensor<1x2x64x16xf32>,
    %k: tensor<1x2x64x16xf32>, %v: tensor<1x2x64x16xf32>)
    -> tensor<1x2x64x16xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 63, right = 63>)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}

// -----

// One step narrower, it stays.
// CHECK-LABEL: func @window_narrower
// CHECK: pattern(#attn.window<left = 62, right = 63>)
func.func @window_narrower(%q: tensor<1x2x64x16xf32>,
    %k: tensor<1x2x64x16xf32>, %v: tensor<1x2x64x16xf32>)
    -> tensor<1x2x64x16xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 62, right = 63>)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}

// -----

// With dynamic lengths nothing is known to cover everything.
// CHECK-LABEL: func @window_dynamic
// CHECK: pattern(#attn.window<left = 63, right = 63>)
func.func @window_dynamic(%q: tensor<1x2x?x16xf32>,
    %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x16xf32>)
    -> tensor<1x2x?x16xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 63, right = 63>)
      : (tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>)
      -> tensor<1x2x?x16xf32>
  return %o : tensor<1x2x?x16xf32>
}

// -----

// Nested unions flatten and duplicates go.
// CHECK-LABEL: func @or_flattening
// CHECK: pattern(#attn.or<[#attn.window<left = 4, right = 4>, #attn.global<[0]>, #attn.random_blocks<block = 16, count = 1, seed = 3>]>)
func.func @or_flattening(%q: tensor<1x2x64x16xf32>,
    %k: tensor<1x2x64x16xf32>, %v: tensor<1x2x64x16xf32>)
    -> tensor<1x2x64x16xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.or<[#attn.window<left = 4, right = 4>,
                        #attn.or<[#attn.global<[0]>,
                                  #attn.window<left = 4, right = 4>]>,
                        #attn.random_blocks<block = 16, count = 1, seed = 3>]>)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}

// -----

// An intersection drops members that keep everything and unwraps a singleton.
// CHECK-LABEL: func @and_neutral_member
// CHECK: pattern(#attn.causal)
func.func @and_neutral_member(%q: tensor<1x2x64x16xf32>,
    %k: tensor<1x2x64x16xf32>, %v: tensor<1x2x64x16xf32>)
    -> tensor<1x2x64x16xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.and<[#attn.causal, #attn.window<left = 100, right = 100>]>)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}

// -----

// A union with a member that keeps everything keeps everything.
// CHECK-LABEL: func @or_absorbing_member
// CHECK-NOT: pattern
// CHECK: return
func.func @or_absorbing_member(%q: tensor<1x2x64x16xf32>,
    %k: tensor<1x2x64x16xf32>, %v: tensor<1x2x64x16xf32>)
    -> tensor<1x2x64x16xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.or<[#attn.causal, #attn.strided<stride = 1>]>)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}

// -----

// Causal with bottom-right alignment and Lq <= Lk... a single query row
// decoding against 32 keys sees every key: the mask goes.
// CHECK-LABEL: func @decode_causal_bottom_right
// CHECK-NOT: pattern
// CHECK: align = bottom_right
func.func @decode_causal_bottom_right(%q: tensor<1x2x1x16xf32>,
    %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>)
    -> tensor<1x2x1x16xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x2x1x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>)
      -> tensor<1x2x1x16xf32>
  return %o : tensor<1x2x1x16xf32>
}

// -----

// ... but top-left aligned, the single query sees only key 0.
// CHECK-LABEL: func @decode_causal_top_left
// CHECK: pattern(#attn.causal)
func.func @decode_causal_top_left(%q: tensor<1x2x1x16xf32>,
    %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x16xf32>)
    -> tensor<1x2x1x16xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x1x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>)
      -> tensor<1x2x1x16xf32>
  return %o : tensor<1x2x1x16xf32>
}

// -----

// Segment masks depend on run-time ids and always stay; an empty mods list
// goes.
// CHECK-LABEL: func @segments_and_empty_mods
// CHECK: pattern(#attn.segments)
// CHECK-NOT: mods
// CHECK: return
func.func @segments_and_empty_mods(%q: tensor<1x2x64x16xf32>,
    %k: tensor<1x2x64x16xf32>, %v: tensor<1x2x64x16xf32>,
    %s: tensor<1x64xi32>) -> tensor<1x2x64x16xf32> {
  %o = attn.attention %q, %k, %v segments(%s, %s)
      pattern(#attn.and<[#attn.segments, #attn.window<left = 64, right = 64>]>)
      mods = []
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>,
         tensor<1x64xi32>, tensor<1x64xi32>) -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}
