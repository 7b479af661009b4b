func.func @region(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                  %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) score {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %half = arith.constant 0.5 : f32
      %y = arith.mulf %x, %half : f32
      attn.yield %y : f32
  } : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
    -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
