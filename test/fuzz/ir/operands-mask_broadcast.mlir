func.func @mask_broadcast(%q: tensor<2x2x97x64xf32>, %k: tensor<2x2x100x64xf32>,
                          %v: tensor<2x2x100x64xf32>, %m: tensor<1x1x97x100xi1>)
    -> tensor<2x2x97x64xf32> {
  %o = attn.attention %q, %k, %v mask(%m)
      : (tensor<2x2x97x64xf32>, tensor<2x2x100x64xf32>, tensor<2x2x100x64xf32>,
         tensor<1x1x97x100xi1>) -> tensor<2x2x97x64xf32>
  return %o : tensor<2x2x97x64xf32>
}
