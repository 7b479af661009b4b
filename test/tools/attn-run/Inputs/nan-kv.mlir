// Plain attention [1, 1, 8, 16] for inputs planted with NaN
// (test/layers/poisoned-weights.test).
func.func @plain(%q: tensor<1x1x8x16xf32>, %k: tensor<1x1x8x16xf32>, %v: tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32> {
  %o = attn.attention %q, %k, %v : (tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}
