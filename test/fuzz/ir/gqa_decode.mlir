// One decoding step of a GQA model (32 query heads, 8 KV heads) against a
// KV cache of dynamic length, with a sliding window of 4096 (Mistral).
func.func @decode(%q: tensor<1x32x1x128xf16>, %k: tensor<1x8x?x128xf16>,
                  %v: tensor<1x8x?x128xf16>) -> tensor<1x32x1x128xf16> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.and<[#attn.causal, #attn.window<left = 4095, right = 0>]>)
      align = bottom_right
      : (tensor<1x32x1x128xf16>, tensor<1x8x?x128xf16>, tensor<1x8x?x128xf16>)
      -> tensor<1x32x1x128xf16>
  return %o : tensor<1x32x1x128xf16>
}
