// Kernels for gpu-check16 (Inputs/gpu-check16.c): TYPE_dD_nN[_causal] on
// [1, 2, N, D]; the odd lengths leave short last tiles.
func.func @f16_d64_n131_causal(%q: tensor<1x2x131x64xf16>, %k: tensor<1x2x131x64xf16>,
                               %v: tensor<1x2x131x64xf16>) -> tensor<1x2x131x64xf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x131x64xf16>, tensor<1x2x131x64xf16>, tensor<1x2x131x64xf16>)
      -> tensor<1x2x131x64xf16>
  return %o : tensor<1x2x131x64xf16>
}

func.func @bf16_d128_n97(%q: tensor<1x2x97x128xbf16>, %k: tensor<1x2x97x128xbf16>,
                         %v: tensor<1x2x97x128xbf16>) -> tensor<1x2x97x128xbf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x97x128xbf16>, tensor<1x2x97x128xbf16>, tensor<1x2x97x128xbf16>)
      -> tensor<1x2x97x128xbf16>
  return %o : tensor<1x2x97x128xbf16>
}

// Named causal but computed dense: the checker must fail it.
func.func @f16_d64_n70_causal(%q: tensor<1x2x70x64xf16>, %k: tensor<1x2x70x64xf16>,
                              %v: tensor<1x2x70x64xf16>) -> tensor<1x2x70x64xf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x70x64xf16>, tensor<1x2x70x64xf16>, tensor<1x2x70x64xf16>)
      -> tensor<1x2x70x64xf16>
  return %o : tensor<1x2x70x64xf16>
}

func.func @f32_d72_n53(%q: tensor<1x2x53x72xf32>, %k: tensor<1x2x53x72xf32>,
                       %v: tensor<1x2x53x72xf32>) -> tensor<1x2x53x72xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x53x72xf32>, tensor<1x2x53x72xf32>, tensor<1x2x53x72xf32>)
      -> tensor<1x2x53x72xf32>
  return %o : tensor<1x2x53x72xf32>
}
