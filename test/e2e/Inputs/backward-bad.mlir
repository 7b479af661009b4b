// Inputs attn-run --backward refuses, each at its op (backward.mlir).
func.func @linformer(%q: tensor<1x2x32x16xf32>, %e: tensor<8x32xf32>) -> tensor<1x2x32x16xf32> {
  %o = attn.linformer %q, %q, %q proj(%e, %e)
      : (tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<1x2x32x16xf32>
  return %o : tensor<1x2x32x16xf32>
}

func.func @distance_weight(%q: tensor<1x2x32x16xf32>) -> tensor<1x2x32x16xf32> {
  %o = attn.attention %q, %q, %q mods = [#attn.distance_weight<weights = [0.5, 0.25], threshold = 1.0>]
      : (tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>) -> tensor<1x2x32x16xf32>
  return %o : tensor<1x2x32x16xf32>
}

func.func @score_region(%q: tensor<1x2x32x16xf32>) -> tensor<1x2x32x16xf32> {
  %o = attn.attention %q, %q, %q score {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %y = math.erf %x : f32
      attn.yield %y : f32
  } : (tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>) -> tensor<1x2x32x16xf32>
  return %o : tensor<1x2x32x16xf32>
}
