func.func @softcap(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x97x40xf32>, %v: tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v mods = [#attn.softcap<cap = 2.0>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}
