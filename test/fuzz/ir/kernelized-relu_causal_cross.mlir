func.func @relu_causal_cross(%q: tensor<1x3x97x40xf32>,
                             %k: tensor<1x1x100x40xf32>,
                             %v: tensor<1x1x100x40xf32>)
    -> tensor<1x3x97x40xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = relu causal
      : (tensor<1x3x97x40xf32>, tensor<1x1x100x40xf32>,
         tensor<1x1x100x40xf32>) -> tensor<1x3x97x40xf32>
  return %o : tensor<1x3x97x40xf32>
}
