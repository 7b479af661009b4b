func.func @documents(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>,
                     %qs: tensor<1x97xi32>, %ks: tensor<1x97xi32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v segments(%qs, %ks) pattern(#attn.segments)
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x97xi32>, tensor<1x97xi32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
