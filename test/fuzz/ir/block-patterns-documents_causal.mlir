func.func @documents_causal(%q: tensor<2x2x97x40xf32>, %k: tensor<2x2x97x40xf32>,
                            %v: tensor<2x2x97x40xf32>, %ids: tensor<2x97xi32>)
    -> tensor<2x2x97x40xf32> {
  %o = attn.attention %q, %k, %v segments(%ids, %ids)
      pattern(#attn.and<[#attn.causal, #attn.segments]>)
      : (tensor<2x2x97x40xf32>, tensor<2x2x97x40xf32>, tensor<2x2x97x40xf32>,
         tensor<2x97xi32>, tensor<2x97xi32>) -> tensor<2x2x97x40xf32>
  return %o : tensor<2x2x97x40xf32>
}
