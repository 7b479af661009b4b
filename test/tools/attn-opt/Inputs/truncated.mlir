func.func @f(%q: tensor<1x1x8x64xf32>) -> tensor<1x1x8x64xf32> {
  %o = attn.attention %q, %q, %q pattern(#attn.window<left = 3,
