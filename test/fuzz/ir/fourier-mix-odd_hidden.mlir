func.func @odd_hidden(%x: tensor<1x100x41xf32>) -> tensor<1x100x41xf32> {
  %y = attn.fourier_mix %x : tensor<1x100x41xf32> -> tensor<1x100x41xf32>
  return %y : tensor<1x100x41xf32>
}
