func.func @len1(%q: tensor<1x2x1x64xf32>, %k: tensor<1x2x1x64xf32>, %v: tensor<1x2x1x64xf32>) -> tensor<1x2x1x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x1x64xf32>, tensor<1x2x1x64xf32>, tensor<1x2x1x64xf32>) -> tensor<1x2x1x64xf32>
  return %o : tensor<1x2x1x64xf32>
}
