func.func @cache(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x100x64xf32>, %v: tensor<1x2x100x64xf32>) -> tensor<1x2x4x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 100, right = 86>)
      : (tensor<1x2x4x64xf32>, tensor<1x2x100x64xf32>, tensor<1x2x100x64xf32>) -> tensor<1x2x4x64xf32>
  return %o : tensor<1x2x4x64xf32>
}
