// What the generic lowering of the tiled form does not handle yet is
// reported at the attention's location, not silently dropped.
// RUN: attn-opt %s --split-input-file --attn-tile="for-target=false" --attn-lower-online-attention --verify-diagnostics -o /dev/null

func.func @mods(%q: tensor<1x?x8x16xf32>) -> tensor<1x?x8x16xf32> {
  // expected-error @+1 {{score mods need a static number of query heads}}
  %o = attn.attention %q, %q, %q mods = [#attn.softcap<cap = 5.0>]
      : (tensor<1x?x8x16xf32>, tensor<1x?x8x16xf32>, tensor<1x?x8x16xf32>)
      -> tensor<1x?x8x16xf32>
  return %o : tensor<1x?x8x16xf32>
}

// -----

// Random blocks are drawn at compile time: they need static sizes.
func.func @random(%q: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  // expected-error @+1 {{random blocks need static lengths and head count}}
  %o = attn.attention %q, %q, %q
      pattern(#attn.random_blocks<block = 4, count = 1, seed = 0>)
      : (tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      -> tensor<1x1x?x16xf32>
  return %o : tensor<1x1x?x16xf32>
}
