func.func @huge_logits(%q: tensor<1x2x97x64xf32>, %k: tensor<1x2x97x64xf32>, %v: tensor<1x2x97x64xf32>) -> tensor<1x2x97x64xf32> {
  %o = attn.attention %q, %k, %v scale = 100.0
      : (tensor<1x2x97x64xf32>, tensor<1x2x97x64xf32>, tensor<1x2x97x64xf32>) -> tensor<1x2x97x64xf32>
  return %o : tensor<1x2x97x64xf32>
}
