func.func @gqa(%q: tensor<1x4x97x40xf32>, %k: tensor<1x2x97x40xf32>,
               %v: tensor<1x2x97x40xf32>, %c: tensor<7x40xf32>)
    -> tensor<1x4x97x40xf32> {
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 20
      : (tensor<1x4x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>,
         tensor<7x40xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}
