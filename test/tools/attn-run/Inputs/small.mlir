func.func @small(%q: tensor<1x1x8x16xf32>, %k: tensor<1x1x8x16xf32>,
                 %v: tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
      -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}
