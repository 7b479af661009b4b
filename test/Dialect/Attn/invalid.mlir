// Every verifier rule of the attn dialect, one per block.
// RUN: attn-opt %s --split-input-file --verify-diagnostics

// window: negative left
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.window left must be >= 0, got -1}}
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = -1, right = 0>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// window: negative right
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.window right must be >= 0, got -3}}
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 0, right = -3>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// dilated: zero dilation
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.dilated dilation must be >= 1, got 0}}
  %o = attn.attention %q, %k, %v pattern(#attn.dilated<left = 4, right = 4, dilation = 0>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// dilated: negative window
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.dilated left must be >= 0, got -4}}
  %o = attn.attention %q, %k, %v pattern(#attn.dilated<left = -4, right = 4, dilation = 2>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// strided: zero stride
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.strided stride must be >= 1, got 0}}
  %o = attn.attention %q, %k, %v pattern(#attn.strided<stride = 0>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// fixed: zero stride
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.fixed stride must be >= 1, got 0}}
  %o = attn.attention %q, %k, %v pattern(#attn.fixed<stride = 0, summary = 0>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// fixed: negative summary
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.fixed summary must be >= 0, got -1}}
  %o = attn.attention %q, %k, %v pattern(#attn.fixed<stride = 8, summary = -1>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// fixed: summary > stride
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.fixed summary (9) must not exceed stride (8)}}
  %o = attn.attention %q, %k, %v pattern(#attn.fixed<stride = 8, summary = 9>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// global: empty (rejected by the parser; the verifier guards C++ builders)
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+2 {{expected integer value}}
  // expected-error @+1 {{failed to parse Attn_GlobalAttr parameter 'indices'}}
  %o = attn.attention %q, %k, %v pattern(#attn.global<[]>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// global: negative index
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.global index -1 is negative}}
  %o = attn.attention %q, %k, %v pattern(#attn.global<[-1]>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// global: unsorted
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.global indices must be sorted and unique}}
  %o = attn.attention %q, %k, %v pattern(#attn.global<[3, 1]>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// global: index past the static key length
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.global index 32 is out of range for 32 keys}}
  %o = attn.attention %q, %k, %v pattern(#attn.global<[0, 32]>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// random_blocks: zero block
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.random_blocks block must be >= 1, got 0}}
  %o = attn.attention %q, %k, %v pattern(#attn.random_blocks<block = 0, count = 1, seed = 1>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// random_blocks: negative count
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.random_blocks count must be >= 0, got -1}}
  %o = attn.attention %q, %k, %v pattern(#attn.random_blocks<block = 8, count = -1, seed = 1>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// random_blocks: negative seed
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.random_blocks seed must be >= 0, got -5}}
  %o = attn.attention %q, %k, %v pattern(#attn.random_blocks<block = 8, count = 1, seed = -5>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// block_layout: zero block
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.block_layout block must be >= 1, got 0}}
  %o = attn.attention %q, %k, %v pattern(#attn.block_layout<block = 0, layout = dense<1> : tensor<1x2x4xi1>>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// block_layout: rank
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.block_layout layout must be a rank-3 [heads, query blocks, key blocks] tensor}}
  %o = attn.attention %q, %k, %v pattern(#attn.block_layout<block = 8, layout = dense<1> : tensor<2x4xi1>>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// block_layout: empty
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.block_layout layout must not be empty}}
  %o = attn.attention %q, %k, %v pattern(#attn.block_layout<block = 8, layout = dense<1> : tensor<1x0x4xi1>>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// block_layout: head count
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.block_layout has 3 heads; expected 1 or 4}}
  %o = attn.attention %q, %k, %v pattern(#attn.block_layout<block = 8, layout = dense<1> : tensor<3x2x4xi1>>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// block_layout: query blocks
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.block_layout has 3 query blocks; 16 queries in blocks of 8 need 2}}
  %o = attn.attention %q, %k, %v pattern(#attn.block_layout<block = 8, layout = dense<1> : tensor<1x3x4xi1>>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// block_layout: key blocks
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.block_layout has 5 key blocks; 32 keys in blocks of 8 need 4}}
  %o = attn.attention %q, %k, %v pattern(#attn.block_layout<block = 8, layout = dense<1> : tensor<1x2x5xi1>>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// or: empty
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.or needs at least one member}}
  %o = attn.attention %q, %k, %v pattern(#attn.or<[]>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// and: member is not a pattern
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.and member 3 : i64 is not a mask pattern}}
  %o = attn.attention %q, %k, %v pattern(#attn.and<[#attn.causal, 3 : i64]>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// and: empty
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.and needs at least one member}}
  %o = attn.attention %q, %k, %v pattern(#attn.and<[]>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// or: a score mod is not a pattern
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{is not a mask pattern}}
  %o = attn.attention %q, %k, %v pattern(#attn.or<[#attn.causal, #attn.alibi<max_bias = 8.0>]>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// alibi: zero max_bias
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.alibi max_bias must be a finite number > 0, got 0}}
  %o = attn.attention %q, %k, %v mods = [#attn.alibi<max_bias = 0.0>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// softcap: negative cap
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.softcap cap must be a finite number > 0, got -1}}
  %o = attn.attention %q, %k, %v mods = [#attn.softcap<cap = -1.0>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// shaw_bias: zero distance
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.shaw_bias max_distance must be >= 1, got 0}}
  %o = attn.attention %q, %k, %v mods = [#attn.shaw_bias<max_distance = 0>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// t5_bias: too few buckets
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.t5_bias needs at least 4 buckets, got 2}}
  %o = attn.attention %q, %k, %v mods = [#attn.t5_bias<buckets = 2, max_distance = 128, bidirectional = true>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// t5_bias: max_distance inside the exact range
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.t5_bias max_distance (8) must exceed the 8 exactly-bucketed distances}}
  %o = attn.attention %q, %k, %v mods = [#attn.t5_bias<buckets = 32, max_distance = 8, bidirectional = true>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// distance_weight: no weights (rejected by the parser)
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+2 {{expected floating point literal}}
  // expected-error @+1 {{failed to parse Attn_DistanceWeightAttr parameter 'weights'}}
  %o = attn.attention %q, %k, %v mods = [#attn.distance_weight<weights = [], threshold = 1.0>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// distance_weight: per-head count
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.distance_weight has 2 weights; expected 1 or one per query head (4)}}
  %o = attn.attention %q, %k, %v mods = [#attn.distance_weight<weights = [1.0, 2.0], threshold = 1.0>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// adaptive_span: no spans (rejected by the parser)
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+2 {{expected floating point literal}}
  // expected-error @+1 {{failed to parse Attn_AdaptiveSpanAttr parameter 'spans'}}
  %o = attn.attention %q, %k, %v mods = [#attn.adaptive_span<spans = [], ramp = 4.0>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// adaptive_span: negative span
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.adaptive_span spans must be finite and >= 0, got -2}}
  %o = attn.attention %q, %k, %v mods = [#attn.adaptive_span<spans = [-2.0], ramp = 4.0>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// adaptive_span: zero ramp
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.adaptive_span ramp must be a finite number > 0, got 0}}
  %o = attn.attention %q, %k, %v mods = [#attn.adaptive_span<spans = [2.0], ramp = 0.0>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// adaptive_span: per-head count
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{#attn.adaptive_span has 3 spans; expected 1 or one per query head (4)}}
  %o = attn.attention %q, %k, %v mods = [#attn.adaptive_span<spans = [1.0, 2.0, 3.0], ramp = 4.0>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// query rank
func.func @f(%q: tensor<4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{query must have rank 4 [B, Hq, Lq, D], got 'tensor<4x16x8xf32>'}}
  %o = attn.attention %q, %k, %v
      : (tensor<4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// key rank
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{key must have rank 4 [B, Hkv, Lk, D], got 'tensor<2x32x8xf32>'}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x16x8xf32>, tensor<2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// value rank
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{value must have rank 4 [B, Hkv, Lk, Dv], got 'tensor<2x32x8xf32>'}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// result rank
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<4x16x8xf32> {
  // expected-error @+1 {{result must have rank 4 [B, Hq, Lq, Dv], got 'tensor<4x16x8xf32>'}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<4x16x8xf32>
  return %o : tensor<4x16x8xf32>
}

// -----

// element types
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf16>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{query, key, value and result must have the same element type}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf16>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// batch mismatch
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{key dimension 0 (batch) is 2, expected 1}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// key/value heads mismatch
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x1x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{value dimension 1 (heads, as in key) is 1, expected 2}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x1x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// key/value length mismatch
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x31x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{value dimension 2 (key length, as in key) is 31, expected 32}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x31x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// D mismatch between Q and K
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x16xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{key dimension 3 (head dim, as in query) is 16, expected 8}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// Hq not a multiple of Hkv
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x3x32x8xf32>, %v: tensor<1x3x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{query heads (4) must be a multiple of key/value heads (3)}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x16x8xf32>, tensor<1x3x32x8xf32>, tensor<1x3x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// result length
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x15x8xf32> {
  // expected-error @+1 {{result dimension 2 (query length) is 15, expected 16}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x15x8xf32>
  return %o : tensor<1x4x15x8xf32>
}

// -----

// result head dim
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x4xf32> {
  // expected-error @+1 {{result dimension 3 (value head dim) is 4, expected 8}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x4xf32>
  return %o : tensor<1x4x16x4xf32>
}

// -----

// zero scale
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{scale must be finite and non-zero}}
  %o = attn.attention %q, %k, %v scale = 0.0
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// mask rank
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %m: tensor<16x32xi1>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{mask must have rank 4 [B or 1, Hq or 1, Lq or 1, Lk], got 'tensor<16x32xi1>'}}
  %o = attn.attention %q, %k, %v mask(%m)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<16x32xi1>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// mask heads do not broadcast
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %m: tensor<1x2x16x32xi1>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{mask dimension 1 (query heads) is 2, expected 1 or 4}}
  %o = attn.attention %q, %k, %v mask(%m)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x16x32xi1>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// mask rows are Lq or 1 (per key)
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %m: tensor<1x1x8x32xi1>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{mask dimension 2 (query length) is 8, expected 1 or 16}}
  %o = attn.attention %q, %k, %v mask(%m)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x1x8x32xi1>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// bias rank
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %b: tensor<4x32xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{bias must have rank 4 [B or 1, Hq or 1, Lq or 1, Lk], got 'tensor<4x32xf32>'}}
  %o = attn.attention %q, %k, %v bias(%b)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<4x32xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// mask key length
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %m: tensor<1x1x16x16xi1>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{mask dimension 3 (key length) is 16, expected 32}}
  %o = attn.attention %q, %k, %v mask(%m)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x1x16x16xi1>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// bias query length
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %b: tensor<1x4x8x32xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{bias dimension 2 (query length) is 8, expected 1 or 16}}
  %o = attn.attention %q, %k, %v bias(%b)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x4x8x32xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// segments without #attn.segments
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %s: tensor<1x16xi32>, %t: tensor<1x32xi32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{segment ids are given but the pattern does not use #attn.segments}}
  %o = attn.attention %q, %k, %v segments(%s, %t)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x16xi32>, tensor<1x32xi32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// #attn.segments without ids
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{pattern uses #attn.segments but no segments(q_ids, kv_ids) operands are given}}
  %o = attn.attention %q, %k, %v pattern(#attn.segments)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// segment ids length
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %s: tensor<1x17xi32>, %t: tensor<1x32xi32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{q_segments dimension 1 (query length) is 17, expected 16}}
  %o = attn.attention %q, %k, %v segments(%s, %t) pattern(#attn.segments)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x17xi32>, tensor<1x32xi32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// segment ids rank
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %s: tensor<16xi32>, %t: tensor<1x32xi32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{q_segments must have rank 2 [B, Lq], got 'tensor<16xi32>'}}
  %o = attn.attention %q, %k, %v segments(%s, %t) pattern(#attn.segments)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<16xi32>, tensor<1x32xi32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// relative bias without table
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{mod #attn.shaw_bias<max_distance = 4> needs a rel_table(...) operand}}
  %o = attn.attention %q, %k, %v mods = [#attn.shaw_bias<max_distance = 4>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// table without a relative bias mod
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %t: tensor<4x9xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{rel_table is given but no mod reads a relative-position table}}
  %o = attn.attention %q, %k, %v rel_table(%t)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<4x9xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// two relative bias mods
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %t: tensor<4x9xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{at most one relative-position bias mod is allowed}}
  %o = attn.attention %q, %k, %v rel_table(%t) mods = [#attn.shaw_bias<max_distance = 4>, #attn.t5_bias<buckets = 8, max_distance = 16, bidirectional = false>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<4x9xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// table columns
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %t: tensor<4x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{rel_table dimension 1 (columns of the mod) is 8, expected 9}}
  %o = attn.attention %q, %k, %v rel_table(%t) mods = [#attn.shaw_bias<max_distance = 4>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<4x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// table heads
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %t: tensor<2x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{rel_table dimension 0 (query heads) is 2, expected 4}}
  %o = attn.attention %q, %k, %v rel_table(%t) mods = [#attn.t5_bias<buckets = 8, max_distance = 16, bidirectional = false>]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<2x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// a pattern is not a score mod
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{mods entry #attn.causal is not a score mod}}
  %o = attn.attention %q, %k, %v mods = [#attn.causal]
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// a score mod is not a pattern
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{expected a mask pattern such as #attn.causal or #attn.window<...>, got #attn.alibi<max_bias = 8.000000e+00>}}
  %o = attn.attention %q, %k, %v pattern(#attn.alibi<max_bias = 8.0>)
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// score region: wrong block arguments
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{score region must take (f32, index, index, index, index) for (score, b, h, i, j)}}
  %o = attn.attention %q, %k, %v score {
    ^bb0(%x: f32, %i: index, %j: index):
      attn.yield %x : f32
  } : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// score region: wrong yield
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{score region must end with attn.yield of one f32}}
  %o = attn.attention %q, %k, %v score {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      attn.yield %i : index
  } : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// attn.yield outside a score region
func.func @f(%x: f32) {
  // expected-error @+1 {{'attn.yield' op expects parent op to be one of 'attn.attention, attn.attention_grad, attn.online_attention'}}
  attn.yield %x : f32
}

// -----

// linformer: projection rank
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %e: tensor<32xf32>) {
  // expected-error @+1 {{e_proj must be [k, Lk] or [Hkv, k, Lk], got 'tensor<32xf32>'}}
  %o = attn.linformer %q, %k, %v proj(%e, %e) : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// linformer: projection length
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %e: tensor<4x31xf32>) {
  // expected-error @+1 {{e_proj dimension 1 (key length) is 31, expected 32}}
  %o = attn.linformer %q, %k, %v proj(%e, %e) : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<4x31xf32>, tensor<4x31xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// linformer: per-head projection heads
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %e: tensor<3x4x32xf32>) {
  // expected-error @+1 {{e_proj dimension 0 (key/value heads) is 3, expected 2}}
  %o = attn.linformer %q, %k, %v proj(%e, %e) : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<3x4x32xf32>, tensor<3x4x32xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// linformer: E and F differ
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %e: tensor<4x32xf32>, %f: tensor<5x32xf32>) {
  // expected-error @+1 {{e_proj and f_proj must have the same shape, got 'tensor<4x32xf32>' and 'tensor<5x32xf32>'}}
  %o = attn.linformer %q, %k, %v proj(%e, %f) : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<4x32xf32>, tensor<5x32xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// linformer: Q/K/V checks apply
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x4xf32>, %v: tensor<1x2x32x8xf32>, %e: tensor<4x32xf32>) {
  // expected-error @+1 {{key dimension 3 (head dim, as in query) is 4, expected 8}}
  %o = attn.linformer %q, %k, %v proj(%e, %e) : (tensor<1x2x32x8xf32>, tensor<1x2x32x4xf32>, tensor<1x2x32x8xf32>, tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// nystrom: zero landmarks
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) {
  // expected-error @+1 {{landmarks must be >= 1, got 0}}
  %o = attn.nystrom %q, %k, %v landmarks = 0 : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// nystrom: zero iterations
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) {
  // expected-error @+1 {{pinv_iterations must be >= 1, got 0}}
  %o = attn.nystrom %q, %k, %v landmarks = 4 {pinv_iterations = 0 : i64} : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// nystrom: more landmarks than keys
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) {
  // expected-error @+1 {{landmarks (33) exceed the query length (32)}}
  %o = attn.nystrom %q, %k, %v landmarks = 33 : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// kernelized: favor needs omega
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) {
  // expected-error @+1 {{feature map 'favor' needs an omega(...) projection operand}}
  %o = attn.kernelized %q, %k, %v feature_map = favor : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// kernelized: relu takes no omega
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{feature map 'relu' takes no omega operand}}
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = relu : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<16x8xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// kernelized: omega rank
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{omega must have rank 2 [features, D], got 'tensor<16xf32>'}}
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = rfa : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<16xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// kernelized: omega head dim
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %w: tensor<16x4xf32>) {
  // expected-error @+1 {{omega dimension 1 (head dim) is 4, expected 8}}
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<16x4xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// kernelized: no features
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %w: tensor<0x8xf32>) {
  // expected-error @+1 {{omega has a zero-size dimension: 'tensor<0x8xf32>'}}
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<0x8xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// kernelized: unknown feature map
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) {
  // expected-error @+1 {{expected one of favor, rfa, elu_plus_one, relu, got 'cosine'}}
  %o = attn.kernelized %q, %k, %v feature_map = cosine : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// lsh: odd buckets
func.func @f(%qk: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %r: tensor<1x8x1xf32>) {
  // expected-error @+1 {{buckets must be even and >= 2, got 3}}
  %o = attn.lsh %qk, %v rotations(%r) buckets = 3 rounds = 1 chunk = 8 : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x8x1xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// lsh: zero rounds
func.func @f(%qk: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %r: tensor<1x8x2xf32>) {
  // expected-error @+1 {{rounds must be >= 1, got 0}}
  %o = attn.lsh %qk, %v rotations(%r) buckets = 4 rounds = 0 chunk = 8 : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x8x2xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// lsh: zero chunk
func.func @f(%qk: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %r: tensor<1x8x2xf32>) {
  // expected-error @+1 {{chunk must be >= 1, got 0}}
  %o = attn.lsh %qk, %v rotations(%r) buckets = 4 rounds = 1 chunk = 0 : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x8x2xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// lsh: rotations shape
func.func @f(%qk: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %r: tensor<2x8x4xf32>) {
  // expected-error @+1 {{rotations dimension 2 (buckets / 2) is 4, expected 2}}
  %o = attn.lsh %qk, %v rotations(%r) buckets = 4 rounds = 2 chunk = 8 : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<2x8x4xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// routing: centroid dim
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %c: tensor<4x16xf32>) {
  // expected-error @+1 {{centroids dimension 1 (head dim) is 16, expected 8}}
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 4 : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<4x16xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// routing: no clusters
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %c: tensor<0x8xf32>) {
  // expected-error @+1 {{centroids has a zero-size dimension: 'tensor<0x8xf32>'}}
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 4 : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<0x8xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// routing: zero top_k
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %c: tensor<4x8xf32>) {
  // expected-error @+1 {{top_k must be >= 1, got 0}}
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 0 : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<4x8xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// routing: top_k past the sequence
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %c: tensor<4x8xf32>) {
  // expected-error @+1 {{top_k (33) exceeds the sequence length}}
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 33 : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<4x8xf32>) -> tensor<1x2x32x8xf32>
  return
}

// -----

// fourier_mix: rank
func.func @f(%x: tensor<16x8xf32>) {
  // expected-error @+1 {{input must have rank 3 [B, L, Dm], got 'tensor<16x8xf32>'}}
  %o = attn.fourier_mix %x : tensor<16x8xf32> -> tensor<16x8xf32>
  return
}

// -----

// fourier_mix: result type
func.func @f(%x: tensor<1x16x8xf32>) {
  // expected-error @+1 {{result type must equal the input type}}
  %o = attn.fourier_mix %x : tensor<1x16x8xf32> -> tensor<1x16x8xf16>
  return
}

// -----

// rope: rank
func.func @f(%x: tensor<2x16x8xf32>) {
  // expected-error @+1 {{input must have rank 4 [B, H, L, D], got 'tensor<2x16x8xf32>'}}
  %o = attn.rope %x style = half : tensor<2x16x8xf32> -> tensor<2x16x8xf32>
  return
}

// -----

// rope: odd head dim
func.func @f(%x: tensor<1x2x16x7xf32>) {
  // expected-error @+1 {{head dim must be even, got 7}}
  %o = attn.rope %x style = half : tensor<1x2x16x7xf32> -> tensor<1x2x16x7xf32>
  return
}

// -----

// rope: base
func.func @f(%x: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{base must be finite and > 1}}
  %o = attn.rope %x style = half {base = 1.0 : f64} : tensor<1x2x16x8xf32> -> tensor<1x2x16x8xf32>
  return
}

// -----

// rope: result type
func.func @f(%x: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{result type must equal the input type}}
  %o = attn.rope %x style = half : tensor<1x2x16x8xf32> -> tensor<1x2x16x4xf32>
  return
}

// -----

// rope: positions length
func.func @f(%x: tensor<1x2x16x8xf32>, %p: tensor<15xi32>) {
  // expected-error @+1 {{positions dimension 0 (sequence length) is 15, expected 16}}
  %o = attn.rope %x positions(%p : tensor<15xi32>) style = interleaved : tensor<1x2x16x8xf32> -> tensor<1x2x16x8xf32>
  return
}

// -----

// rope: positions rank
func.func @f(%x: tensor<1x2x16x8xf32>, %p: tensor<1x1x16xi32>) {
  // expected-error @+1 {{positions must be [L] or [B, L], got 'tensor<1x1x16xi32>'}}
  %o = attn.rope %x positions(%p : tensor<1x1x16xi32>) style = interleaved : tensor<1x2x16x8xf32> -> tensor<1x2x16x8xf32>
  return
}

// -----

// attention: unknown alignment
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32> {
  // expected-error @+1 {{expected top_left or bottom_right, got 'sideways'}}
  %o = attn.attention %q, %k, %v align = sideways
      : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// -----

// rope: unknown pairing style
func.func @f(%x: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{expected interleaved or half, got 'neox'}}
  %o = attn.rope %x style = neox : tensor<1x2x16x8xf32> -> tensor<1x2x16x8xf32>
  return
}

// -----

// attention: zero-size head dim (verified IR never reaches a lowering that
// divides by it)
func.func @f(%q: tensor<1x1x16x0xf32>, %k: tensor<1x1x16x0xf32>, %v: tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32> {
  // expected-error @+1 {{query has a zero-size dimension: 'tensor<1x1x16x0xf32>'}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x1x16x0xf32>, tensor<1x1x16x0xf32>, tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}

// -----

// attention: sizes beyond 2^38 elements
func.func @f(%q: tensor<1x1x4611686018427387904x8xf32>, %k: tensor<1x1x16x8xf32>, %v: tensor<1x1x16x8xf32>) -> tensor<1x1x4611686018427387904x8xf32> {
  // expected-error @+1 {{query 'tensor<1x1x4611686018427387904x8xf32>' has more than 2^38 elements}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x1x4611686018427387904x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>) -> tensor<1x1x4611686018427387904x8xf32>
  return %o : tensor<1x1x4611686018427387904x8xf32>
}

// -----

// attention: more than 2^16 query heads
func.func @f(%q: tensor<1x70000x1x8xf32>, %k: tensor<1x1x16x8xf32>, %v: tensor<1x1x16x8xf32>) -> tensor<1x70000x1x8xf32> {
  // expected-error @+1 {{query heads (70000) must be at most 65536}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x70000x1x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>) -> tensor<1x70000x1x8xf32>
  return %o : tensor<1x70000x1x8xf32>
}

// -----

// attention: bias of another element type
func.func @f(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x16x8xf32>, %v: tensor<1x1x16x8xf32>, %b: tensor<1x1x16x16xf16>) -> tensor<1x1x16x8xf32> {
  // expected-error @+1 {{bias must have the query's element type 'f32', got 'f16'}}
  %o = attn.attention %q, %k, %v bias(%b)
      : (tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x16xf16>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}

// -----

// attention: rel_table of another element type
func.func @f(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %t: tensor<2x5xf64>) -> tensor<1x2x16x8xf32> {
  // expected-error @+1 {{rel_table must have the query's element type 'f32', got 'f64'}}
  %o = attn.attention %q, %k, %v rel_table(%t) mods = [#attn.shaw_bias<max_distance = 2>]
      : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<2x5xf64>) -> tensor<1x2x16x8xf32>
  return %o : tensor<1x2x16x8xf32>
}

// -----

// attention: two soft-caps
func.func @f(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x16x8xf32>, %v: tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32> {
  // expected-error @+1 {{at most one #attn.softcap mod is allowed}}
  %o = attn.attention %q, %k, %v mods = [#attn.softcap<cap = 30.0>, #attn.softcap<cap = 1.0e-30>]
      : (tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}

// -----

// attention: a stride past 2^40
func.func @f(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x16x8xf32>, %v: tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32> {
  // expected-error @+1 {{#attn.strided stride must be <= 2^40, got 4611686018427387904}}
  %o = attn.attention %q, %k, %v pattern(#attn.strided<stride = 4611686018427387904>)
      : (tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}

// -----

// attention: a global index past 2^40
func.func @f(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x?x8xf32>, %v: tensor<1x1x?x8xf32>) -> tensor<1x1x16x8xf32> {
  // expected-error @+1 {{#attn.global index must be <= 2^40, got 2199023255552}}
  %o = attn.attention %q, %k, %v pattern(#attn.global<[2199023255552]>)
      : (tensor<1x1x16x8xf32>, tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}

// -----

// attention: a T5 table of 2^40 buckets
func.func @f(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x16x8xf32>, %v: tensor<1x1x16x8xf32>, %t: tensor<1x4xf32>) -> tensor<1x1x16x8xf32> {
  // expected-error @+1 {{#attn.t5_bias buckets must be <= 2^16, got 1099511627776}}
  %o = attn.attention %q, %k, %v rel_table(%t) mods = [#attn.t5_bias<buckets = 1099511627776, max_distance = 2199023255552, bidirectional = true>]
      : (tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x4xf32>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}

// -----

// attention: a Shaw table past 2^16 columns
func.func @f(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x16x8xf32>, %v: tensor<1x1x16x8xf32>, %t: tensor<1x4xf32>) -> tensor<1x1x16x8xf32> {
  // expected-error @+1 {{#attn.shaw_bias max_distance must be <= 2^15 - 1, got 40000}}
  %o = attn.attention %q, %k, %v rel_table(%t) mods = [#attn.shaw_bias<max_distance = 40000>]
      : (tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x4xf32>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}

// -----

// attention: ALiBi with an infinite max_bias
func.func @f(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x16x8xf32>, %v: tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32> {
  // expected-error @+1 {{#attn.alibi max_bias must be a finite number > 0, got INF}}
  %o = attn.attention %q, %k, %v mods = [#attn.alibi<max_bias = 0x7FF0000000000000>]
      : (tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}

// -----

// linformer: zero-size projections (D = 0 is caught on the query first)
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %e: tensor<0x32xf32>) -> tensor<1x2x32x8xf32> {
  // expected-error @+1 {{e_proj has a zero-size dimension: 'tensor<0x32xf32>'}}
  %o = attn.linformer %q, %k, %v proj(%e, %e) : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<0x32xf32>, tensor<0x32xf32>) -> tensor<1x2x32x8xf32>
  return %o : tensor<1x2x32x8xf32>
}

// -----

// linformer: projections of another element type
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %e: tensor<4x32xbf16>) -> tensor<1x2x32x8xf32> {
  // expected-error @+1 {{e_proj must have the query's element type 'f32', got 'bf16'}}
  %o = attn.linformer %q, %k, %v proj(%e, %e) : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<4x32xbf16>, tensor<4x32xbf16>) -> tensor<1x2x32x8xf32>
  return %o : tensor<1x2x32x8xf32>
}

// -----

// kernelized: omega of another element type
func.func @f(%q: tensor<1x2x32x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %w: tensor<16x8xf16>) -> tensor<1x2x32x8xf32> {
  // expected-error @+1 {{omega must have the query's element type 'f32', got 'f16'}}
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor
      : (tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<16x8xf16>) -> tensor<1x2x32x8xf32>
  return %o : tensor<1x2x32x8xf32>
}

// -----

// lsh: rotations of another element type
func.func @f(%qk: tensor<1x4x256x64xf32>, %v: tensor<1x4x256x64xf32>, %r: tensor<2x64x4xf16>) -> tensor<1x4x256x64xf32> {
  // expected-error @+1 {{rotations must have the query's element type 'f32', got 'f16'}}
  %o = attn.lsh %qk, %v rotations(%r) buckets = 8 rounds = 2 chunk = 32
      : (tensor<1x4x256x64xf32>, tensor<1x4x256x64xf32>, tensor<2x64x4xf16>) -> tensor<1x4x256x64xf32>
  return %o : tensor<1x4x256x64xf32>
}

// -----

// routing: centroids of another element type
func.func @f(%q: tensor<1x4x256x64xf32>, %k: tensor<1x4x256x64xf32>, %v: tensor<1x4x256x64xf32>, %c: tensor<8x64xf64>) -> tensor<1x4x256x64xf32> {
  // expected-error @+1 {{centroids must have the query's element type 'f32', got 'f64'}}
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 16
      : (tensor<1x4x256x64xf32>, tensor<1x4x256x64xf32>, tensor<1x4x256x64xf32>, tensor<8x64xf64>) -> tensor<1x4x256x64xf32>
  return %o : tensor<1x4x256x64xf32>
}

// -----

// attention: a T5 distance table past 2^16 entries
func.func @f(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x16x8xf32>, %v: tensor<1x1x16x8xf32>, %t: tensor<1x32xf32>) -> tensor<1x1x16x8xf32> {
  // expected-error @+1 {{#attn.t5_bias max_distance must be <= 2^16, got 2199023255552}}
  %o = attn.attention %q, %k, %v rel_table(%t) mods = [#attn.t5_bias<buckets = 32, max_distance = 2199023255552, bidirectional = true>]
      : (tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x32xf32>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}

// -----

// online_attention: a key tile of 0
func.func @f(%q: tensor<1x1x16x8xf32>, %m: tensor<?xf32>, %l: tensor<?xf32>, %a: tensor<?x8xf32>, %i: index) {
  // expected-error @+1 {{query_tile and key_tile must be 1 to 4096}}
  %r:3 = attn.online_attention %q, %q, %q tile(%i, %i, %i) state(%m, %l, %a : tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>) query_tile = 16 key_tile = 0
      : tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>
  return
}

// -----

// online_attention: a query tile past 4096
func.func @f(%q: tensor<1x1x16x8xf32>, %m: tensor<?xf32>, %l: tensor<?xf32>, %a: tensor<?x8xf32>, %i: index) {
  // expected-error @+1 {{query_tile and key_tile must be 1 to 4096}}
  %r:3 = attn.online_attention %q, %q, %q tile(%i, %i, %i) state(%m, %l, %a : tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>) query_tile = 8192 key_tile = 16
      : tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>
  return
}

// -----

// online_attention: a negative period
func.func @f(%q: tensor<1x1x16x8xf32>, %m: tensor<?xf32>, %l: tensor<?xf32>, %a: tensor<?x8xf32>, %i: index) {
  // expected-error @+1 {{period must be 0 to 2^40}}
  %r:3 = attn.online_attention %q, %q, %q tile(%i, %i, %i) state(%m, %l, %a : tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>) query_tile = 16 period = -1 key_tile = 16
      : tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>
  return
}

// -----

// online_attention: a max state of rank 2
func.func @f(%q: tensor<1x1x16x8xf32>, %m: tensor<4x4xf32>, %l: tensor<?xf32>, %a: tensor<?x8xf32>, %i: index) {
  // expected-error @+1 {{max state must have rank 1 [rows], got 'tensor<4x4xf32>'}}
  %r:3 = attn.online_attention %q, %q, %q tile(%i, %i, %i) state(%m, %l, %a : tensor<4x4xf32>, tensor<?xf32>, tensor<?x8xf32>) query_tile = 16 key_tile = 16
      : tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>
  return
}

// -----

// online_attention: sum and max of different rows
func.func @f(%q: tensor<1x1x16x8xf32>, %m: tensor<4xf32>, %l: tensor<5xf32>, %a: tensor<4x8xf32>, %i: index) {
  // expected-error @+1 {{sum state dimension 0 (rows) is 5, expected 4}}
  %r:3 = attn.online_attention %q, %q, %q tile(%i, %i, %i) state(%m, %l, %a : tensor<4xf32>, tensor<5xf32>, tensor<4x8xf32>) query_tile = 16 key_tile = 16
      : tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>
  return
}

// -----

// online_attention: an accumulator narrower than V
func.func @f(%q: tensor<1x1x16x8xf32>, %m: tensor<4xf32>, %l: tensor<4xf32>, %a: tensor<4x4xf32>, %i: index) {
  // expected-error @+1 {{acc state dimension 1 (value head dim) is 4, expected 8}}
  %r:3 = attn.online_attention %q, %q, %q tile(%i, %i, %i) state(%m, %l, %a : tensor<4xf32>, tensor<4xf32>, tensor<4x4xf32>) query_tile = 16 key_tile = 16
      : tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>
  return
}

// -----

// online_attention: more state rows than the query tile
func.func @f(%q: tensor<1x1x16x8xf32>, %m: tensor<32xf32>, %l: tensor<32xf32>, %a: tensor<32x8xf32>, %i: index) {
  // expected-error @+1 {{state has 32 rows, more than query_tile (16)}}
  %r:3 = attn.online_attention %q, %q, %q tile(%i, %i, %i) state(%m, %l, %a : tensor<32xf32>, tensor<32xf32>, tensor<32x8xf32>) query_tile = 16 key_tile = 16
      : tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>
  return
}

// -----

// online_attention: the checks of attn.attention's operands apply
func.func @f(%q: tensor<1x1x16x8xf32>, %m: tensor<?xf32>, %l: tensor<?xf32>, %a: tensor<?x8xf32>, %i: index) {
  // expected-error @+1 {{pattern uses #attn.segments but no segments(q_ids, kv_ids) operands are given}}
  %r:3 = attn.online_attention %q, %q, %q tile(%i, %i, %i) state(%m, %l, %a : tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>) query_tile = 16 key_tile = 16 pattern(#attn.segments)
      : tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>
  return
}

// -----

// online_attention: a score region of the wrong signature
func.func @f(%q: tensor<1x1x16x8xf32>, %m: tensor<?xf32>, %l: tensor<?xf32>, %a: tensor<?x8xf32>, %i: index) {
  // expected-error @+1 {{score region must take (f32, index, index, index, index) for (score, b, h, i, j)}}
  %r:3 = attn.online_attention %q, %q, %q tile(%i, %i, %i) state(%m, %l, %a : tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>) query_tile = 16 key_tile = 16 score {
    ^bb0(%x: f32):
      attn.yield %x : f32
  } : tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>
  return
}

// -----

// finalize_tile: sum rows differ from acc rows
func.func @f(%a: tensor<4x8xf32>, %l: tensor<5xf32>) {
  // expected-error @+1 {{sum dimension 0 (rows) is 5, expected 4}}
  %o = attn.finalize_tile %a, %l : tensor<4x8xf32>, tensor<5xf32> -> tensor<4x8xf32>
  return
}

// -----

// finalize_tile: a result of another shape
func.func @f(%a: tensor<4x8xf32>, %l: tensor<4xf32>) {
  // expected-error @+1 {{result dimension 1 (value head dim) is 16, expected 8}}
  %o = attn.finalize_tile %a, %l : tensor<4x8xf32>, tensor<4xf32> -> tensor<4x16xf16>
  return
}

// -----

// finalize_tile: an accumulator of rank 3
func.func @f(%a: tensor<4x8x2xf32>, %l: tensor<4xf32>) {
  // expected-error @+1 {{acc must have rank 2 [rows, Dv], got 'tensor<4x8x2xf32>'}}
  %o = attn.finalize_tile %a, %l : tensor<4x8x2xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

// lse: a result of the wrong rank
func.func @f(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{lse must have rank 3 [B, Hq, Lq], got 'tensor<1x2x8x1xf32>'}}
  %o, %l = attn.attention %q, %k, %v : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x1xf32>)
  return
}

// -----

// lse: rows that are not the query rows
func.func @f(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{lse dimension 2 (query length) is 9, expected 8}}
  %o, %l = attn.attention %q, %k, %v : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x9xf32>)
  return
}

// -----

// lse: f32 only, whatever the element type
func.func @f(%q: tensor<1x2x8x16xf16>, %k: tensor<1x2x8x16xf16>, %v: tensor<1x2x8x16xf16>) {
  // expected-error @+1 {{result #1 must be ranked tensor of 32-bit float values}}
  %o, %l = attn.attention %q, %k, %v : (tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>) -> (tensor<1x2x8x16xf16>, tensor<1x2x8xf16>)
  return
}

// -----

// offsets: negative
func.func @f(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{query_offset and key_offset must be 0 to 2^40}}
  %o = attn.attention %q, %k, %v pattern(#attn.causal) query_offset = -8 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// offsets: with a bottom-right alignment
func.func @f(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{query_offset / key_offset need align = top_left}}
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right key_offset = 8 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// offsets: a pattern that reads absolute positions
func.func @f(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{query_offset / key_offset need a pattern that depends on j - i alone}}
  %o = attn.attention %q, %k, %v pattern(#attn.or<[#attn.causal, #attn.global<[0]>]>) query_offset = 8 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// offsets: with a score region (it sees local positions)
func.func @f(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{query_offset / key_offset cannot be combined with a score region}}
  %o = attn.attention %q, %k, %v query_offset = 8 score {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    attn.yield %x : f32
  } : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// paged_kv: pool rank
func.func @f(%pool: tensor<8x16x64xf32>, %table: tensor<1x4xi32>, %n: index) {
  // expected-error @+1 {{pool must have rank 4 [pages, H, P, D], got 'tensor<8x16x64xf32>'}}
  %k = attn.paged_kv %pool[%table] length %n : tensor<8x16x64xf32>, tensor<1x4xi32> -> tensor<1x2x?x64xf32>
  return
}

// -----

// paged_kv: table rank
func.func @f(%pool: tensor<8x2x16x64xf32>, %table: tensor<4xi32>, %n: index) {
  // expected-error @+1 {{table must have rank 2 [B, max_pages], got 'tensor<4xi32>'}}
  %k = attn.paged_kv %pool[%table] length %n : tensor<8x2x16x64xf32>, tensor<4xi32> -> tensor<1x2x?x64xf32>
  return
}

// -----

// paged_kv: result rank
func.func @f(%pool: tensor<8x2x16x64xf32>, %table: tensor<1x4xi32>, %n: index) {
  // expected-error @+1 {{result must have rank 4 [B, H, length, D], got 'tensor<2x?x64xf32>'}}
  %k = attn.paged_kv %pool[%table] length %n : tensor<8x2x16x64xf32>, tensor<1x4xi32> -> tensor<2x?x64xf32>
  return
}

// -----

// paged_kv: element type
func.func @f(%pool: tensor<8x2x16x64xf32>, %table: tensor<1x4xi32>, %n: index) {
  // expected-error @+1 {{result element type 'bf16' must be the pool's, 'f32'}}
  %k = attn.paged_kv %pool[%table] length %n : tensor<8x2x16x64xf32>, tensor<1x4xi32> -> tensor<1x2x?x64xbf16>
  return
}

// -----

// paged_kv: table entries
func.func @f(%pool: tensor<8x2x16x64xf32>, %table: tensor<1x4xi16>, %n: index) {
  // expected-error @+1 {{table entries must be i32 or i64, got 'i16'}}
  %k = attn.paged_kv %pool[%table] length %n : tensor<8x2x16x64xf32>, tensor<1x4xi16> -> tensor<1x2x?x64xf32>
  return
}

// -----

// paged_kv: dynamic page rows
func.func @f(%pool: tensor<8x2x?x64xf32>, %table: tensor<1x4xi32>, %n: index) {
  // expected-error @+1 {{the rows per page (pool dim 2) must be static and >= 1}}
  %k = attn.paged_kv %pool[%table] length %n : tensor<8x2x?x64xf32>, tensor<1x4xi32> -> tensor<1x2x?x64xf32>
  return
}

// -----

// paged_kv: batch
func.func @f(%pool: tensor<8x2x16x64xf32>, %table: tensor<3x4xi32>, %n: index) {
  // expected-error @+1 {{result dimension 0 (table's batch) is 1, expected 3}}
  %k = attn.paged_kv %pool[%table] length %n : tensor<8x2x16x64xf32>, tensor<3x4xi32> -> tensor<1x2x?x64xf32>
  return
}

// -----

// paged_kv: heads
func.func @f(%pool: tensor<8x2x16x64xf32>, %table: tensor<1x4xi32>, %n: index) {
  // expected-error @+1 {{result dimension 1 (pool's heads) is 4, expected 2}}
  %k = attn.paged_kv %pool[%table] length %n : tensor<8x2x16x64xf32>, tensor<1x4xi32> -> tensor<1x4x?x64xf32>
  return
}

// -----

// paged_kv: head dim
func.func @f(%pool: tensor<8x2x16x64xf32>, %table: tensor<1x4xi32>, %n: index) {
  // expected-error @+1 {{result dimension 3 (pool's head dim) is 32, expected 64}}
  %k = attn.paged_kv %pool[%table] length %n : tensor<8x2x16x64xf32>, tensor<1x4xi32> -> tensor<1x2x?x32xf32>
  return
}

// -----

// attention_grad: lse of the wrong query length
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %o: tensor<1x4x16x8xf32>, %lse: tensor<1x4x15xf32>) {
  // expected-error @+1 {{lse dimension 2 (query length) is 15, expected 16}}
  %dq, %dk, %dv = attn.attention_grad %q, %k, %v, %o, %o, %lse : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x15xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>)
  return
}

// -----

// attention_grad: output of the wrong shape
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %o: tensor<1x4x17x8xf32>, %lse: tensor<1x4x16xf32>) {
  // expected-error @+1 {{result dimension 2 (query length) is 17, expected 16}}
  %dq, %dk, %dv = attn.attention_grad %q, %k, %v, %o, %o, %lse : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x4x17x8xf32>, tensor<1x4x17x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>)
  return
}

// -----

// attention_grad: output gradient of another shape than the output
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %o: tensor<1x4x16x8xf32>, %do: tensor<1x4x16x4xf32>, %lse: tensor<1x4x16xf32>) {
  // expected-error @+1 {{all of {output, output_grad} have same type}}
  %dq, %dk, %dv = attn.attention_grad %q, %k, %v, %o, %do, %lse : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x4xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>)
  return
}

// -----

// attention_grad: a key gradient of another type than the key
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %o: tensor<1x4x16x8xf32>, %lse: tensor<1x4x16xf32>) {
  // expected-error @+1 {{all of {key, key_grad} have same type}}
  %dq, %dk, %dv = attn.attention_grad %q, %k, %v, %o, %o, %lse : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x32x8xf32>)
  return
}

// -----

// attention_grad: the score operands are checked as on attn.attention
func.func @f(%q: tensor<1x4x16x8xf32>, %k: tensor<1x2x32x8xf32>, %v: tensor<1x2x32x8xf32>, %o: tensor<1x4x16x8xf32>, %lse: tensor<1x4x16xf32>) {
  // expected-error @+1 {{mod #attn.t5_bias<buckets = 32, max_distance = 128, bidirectional = true> needs a rel_table(...) operand}}
  %dq, %dk, %dv = attn.attention_grad %q, %k, %v, %o, %o, %lse mods = [#attn.t5_bias<buckets = 32, max_distance = 128, bidirectional = true>] : (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>)
  return
}

// -----

// attention_grad: operand gradients without the operands
func.func @f(%q: tensor<1x4x16x8xf32>, %lse: tensor<1x4x16xf32>) {
  // expected-error @+1 {{has 1 operand gradients; expected none or 0 (one per bias and rel_table operand given and per float tensor the score region reads)}}
  %dq, %dk, %dv, %db = attn.attention_grad %q, %q, %q, %q, %q, %lse : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x16xf32>)
  return
}

// -----

// attention_grad: a score region's captured tensor counts among the operands
// whose gradients are returned (bias first, then the captured tensor).
func.func @f(%q: tensor<1x4x16x8xf32>, %lse: tensor<1x4x16xf32>, %b: tensor<1x1x16x16xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{has 1 operand gradients; expected none or 2}}
  %dq, %dk, %dv, %db = attn.attention_grad %q, %q, %q, %q, %q, %lse bias(%b) score {
    ^bb0(%x: f32, %bi: index, %h: index, %i: index, %j: index):
      %s = tensor.extract %w[%h] : tensor<4xf32>
      %y = arith.mulf %x, %s : f32
      attn.yield %y : f32
  } : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>, tensor<1x1x16x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x1x16x16xf32>)
  return
}

// -----

// attention_grad: a captured tensor's gradient has its type
func.func @f(%q: tensor<1x4x16x8xf32>, %lse: tensor<1x4x16xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{operand gradient of type 'tensor<8xf32>' must have its operand's type 'tensor<4xf32>'}}
  %dq, %dk, %dv, %dw = attn.attention_grad %q, %q, %q, %q, %q, %lse score {
    ^bb0(%x: f32, %bi: index, %h: index, %i: index, %j: index):
      %s = tensor.extract %w[%h] : tensor<4xf32>
      %y = arith.mulf %x, %s : f32
      attn.yield %y : f32
  } : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<8xf32>)
  return
}

// -----

// attention_grad: a bias gradient of another shape than the bias
func.func @f(%q: tensor<1x4x16x8xf32>, %lse: tensor<1x4x16xf32>, %b: tensor<1x1x16x16xf32>) {
  // expected-error @+1 {{operand gradient of type 'tensor<1x4x16x16xf32>' must have its operand's type 'tensor<1x1x16x16xf32>'}}
  %dq, %dk, %dv, %db = attn.attention_grad %q, %q, %q, %q, %q, %lse bias(%b) : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>, tensor<1x1x16x16xf32>) -> (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x16xf32>)
  return
}
