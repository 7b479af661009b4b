// Plain multi-head self-attention (BERT-base shapes), scale 1/sqrt(64).
func.func @dense(%q: tensor<1x12x512x64xf32>, %k: tensor<1x12x512x64xf32>,
                 %v: tensor<1x12x512x64xf32>) -> tensor<1x12x512x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x12x512x64xf32>, tensor<1x12x512x64xf32>,
         tensor<1x12x512x64xf32>) -> tensor<1x12x512x64xf32>
  return %o : tensor<1x12x512x64xf32>
}
