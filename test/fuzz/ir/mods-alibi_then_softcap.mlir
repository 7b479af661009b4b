func.func @alibi_then_softcap(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x97x40xf32>, %v: tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 40, right = 0>) mods = [#attn.alibi<max_bias = 8.0>, #attn.softcap<cap = 5.0>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}
