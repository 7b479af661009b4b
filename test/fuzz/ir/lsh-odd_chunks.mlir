func.func @odd_chunks(%qk: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>,
                      %r: tensor<2x40x4xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.lsh %qk, %v rotations(%r) buckets = 8 rounds = 2 chunk = 16
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<2x40x4xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
