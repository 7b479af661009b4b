// Packed sequences: causal attention that never crosses document borders
// (segment ids are run-time operands), with T5 relative-position buckets.
func.func @packed(%q: tensor<2x8x512x64xf32>, %k: tensor<2x8x512x64xf32>,
                  %v: tensor<2x8x512x64xf32>, %docs: tensor<2x512xi32>,
                  %t5: tensor<8x32xf32>) -> tensor<2x8x512x64xf32> {
  %o = attn.attention %q, %k, %v segments(%docs, %docs) rel_table(%t5)
      pattern(#attn.and<[#attn.causal, #attn.segments]>)
      mods = [#attn.t5_bias<buckets = 32, max_distance = 128,
                            bidirectional = false>]
      : (tensor<2x8x512x64xf32>, tensor<2x8x512x64xf32>,
         tensor<2x8x512x64xf32>, tensor<2x512xi32>, tensor<2x512xi32>,
         tensor<8x32xf32>) -> tensor<2x8x512x64xf32>
  return %o : tensor<2x8x512x64xf32>
}
