func.func @bottom_right_decode(%q: tensor<1x4x1x64xf32>, %k: tensor<1x1x1000x64xf32>, %v: tensor<1x1x1000x64xf32>) -> tensor<1x4x1x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x4x1x64xf32>, tensor<1x1x1000x64xf32>, tensor<1x1x1000x64xf32>) -> tensor<1x4x1x64xf32>
  return %o : tensor<1x4x1x64xf32>
}
