// Products for test/e2e/gpu/vulkan-linear.test and ptxas-budgets.test
// (GpuLinearKernel.cpp): W [N, K] as a layer's weights are read, or [K, N];
// sizes that are whole tiles and sizes that are not (M, N and K each).
func.func @whole(%x: tensor<64x128xf32>, %w: tensor<192x128xf32>) -> tensor<64x192xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x192xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x192xf32>) -> tensor<64x192xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<64x128xf32>, tensor<192x128xf32>) outs(%f : tensor<64x192xf32>) -> tensor<64x192xf32>
  return %y : tensor<64x192xf32>
}
func.func @ragged(%x: tensor<130x50xf32>, %w: tensor<300x50xf32>) -> tensor<130x300xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<130x300xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<130x300xf32>) -> tensor<130x300xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<130x50xf32>, tensor<300x50xf32>) outs(%f : tensor<130x300xf32>) -> tensor<130x300xf32>
  return %y : tensor<130x300xf32>
}
func.func @decode(%x: tensor<3x64xf32>, %w: tensor<64x72xf32>) -> tensor<3x72xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x72xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x72xf32>) -> tensor<3x72xf32>
  %y = linalg.matmul ins(%x, %w : tensor<3x64xf32>, tensor<64x72xf32>) outs(%f : tensor<3x72xf32>) -> tensor<3x72xf32>
  return %y : tensor<3x72xf32>
}
func.func @one_row(%x: tensor<1x200xf32>, %w: tensor<100x200xf32>) -> tensor<1x100xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x100xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x100xf32>) -> tensor<1x100xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<1x200xf32>, tensor<100x200xf32>) outs(%f : tensor<1x100xf32>) -> tensor<1x100xf32>
  return %y : tensor<1x100xf32>
}
func.func @decode_bf16(%x: tensor<5x96xbf16>, %w: tensor<80x96xbf16>) -> tensor<5x80xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<5x80xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<5x80xbf16>) -> tensor<5x80xbf16>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<5x96xbf16>, tensor<80x96xbf16>) outs(%f : tensor<5x80xbf16>) -> tensor<5x80xbf16>
  return %y : tensor<5x80xbf16>
}
func.func @skinny_ragged(%x: tensor<7x50xf32>, %w: tensor<21x50xf32>) -> tensor<7x21xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7x21xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<7x21xf32>) -> tensor<7x21xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<7x50xf32>, tensor<21x50xf32>) outs(%f : tensor<7x21xf32>) -> tensor<7x21xf32>
  return %y : tensor<7x21xf32>
}
// The math a layer's epilogues use (GELU's exp, absf and copysign, its tanh
// form, SiLU's exp and division), on the product plus a bias [N], plus a
// residual [M, N]: y = copysign(exp(-|v|), v) + tanh(v) / 2 + v / (1 + exp(-v))
// + r with v = x W^T + b.
func.func @epilogue_math(%x: tensor<37x40xf32>, %w: tensor<24x40xf32>, %bias: tensor<24xf32>, %res: tensor<37x24xf32>) -> tensor<37x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37x24xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<37x24xf32>) -> tensor<37x24xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<37x40xf32>, tensor<24x40xf32>) outs(%f : tensor<37x24xf32>) -> tensor<37x24xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(m, n) -> (n)>, affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]}
       ins(%bias, %res : tensor<24xf32>, tensor<37x24xf32>) outs(%y : tensor<37x24xf32>) {
  ^bb0(%b: f32, %r: f32, %c: f32):
    %v = arith.addf %c, %b : f32
    %a = math.absf %v : f32
    %na = arith.negf %a : f32
    %ea = math.exp %na : f32
    %s = math.copysign %ea, %v : f32
    %t = math.tanh %v : f32
    %half = arith.constant 0.5 : f32
    %ht = arith.mulf %t, %half : f32
    %nv = arith.negf %v : f32
    %ev = math.exp %nv : f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %ev, %one : f32
    %silu = arith.divf %v, %den : f32
    %p = arith.addf %s, %ht : f32
    %q = arith.addf %p, %silu : f32
    %out = arith.addf %q, %r : f32
    linalg.yield %out : f32
  } -> tensor<37x24xf32>
  return %z : tensor<37x24xf32>
}
// f32 rows by a 16-bit layer's weights (widened as they are read).
func.func @weights_bf16(%x: tensor<5x96xf32>, %w: tensor<80x96xbf16>) -> tensor<5x80xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x80xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<5x80xf32>) -> tensor<5x80xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<5x96xf32>, tensor<80x96xbf16>) outs(%f : tensor<5x80xf32>) -> tensor<5x80xf32>
  return %y : tensor<5x80xf32>
}
