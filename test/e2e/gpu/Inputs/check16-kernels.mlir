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
// Products for its linear_mM_kK_nN check (GpuLinearKernel.cpp): the
// skinny form (5 rows) and the tiled one (70 rows), K and N past tiles.
func.func @linear_m5_k300_n70(%x: tensor<5x300xf32>, %w: tensor<70x300xf32>) -> tensor<5x70xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x70xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<5x70xf32>) -> tensor<5x70xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<5x300xf32>, tensor<70x300xf32>) outs(%f : tensor<5x70xf32>) -> tensor<5x70xf32>
  return %y : tensor<5x70xf32>
}
func.func @linear_m70_k300_n70(%x: tensor<70x300xf32>, %w: tensor<70x300xf32>) -> tensor<70x70xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<70x70xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<70x70xf32>) -> tensor<70x70xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<70x300xf32>, tensor<70x300xf32>) outs(%f : tensor<70x70xf32>) -> tensor<70x70xf32>
  return %y : tensor<70x70xf32>
}
