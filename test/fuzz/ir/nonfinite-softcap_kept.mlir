func.func @softcap_kept(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x20x8xf32>, %v: tensor<1x1x20x8xf32>) -> tensor<1x1x16x8xf32> {
  %o = attn.attention %q, %k, %v mods = [#attn.softcap<cap = 5.0>]
      : (tensor<1x1x16x8xf32>, tensor<1x1x20x8xf32>, tensor<1x1x20x8xf32>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}
