func.func @tiny_chunks_causal(%qk: tensor<1x1x97x40xf32>,
                              %v: tensor<1x1x97x40xf32>,
                              %r: tensor<2x40x32xf32>)
    -> tensor<1x1x97x40xf32> {
  %o = attn.lsh %qk, %v rotations(%r) buckets = 64 rounds = 2 chunk = 1
         causal
      : (tensor<1x1x97x40xf32>, tensor<1x1x97x40xf32>, tensor<2x40x32xf32>)
      -> tensor<1x1x97x40xf32>
  return %o : tensor<1x1x97x40xf32>
}
