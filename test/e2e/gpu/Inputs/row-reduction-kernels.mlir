// Row reductions for test/e2e/gpu/vulkan-row-reduction.test and
// ptxas-budgets.test (GpuRowReductionKernel.cpp): a post-norm block's
// residual sum and LayerNorm (rows of 771 columns: 6 passes of the 128
// invocations, the last one partial), an RMSNorm of bf16 rows of a 3-D
// tensor (40 columns: fewer than the invocations; 8220 rows, more than the
// kernel's 8192 workgroups, with one reduction: the end-of-row barrier),
// a softmax over 8200 rows (two reductions), and products and minima that
// start from a fill that is not their identity.
#rows = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#id1 = affine_map<(i) -> (i)>
func.func @residual_layer_norm(%x: tensor<6x771xf32>, %r: tensor<6x771xf32>, %w: tensor<771xf32>, %bias: tensor<771xf32>) -> tensor<6x771xf32> {
  %e = tensor.empty() : tensor<6x771xf32>
  %er = tensor.empty() : tensor<6xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<6xf32>) -> tensor<6xf32>
  %h = linalg.generic {indexing_maps = [#rows, #rows, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %r : tensor<6x771xf32>, tensor<6x771xf32>) outs(%e : tensor<6x771xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<6x771xf32>
  %sum = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h : tensor<6x771xf32>) outs(%acc : tensor<6xf32>) {
  ^bb0(%a: f32, %s: f32):
    %t = arith.addf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<6xf32>
  %mean = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%sum : tensor<6xf32>) outs(%er : tensor<6xf32>) {
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant 771.0 : f32
    %m = arith.divf %s, %n : f32
    linalg.yield %m : f32
  } -> tensor<6xf32>
  %squares = linalg.generic {indexing_maps = [#rows, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%h, %mean : tensor<6x771xf32>, tensor<6xf32>) outs(%acc : tensor<6xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32):
    %d = arith.subf %a, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %t = arith.addf %d2, %s : f32
    linalg.yield %t : f32
  } -> tensor<6xf32>
  %rstd = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%squares : tensor<6xf32>) outs(%er : tensor<6xf32>) {
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant 771.0 : f32
    %eps = arith.constant 1.0e-5 : f32
    %v = arith.divf %s, %n : f32
    %ve = arith.addf %v, %eps : f32
    %q = math.rsqrt %ve : f32
    linalg.yield %q : f32
  } -> tensor<6xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #row, #col, #col, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%h, %mean, %rstd, %w, %bias : tensor<6x771xf32>, tensor<6xf32>, tensor<6xf32>, tensor<771xf32>, tensor<771xf32>) outs(%e : tensor<6x771xf32>) {
  ^bb0(%a: f32, %m: f32, %q: f32, %g: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %n = arith.mulf %d, %q : f32
    %s = arith.mulf %n, %g : f32
    %t = arith.addf %s, %b : f32
    linalg.yield %t : f32
  } -> tensor<6x771xf32>
  return %y : tensor<6x771xf32>
}

#rows3 = affine_map<(b, s, d) -> (b, s, d)>
#row3 = affine_map<(b, s, d) -> (b, s)>
#col3 = affine_map<(b, s, d) -> (d)>
#id2 = affine_map<(b, s) -> (b, s)>
func.func @rms_norm_bf16(%x: tensor<3x2740x40xbf16>, %w: tensor<40xbf16>) -> tensor<3x2740x40xf32> {
  %e = tensor.empty() : tensor<3x2740x40xf32>
  %er = tensor.empty() : tensor<3x2740xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<3x2740xf32>) -> tensor<3x2740xf32>
  %squares = linalg.generic {indexing_maps = [#rows3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<3x2740x40xbf16>) outs(%acc : tensor<3x2740xf32>) {
  ^bb0(%a: bf16, %s: f32):
    %f = arith.extf %a : bf16 to f32
    %f2 = arith.mulf %f, %f : f32
    %t = arith.addf %s, %f2 : f32
    linalg.yield %t : f32
  } -> tensor<3x2740xf32>
  %scale = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%squares : tensor<3x2740xf32>) outs(%er : tensor<3x2740xf32>) {
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant 40.0 : f32
    %eps = arith.constant 1.0e-6 : f32
    %v = arith.divf %s, %n : f32
    %ve = arith.addf %v, %eps : f32
    %root = math.sqrt %ve : f32
    %one = arith.constant 1.0 : f32
    %q = arith.divf %one, %root : f32
    linalg.yield %q : f32
  } -> tensor<3x2740xf32>
  %y = linalg.generic {indexing_maps = [#rows3, #row3, #col3, #rows3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %scale, %w : tensor<3x2740x40xbf16>, tensor<3x2740xf32>, tensor<40xbf16>) outs(%e : tensor<3x2740x40xf32>) {
  ^bb0(%a: bf16, %q: f32, %g: bf16, %o: f32):
    %f = arith.extf %a : bf16 to f32
    %gf = arith.extf %g : bf16 to f32
    %n = arith.mulf %f, %q : f32
    %t = arith.mulf %n, %gf : f32
    linalg.yield %t : f32
  } -> tensor<3x2740x40xf32>
  return %y : tensor<3x2740x40xf32>
}

func.func @softmax(%x: tensor<8200x5xf32>) -> tensor<8200x5xf32> {
  %e = tensor.empty() : tensor<8200x5xf32>
  %er = tensor.empty() : tensor<8200xf32>
  %zero = arith.constant 0.0 : f32
  %low = arith.constant 0xFF800000 : f32
  %start = linalg.fill ins(%low : f32) outs(%er : tensor<8200xf32>) -> tensor<8200xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<8200xf32>) -> tensor<8200xf32>
  %max = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8200x5xf32>) outs(%start : tensor<8200xf32>) {
  ^bb0(%a: f32, %m: f32):
    %t = arith.maximumf %a, %m : f32
    linalg.yield %t : f32
  } -> tensor<8200xf32>
  %exps = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<8200x5xf32>, tensor<8200xf32>) outs(%e : tensor<8200x5xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %p = math.exp %d : f32
    linalg.yield %p : f32
  } -> tensor<8200x5xf32>
  %sum = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%exps : tensor<8200x5xf32>) outs(%acc : tensor<8200xf32>) {
  ^bb0(%p: f32, %s: f32):
    %t = arith.addf %p, %s : f32
    linalg.yield %t : f32
  } -> tensor<8200xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%exps, %sum : tensor<8200x5xf32>, tensor<8200xf32>) outs(%e : tensor<8200x5xf32>) {
  ^bb0(%p: f32, %s: f32, %o: f32):
    %t = arith.divf %p, %s : f32
    linalg.yield %t : f32
  } -> tensor<8200x5xf32>
  return %y : tensor<8200x5xf32>
}

// y = x * prod(x) (a product started from 2) + min(x) (started from 0.5).
func.func @product_and_minimum(%x: tensor<4x9xf32>) -> tensor<4x9xf32> {
  %e = tensor.empty() : tensor<4x9xf32>
  %er = tensor.empty() : tensor<4xf32>
  %two = arith.constant 2.0 : f32
  %half = arith.constant 0.5 : f32
  %p0 = linalg.fill ins(%two : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %m0 = linalg.fill ins(%half : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %prod = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x9xf32>) outs(%p0 : tensor<4xf32>) {
  ^bb0(%a: f32, %p: f32):
    %t = arith.mulf %a, %p : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %min = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x9xf32>) outs(%m0 : tensor<4xf32>) {
  ^bb0(%a: f32, %m: f32):
    %t = arith.minnumf %m, %a : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %prod, %min : tensor<4x9xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4x9xf32>) {
  ^bb0(%a: f32, %p: f32, %m: f32, %o: f32):
    %s = arith.mulf %a, %p : f32
    %t = arith.addf %s, %m : f32
    linalg.yield %t : f32
  } -> tensor<4x9xf32>
  return %y : tensor<4x9xf32>
}
