func.func @dynamic(%q: tensor<1x1x?x64xf32>) -> tensor<1x1x?x64xf32> {
  %o = attn.attention %q, %q, %q pattern(#attn.causal)
      : (tensor<1x1x?x64xf32>, tensor<1x1x?x64xf32>, tensor<1x1x?x64xf32>)
      -> tensor<1x1x?x64xf32>
  return %o : tensor<1x1x?x64xf32>
}
