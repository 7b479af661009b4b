func.func @one_cluster(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                       %v: tensor<1x2x97x40xf32>, %c: tensor<1x40xf32>)
    -> tensor<1x2x97x40xf32> {
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 97
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>,
         tensor<1x40xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
