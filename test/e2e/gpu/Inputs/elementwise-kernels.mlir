// Element-wise generics for test/e2e/gpu/vulkan-elementwise.test and
// ptxas-budgets.test (GpuElementwiseKernel.cpp): RoPE from cosine and sine
// tables in both pairings (GPT-NeoX's halves: partner (d + D/2) mod D;
// GPT-J's neighbours: partner d + 1 - 2 (d mod 2), table column d floordiv
// 2), the second over more elements than the kernel's workgroups cover
// at once, and a row-broadcast with math ops.
#x = affine_map<(b, h, s, d) -> (b, h, s, d)>
#half = affine_map<(b, h, s, d) -> (b, h, s, (d + 4) mod 8)>
#half_table = affine_map<(b, h, s, d) -> (s, d mod 4)>
#pair = affine_map<(b, h, s, d) -> (b, h, s, d + 1 - (d mod 2) * 2)>
#pair_table = affine_map<(b, h, s, d) -> (s, d floordiv 2)>
func.func @rope_half(%x: tensor<2x3x5x8xf32>, %cos: tensor<5x4xf32>, %sin: tensor<5x4xf32>) -> tensor<2x3x5x8xf32> {
  %e = tensor.empty() : tensor<2x3x5x8xf32>
  %c4 = arith.constant 4 : index
  %y = linalg.generic {indexing_maps = [#x, #half, #half_table, #half_table, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %x, %cos, %sin : tensor<2x3x5x8xf32>, tensor<2x3x5x8xf32>, tensor<5x4xf32>, tensor<5x4xf32>) outs(%e : tensor<2x3x5x8xf32>) {
  ^bb0(%a: f32, %partner: f32, %c: f32, %s: f32, %out: f32):
    %d = linalg.index 3 : index
    %first = arith.cmpi ult, %d, %c4 : index
    %ps = arith.mulf %partner, %s : f32
    %neg = arith.negf %ps : f32
    %rot = arith.select %first, %neg, %ps : f32
    %ac = arith.mulf %a, %c : f32
    %r = arith.addf %ac, %rot : f32
    linalg.yield %r : f32
  } -> tensor<2x3x5x8xf32>
  return %y : tensor<2x3x5x8xf32>
}
#x64 = affine_map<(b, h, s, d) -> (b, h, s, d)>
#pair64 = affine_map<(b, h, s, d) -> (b, h, s, d + 1 - (d mod 2) * 2)>
#pair_table64 = affine_map<(b, h, s, d) -> (s, d floordiv 2)>
func.func @rope_interleaved(%x: tensor<1x8x2100x64xf32>, %cos: tensor<2100x32xf32>, %sin: tensor<2100x32xf32>) -> tensor<1x8x2100x64xf32> {
  %e = tensor.empty() : tensor<1x8x2100x64xf32>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %y = linalg.generic {indexing_maps = [#x64, #pair64, #pair_table64, #pair_table64, #x64], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %x, %cos, %sin : tensor<1x8x2100x64xf32>, tensor<1x8x2100x64xf32>, tensor<2100x32xf32>, tensor<2100x32xf32>) outs(%e : tensor<1x8x2100x64xf32>) {
  ^bb0(%a: f32, %partner: f32, %c: f32, %s: f32, %out: f32):
    %d = linalg.index 3 : index
    %odd = arith.remui %d, %c2 : index
    %first = arith.cmpi eq, %odd, %c0 : index
    %ps = arith.mulf %partner, %s : f32
    %neg = arith.negf %ps : f32
    %rot = arith.select %first, %neg, %ps : f32
    %ac = arith.mulf %a, %c : f32
    %r = arith.addf %ac, %rot : f32
    linalg.yield %r : f32
  } -> tensor<1x8x2100x64xf32>
  return %y : tensor<1x8x2100x64xf32>
}
func.func @row_math(%x: tensor<7x33xf32>, %row: tensor<33xf32>) -> tensor<7x33xf32> {
  %e = tensor.empty() : tensor<7x33xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %row : tensor<7x33xf32>, tensor<33xf32>) outs(%e : tensor<7x33xf32>) {
  ^bb0(%a: f32, %r: f32, %out: f32):
    %t = math.tanh %a : f32
    %m = arith.mulf %t, %r : f32
    %x2 = math.exp %m : f32
    linalg.yield %x2 : f32
  } -> tensor<7x33xf32>
  return %y : tensor<7x33xf32>
}
