func.func @mask_bias_causal(%q: tensor<1x2x97x64xf32>, %k: tensor<1x2x97x64xf32>,
                            %v: tensor<1x2x97x64xf32>, %m: tensor<1x2x97x97xi1>,
                            %b: tensor<1x1x97x97xf32>) -> tensor<1x2x97x64xf32> {
  %o = attn.attention %q, %k, %v mask(%m) bias(%b) pattern(#attn.causal)
      : (tensor<1x2x97x64xf32>, tensor<1x2x97x64xf32>, tensor<1x2x97x64xf32>,
         tensor<1x2x97x97xi1>, tensor<1x1x97x97xf32>) -> tensor<1x2x97x64xf32>
  return %o : tensor<1x2x97x64xf32>
}
