// Longformer (Beltagy et al.): a sliding window of 256 on each side plus
// global attention at the [CLS] token and two question tokens.
func.func @longformer(%q: tensor<1x12x4096x64xf32>, %k: tensor<1x12x4096x64xf32>,
                      %v: tensor<1x12x4096x64xf32>) -> tensor<1x12x4096x64xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.or<[#attn.window<left = 256, right = 256>,
                        #attn.global<[0, 1, 2]>]>)
      : (tensor<1x12x4096x64xf32>, tensor<1x12x4096x64xf32>,
         tensor<1x12x4096x64xf32>) -> tensor<1x12x4096x64xf32>
  return %o : tensor<1x12x4096x64xf32>
}
