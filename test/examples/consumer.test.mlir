// Input of consumer.test.
func.func @low_rank(%q: tensor<1x2x64x16xf32>, %e: tensor<8x64xf32>)
    -> tensor<1x2x64x16xf32> {
  %o = attn.linformer %q, %q, %q proj(%e, %e)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>,
         tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}
