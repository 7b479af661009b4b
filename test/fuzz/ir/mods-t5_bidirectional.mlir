func.func @t5_bidirectional(%q: tensor<1x4x300x40xf32>, %k: tensor<1x4x300x40xf32>, %v: tensor<1x4x300x40xf32>, %t: tensor<4x32xf32>) -> tensor<1x4x300x40xf32> {
  %o = attn.attention %q, %k, %v rel_table(%t) mods = [#attn.t5_bias<buckets = 32, max_distance = 64, bidirectional = true>]
      : (tensor<1x4x300x40xf32>, tensor<1x4x300x40xf32>, tensor<1x4x300x40xf32>, tensor<4x32xf32>) -> tensor<1x4x300x40xf32>
  return %o : tensor<1x4x300x40xf32>
}
