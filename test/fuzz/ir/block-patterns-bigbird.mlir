func.func @bigbird(%q: tensor<1x4x97x64xf32>, %k: tensor<1x4x97x64xf32>,
                   %v: tensor<1x4x97x64xf32>) -> tensor<1x4x97x64xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.or<[#attn.window<left = 8, right = 8>, #attn.global<[0, 1]>,
                        #attn.random_blocks<block = 16, count = 2, seed = 7>]>)
      : (tensor<1x4x97x64xf32>, tensor<1x4x97x64xf32>, tensor<1x4x97x64xf32>)
      -> tensor<1x4x97x64xf32>
  return %o : tensor<1x4x97x64xf32>
}
