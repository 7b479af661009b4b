// Shapes for the tensor-core kernel's register and shared-memory budgets
// (ptxas-budgets.test): head dims 64, 128 and 256, f16 and bf16, dense and
// causal, and a GQA decoding step (split keys).
func.func @f16_d64(%q: tensor<1x8x1024x64xf16>, %k: tensor<1x8x1024x64xf16>,
                   %v: tensor<1x8x1024x64xf16>) -> tensor<1x8x1024x64xf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x8x1024x64xf16>, tensor<1x8x1024x64xf16>, tensor<1x8x1024x64xf16>)
      -> tensor<1x8x1024x64xf16>
  return %o : tensor<1x8x1024x64xf16>
}

func.func @bf16_d64_causal(%q: tensor<1x8x1024x64xbf16>, %k: tensor<1x8x1024x64xbf16>,
                           %v: tensor<1x8x1024x64xbf16>) -> tensor<1x8x1024x64xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x8x1024x64xbf16>, tensor<1x8x1024x64xbf16>, tensor<1x8x1024x64xbf16>)
      -> tensor<1x8x1024x64xbf16>
  return %o : tensor<1x8x1024x64xbf16>
}

func.func @f16_d128_causal(%q: tensor<1x8x1024x128xf16>, %k: tensor<1x8x1024x128xf16>,
                           %v: tensor<1x8x1024x128xf16>) -> tensor<1x8x1024x128xf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x8x1024x128xf16>, tensor<1x8x1024x128xf16>, tensor<1x8x1024x128xf16>)
      -> tensor<1x8x1024x128xf16>
  return %o : tensor<1x8x1024x128xf16>
}

func.func @bf16_d128(%q: tensor<1x8x1024x128xbf16>, %k: tensor<1x8x1024x128xbf16>,
                     %v: tensor<1x8x1024x128xbf16>) -> tensor<1x8x1024x128xbf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x8x1024x128xbf16>, tensor<1x8x1024x128xbf16>, tensor<1x8x1024x128xbf16>)
      -> tensor<1x8x1024x128xbf16>
  return %o : tensor<1x8x1024x128xbf16>
}

func.func @f16_d256(%q: tensor<1x8x1024x256xf16>, %k: tensor<1x8x1024x256xf16>,
                    %v: tensor<1x8x1024x256xf16>) -> tensor<1x8x1024x256xf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x8x1024x256xf16>, tensor<1x8x1024x256xf16>, tensor<1x8x1024x256xf16>)
      -> tensor<1x8x1024x256xf16>
  return %o : tensor<1x8x1024x256xf16>
}

func.func @bf16_d256_causal(%q: tensor<1x8x1024x256xbf16>, %k: tensor<1x8x1024x256xbf16>,
                            %v: tensor<1x8x1024x256xbf16>) -> tensor<1x8x1024x256xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x8x1024x256xbf16>, tensor<1x8x1024x256xbf16>, tensor<1x8x1024x256xbf16>)
      -> tensor<1x8x1024x256xbf16>
  return %o : tensor<1x8x1024x256xbf16>
}

func.func @f16_decode_gqa(%q: tensor<1x8x1x128xf16>, %k: tensor<1x2x4096x128xf16>,
                          %v: tensor<1x2x4096x128xf16>) -> tensor<1x8x1x128xf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x8x1x128xf16>, tensor<1x2x4096x128xf16>, tensor<1x2x4096x128xf16>)
      -> tensor<1x8x1x128xf16>
  return %o : tensor<1x8x1x128xf16>
}
