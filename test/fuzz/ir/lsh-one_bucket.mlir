func.func @one_bucket(%qk: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>,
                      %r: tensor<3x40x2xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.lsh %qk, %v rotations(%r) buckets = 4 rounds = 3 chunk = 128
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<3x40x2xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
