// A paged KV cache of 6 pages of 16 rows per head (2 KV heads, D = 64),
// 77 rows over 5 pages: decoding (1 query, the packed-heads kernel) and a
// chunk of 20 queries (the per-query-tile kernel). paged-kv.test.
func.func @decode(%q: tensor<1x8x1x64xf32>, %kp: tensor<6x2x16x64xf32>, %vp: tensor<6x2x16x64xf32>, %table: tensor<1x5xi32>) -> tensor<1x8x1x64xf32> {
  %n = arith.constant 77 : index
  %k = attn.paged_kv %kp[%table] length %n : tensor<6x2x16x64xf32>, tensor<1x5xi32> -> tensor<1x2x?x64xf32>
  %v = attn.paged_kv %vp[%table] length %n : tensor<6x2x16x64xf32>, tensor<1x5xi32> -> tensor<1x2x?x64xf32>
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x1x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>) -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

func.func @chunk(%q: tensor<1x8x20x64xf32>, %kp: tensor<6x2x16x64xf32>, %vp: tensor<6x2x16x64xf32>, %table: tensor<1x5xi32>) -> tensor<1x8x20x64xf32> {
  %n = arith.constant 77 : index
  %k = attn.paged_kv %kp[%table] length %n : tensor<6x2x16x64xf32>, tensor<1x5xi32> -> tensor<1x2x?x64xf32>
  %v = attn.paged_kv %vp[%table] length %n : tensor<6x2x16x64xf32>, tensor<1x5xi32> -> tensor<1x2x?x64xf32>
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x20x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>) -> tensor<1x8x20x64xf32>
  return %o : tensor<1x8x20x64xf32>
}
