func.func @adaptive_span(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x97x40xf32>, %v: tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) mods = [#attn.adaptive_span<spans = [4.0, 16.0, 32.0, 64.0], ramp = 8.0>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}
