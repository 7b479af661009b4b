func.func @bias_per_head(%q: tensor<1x4x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                         %v: tensor<1x2x97x40xf32>, %b: tensor<1x4x97x97xf32>)
    -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v bias(%b)
      : (tensor<1x4x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>,
         tensor<1x4x97x97xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}
