func.func @softcap_bias(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x32x8xf32>, %v: tensor<1x1x32x8xf32>, %bias: tensor<1x1x16x32xf32>) -> tensor<1x1x16x8xf32> {
  %o = attn.attention %q, %k, %v bias(%bias) mods = [#attn.softcap<cap = 5.0>]
      : (tensor<1x1x16x8xf32>, tensor<1x1x32x8xf32>, tensor<1x1x32x8xf32>, tensor<1x1x16x32xf32>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}
