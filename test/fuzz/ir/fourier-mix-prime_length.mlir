func.func @prime_length(%x: tensor<1x97x64xf32>) -> tensor<1x97x64xf32> {
  %y = attn.fourier_mix %x : tensor<1x97x64xf32> -> tensor<1x97x64xf32>
  return %y : tensor<1x97x64xf32>
}
