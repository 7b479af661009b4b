func.func @f(%q: tensor<1x1x8x64xf32>, %k: tensor<1x1x8x32xf32>) -> tensor<1x1x8x64xf32> {
  // K's head dim differs from Q's.
  %o = attn.attention %q, %k, %q
      : (tensor<1x1x8x64xf32>, tensor<1x1x8x32xf32>, tensor<1x1x8x64xf32>)
      -> tensor<1x1x8x64xf32>
  return %o : tensor<1x1x8x64xf32>
}
