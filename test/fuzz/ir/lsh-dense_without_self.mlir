func.func @dense_without_self(%q: tensor<1x2x97x40xf32>,
                              %k: tensor<1x2x97x40xf32>,
                              %v: tensor<1x2x97x40xf32>)
    -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v score {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %self = arith.cmpi eq, %i, %j : index
      %ninf = arith.constant 0xFF800000 : f32
      %y = arith.select %self, %ninf, %x : f32
      attn.yield %y : f32
  } : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
    -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
