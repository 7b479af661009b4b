func.func @block_layout_per_head(%q: tensor<1x2x40x32xf32>,
                                 %k: tensor<1x2x40x32xf32>,
                                 %v: tensor<1x2x40x32xf32>)
    -> tensor<1x2x40x32xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.block_layout<block = 16, layout = dense<
        [[[1, 0, 0], [0, 0, 0], [1, 1, 1]],
         [[0, 1, 0], [1, 1, 0], [0, 0, 1]]]> : tensor<2x3x3xi1>>)
      : (tensor<1x2x40x32xf32>, tensor<1x2x40x32xf32>, tensor<1x2x40x32xf32>)
      -> tensor<1x2x40x32xf32>
  return %o : tensor<1x2x40x32xf32>
}
