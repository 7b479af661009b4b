func.func @f(%q: tensor<1x1x8x64xf32>) -> tensor<1x1x8x64xf32> {
  // A mask kind that does not exist.
  %o = attn.attention %q, %q, %q pattern(#attn.diagonal)
      : (tensor<1x1x8x64xf32>, tensor<1x1x8x64xf32>, tensor<1x1x8x64xf32>)
      -> tensor<1x1x8x64xf32>
  return %o : tensor<1x1x8x64xf32>
}
