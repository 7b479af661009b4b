func.func @typed(%q: tensor<1x1x8x16xf32>, %k: tensor<1x1x8x16xf32>,
                 %v: tensor<1x1x8x16xf32>, %mask: tensor<1x1x8x8xi1>,
                 %qs: tensor<1x8xi32>, %ks: tensor<1x8xi32>) -> tensor<1x1x8x16xf32> {
  %o = attn.attention %q, %k, %v mask(%mask) segments(%qs, %ks)
      pattern(#attn.segments)
      : (tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>,
         tensor<1x1x8x8xi1>, tensor<1x8xi32>, tensor<1x8xi32>)
      -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}
