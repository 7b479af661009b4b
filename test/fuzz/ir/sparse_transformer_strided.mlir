// Sparse Transformer (Child et al.), strided pattern with l = 64: each query
// sees the previous 64 positions and every 64th position before it.
func.func @strided(%q: tensor<1x8x4096x64xf32>, %k: tensor<1x8x4096x64xf32>,
                   %v: tensor<1x8x4096x64xf32>) -> tensor<1x8x4096x64xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.and<[#attn.causal,
                         #attn.or<[#attn.window<left = 63, right = 0>,
                                   #attn.strided<stride = 64>]>]>)
      : (tensor<1x8x4096x64xf32>, tensor<1x8x4096x64xf32>,
         tensor<1x8x4096x64xf32>) -> tensor<1x8x4096x64xf32>
  return %o : tensor<1x8x4096x64xf32>
}

// The fixed pattern with l = 128, c = 8 summary positions per block.
func.func @fixed(%q: tensor<1x8x4096x64xf32>, %k: tensor<1x8x4096x64xf32>,
                 %v: tensor<1x8x4096x64xf32>) -> tensor<1x8x4096x64xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.and<[#attn.causal, #attn.fixed<stride = 128, summary = 8>]>)
      : (tensor<1x8x4096x64xf32>, tensor<1x8x4096x64xf32>,
         tensor<1x8x4096x64xf32>) -> tensor<1x8x4096x64xf32>
  return %o : tensor<1x8x4096x64xf32>
}
