func.func @favor_gqa(%q: tensor<1x4x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                     %v: tensor<1x2x97x40xf32>, %w: tensor<32x40xf32>)
    -> tensor<1x4x97x40xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor
      : (tensor<1x4x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>,
         tensor<32x40xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}
