func.func @distance_weight(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x97x40xf32>, %v: tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v mods = [#attn.distance_weight<weights = [0.5, 0.25, 0.125, 0.0625], threshold = 1.0>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}
