func.func @fully_masked_rows(%q: tensor<1x2x97x64xf32>, %k: tensor<1x2x40x64xf32>, %v: tensor<1x2x40x64xf32>) -> tensor<1x2x97x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x2x97x64xf32>, tensor<1x2x40x64xf32>, tensor<1x2x40x64xf32>) -> tensor<1x2x97x64xf32>
  return %o : tensor<1x2x97x64xf32>
}
