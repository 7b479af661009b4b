// Functions of one attn.attention_grad each, for the GPU backward's PTX
// tests (backward-ptx.test, ptxas.test): f32 causal GQA at D = 64, f16
// bottom-right causal with a soft-cap at D = 128, bf16 document masks.
func.func @causal_gqa(%q: tensor<1x4x97x64xf32>, %k: tensor<1x2x97x64xf32>, %v: tensor<1x2x97x64xf32>,
                      %o: tensor<1x4x97x64xf32>, %do: tensor<1x4x97x64xf32>, %lse: tensor<1x4x97xf32>)
    -> (tensor<1x4x97x64xf32>, tensor<1x2x97x64xf32>, tensor<1x2x97x64xf32>) {
  %dq, %dk, %dv = attn.attention_grad %q, %k, %v, %o, %do, %lse pattern(#attn.causal)
      : (tensor<1x4x97x64xf32>, tensor<1x2x97x64xf32>, tensor<1x2x97x64xf32>, tensor<1x4x97x64xf32>, tensor<1x4x97x64xf32>, tensor<1x4x97xf32>)
      -> (tensor<1x4x97x64xf32>, tensor<1x2x97x64xf32>, tensor<1x2x97x64xf32>)
  return %dq, %dk, %dv : tensor<1x4x97x64xf32>, tensor<1x2x97x64xf32>, tensor<1x2x97x64xf32>
}

func.func @f16_softcap_d128(%q: tensor<1x2x37x128xf16>, %k: tensor<1x2x150x128xf16>, %v: tensor<1x2x150x128xf16>,
                            %o: tensor<1x2x37x128xf16>, %do: tensor<1x2x37x128xf16>, %lse: tensor<1x2x37xf32>)
    -> (tensor<1x2x37x128xf16>, tensor<1x2x150x128xf16>, tensor<1x2x150x128xf16>) {
  %dq, %dk, %dv = attn.attention_grad %q, %k, %v, %o, %do, %lse pattern(#attn.causal) align = bottom_right mods = [#attn.softcap<cap = 20.0>]
      : (tensor<1x2x37x128xf16>, tensor<1x2x150x128xf16>, tensor<1x2x150x128xf16>, tensor<1x2x37x128xf16>, tensor<1x2x37x128xf16>, tensor<1x2x37xf32>)
      -> (tensor<1x2x37x128xf16>, tensor<1x2x150x128xf16>, tensor<1x2x150x128xf16>)
  return %dq, %dk, %dv : tensor<1x2x37x128xf16>, tensor<1x2x150x128xf16>, tensor<1x2x150x128xf16>
}

func.func @bf16_documents(%q: tensor<1x2x97x40xbf16>, %k: tensor<1x2x97x40xbf16>, %v: tensor<1x2x97x40xbf16>,
                          %o: tensor<1x2x97x40xbf16>, %do: tensor<1x2x97x40xbf16>, %lse: tensor<1x2x97xf32>,
                          %qi: tensor<1x97xi32>, %ki: tensor<1x97xi32>)
    -> (tensor<1x2x97x40xbf16>, tensor<1x2x97x40xbf16>, tensor<1x2x97x40xbf16>) {
  %dq, %dk, %dv = attn.attention_grad %q, %k, %v, %o, %do, %lse segments(%qi, %ki) pattern(#attn.and<[#attn.segments, #attn.causal]>)
      : (tensor<1x2x97x40xbf16>, tensor<1x2x97x40xbf16>, tensor<1x2x97x40xbf16>, tensor<1x2x97x40xbf16>, tensor<1x2x97x40xbf16>, tensor<1x2x97xf32>, tensor<1x97xi32>, tensor<1x97xi32>)
      -> (tensor<1x2x97x40xbf16>, tensor<1x2x97x40xbf16>, tensor<1x2x97x40xbf16>)
  return %dq, %dk, %dv : tensor<1x2x97x40xbf16>, tensor<1x2x97x40xbf16>, tensor<1x2x97x40xbf16>
}
