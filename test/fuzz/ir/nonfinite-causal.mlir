func.func @causal(%q: tensor<1x2x333x40xf32>, %k: tensor<1x2x333x40xf32>, %v: tensor<1x2x333x40xf32>) -> tensor<1x2x333x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x333x40xf32>, tensor<1x2x333x40xf32>, tensor<1x2x333x40xf32>) -> tensor<1x2x333x40xf32>
  return %o : tensor<1x2x333x40xf32>
}
