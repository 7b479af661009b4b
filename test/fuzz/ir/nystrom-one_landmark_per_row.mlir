func.func @one_landmark_per_row(%q: tensor<1x2x97x40xf32>,
                                %k: tensor<1x2x97x40xf32>,
                                %v: tensor<1x2x97x40xf32>)
    -> tensor<1x2x97x40xf32> {
  %o = attn.nystrom %q, %k, %v landmarks = 97 {pinv_iterations = 20 : i64}
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
