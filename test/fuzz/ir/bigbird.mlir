// BigBird (Zaheer et al.) with blocks of 16: a sliding window spanning about
// three blocks, two global blocks (tokens 0..31, which attend to and are
// attended by everything) and three random key blocks per query block,
// drawn reproducibly from the seed.
func.func @bigbird(%q: tensor<1x12x1024x64xf32>, %k: tensor<1x12x1024x64xf32>,
                   %v: tensor<1x12x1024x64xf32>) -> tensor<1x12x1024x64xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.or<[
        #attn.window<left = 24, right = 24>,
        #attn.global<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]>,
        #attn.random_blocks<block = 16, count = 3, seed = 2020>]>)
      : (tensor<1x12x1024x64xf32>, tensor<1x12x1024x64xf32>,
         tensor<1x12x1024x64xf32>) -> tensor<1x12x1024x64xf32>
  return %o : tensor<1x12x1024x64xf32>
}
