func.func @gqa_97(%q: tensor<1x4x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                  %v: tensor<1x2x97x40xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.nystrom %q, %k, %v landmarks = 8
      : (tensor<1x4x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
      -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}
