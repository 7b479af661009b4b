func.func @alibi_causal(%q: tensor<1x6x97x40xf32>, %k: tensor<1x6x97x40xf32>, %v: tensor<1x6x97x40xf32>) -> tensor<1x6x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) mods = [#attn.alibi<max_bias = 8.0>]
      : (tensor<1x6x97x40xf32>, tensor<1x6x97x40xf32>, tensor<1x6x97x40xf32>) -> tensor<1x6x97x40xf32>
  return %o : tensor<1x6x97x40xf32>
}
