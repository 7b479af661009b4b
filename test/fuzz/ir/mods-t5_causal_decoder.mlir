func.func @t5_causal_decoder(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x200x40xf32>, %v: tensor<1x4x200x40xf32>, %t: tensor<4x16xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v rel_table(%t) pattern(#attn.causal) align = bottom_right mods = [#attn.t5_bias<buckets = 16, max_distance = 40, bidirectional = false>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x200x40xf32>, tensor<1x4x200x40xf32>, tensor<4x16xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}
