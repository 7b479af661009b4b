func.func @shaw(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x97x40xf32>, %v: tensor<1x4x97x40xf32>, %t: tensor<4x33xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v rel_table(%t) mods = [#attn.shaw_bias<max_distance = 16>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<4x33xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}
