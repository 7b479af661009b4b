// D = 128 with Dv = 64: Q (32 KiB) and one stage of 32 keys (24 KiB) do
// not fit cuda-sm80's 48 KiB, so 3xTF32 leaves this to the scalar kernel
// (ptxas-budgets.test).
func.func @d128_v64(%q: tensor<1x1x100x128xf32>, %k: tensor<1x1x100x128xf32>,
                    %v: tensor<1x1x100x64xf32>) -> tensor<1x1x100x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x1x100x128xf32>, tensor<1x1x100x128xf32>, tensor<1x1x100x64xf32>)
      -> tensor<1x1x100x64xf32>
  return %o : tensor<1x1x100x64xf32>
}
