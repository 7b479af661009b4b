func.func @mqa(%q: tensor<1x4x97x64xf32>, %k: tensor<1x1x97x64xf32>, %v: tensor<1x1x97x64xf32>) -> tensor<1x4x97x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x97x64xf32>, tensor<1x1x97x64xf32>, tensor<1x1x97x64xf32>) -> tensor<1x4x97x64xf32>
  return %o : tensor<1x4x97x64xf32>
}
