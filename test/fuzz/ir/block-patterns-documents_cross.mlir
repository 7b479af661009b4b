func.func @documents_cross(%q: tensor<1x2x37x40xf32>, %k: tensor<1x2x100x40xf32>,
                           %v: tensor<1x2x100x40xf32>, %qi: tensor<1x37xi64>,
                           %ki: tensor<1x100xi32>) -> tensor<1x2x37x40xf32> {
  %o = attn.attention %q, %k, %v segments(%qi, %ki) pattern(#attn.segments)
      : (tensor<1x2x37x40xf32>, tensor<1x2x100x40xf32>, tensor<1x2x100x40xf32>,
         tensor<1x37xi64>, tensor<1x100xi32>) -> tensor<1x2x37x40xf32>
  return %o : tensor<1x2x37x40xf32>
}
