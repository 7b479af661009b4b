// Paged KV caches read in place by the GPU kernels, the length at run
// time (element 0 of a [1] i32 operand, the layer runtime's kv_length): a
// pool of 24 pages of 16 rows per head (2 KV heads, D = 64), a table of 20
// pages (capacity 320). vulkan-paged.test.

func.func @decode(%q: tensor<1x8x1x64xf32>, %kp: tensor<24x2x16x64xf32>, %vp: tensor<24x2x16x64xf32>, %table: tensor<1x20xi32>, %length: tensor<1xi32>) -> tensor<1x8x1x64xf32> {
  %c0 = arith.constant 0 : index
  %e = tensor.extract %length[%c0] : tensor<1xi32>
  %n = arith.index_cast %e : i32 to index
  %k = attn.paged_kv %kp[%table] length %n : tensor<24x2x16x64xf32>, tensor<1x20xi32> -> tensor<1x2x?x64xf32>
  %v = attn.paged_kv %vp[%table] length %n : tensor<24x2x16x64xf32>, tensor<1x20xi32> -> tensor<1x2x?x64xf32>
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x1x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>) -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

func.func @chunk_window(%q: tensor<1x8x20x64xf32>, %kp: tensor<24x2x16x64xf32>, %vp: tensor<24x2x16x64xf32>, %table: tensor<1x20xi32>, %length: tensor<1xi32>) -> tensor<1x8x20x64xf32> {
  %c0 = arith.constant 0 : index
  %e = tensor.extract %length[%c0] : tensor<1xi32>
  %n = arith.index_cast %e : i32 to index
  %k = attn.paged_kv %kp[%table] length %n : tensor<24x2x16x64xf32>, tensor<1x20xi32> -> tensor<1x2x?x64xf32>
  %v = attn.paged_kv %vp[%table] length %n : tensor<24x2x16x64xf32>, tensor<1x20xi32> -> tensor<1x2x?x64xf32>
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 30, right = 0>) align = bottom_right
      : (tensor<1x8x20x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>) -> tensor<1x8x20x64xf32>
  return %o : tensor<1x8x20x64xf32>
}

func.func @decode_f16(%q: tensor<1x8x1x64xf16>, %kp: tensor<24x2x16x64xf16>, %vp: tensor<24x2x16x64xf16>, %table: tensor<1x20xi32>, %length: tensor<1xi32>) -> tensor<1x8x1x64xf16> {
  %c0 = arith.constant 0 : index
  %e = tensor.extract %length[%c0] : tensor<1xi32>
  %n = arith.index_cast %e : i32 to index
  %k = attn.paged_kv %kp[%table] length %n : tensor<24x2x16x64xf16>, tensor<1x20xi32> -> tensor<1x2x?x64xf16>
  %v = attn.paged_kv %vp[%table] length %n : tensor<24x2x16x64xf16>, tensor<1x20xi32> -> tensor<1x2x?x64xf16>
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x1x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>) -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

func.func @chunk_window_f16(%q: tensor<1x8x20x64xf16>, %kp: tensor<24x2x16x64xf16>, %vp: tensor<24x2x16x64xf16>, %table: tensor<1x20xi32>, %length: tensor<1xi32>) -> tensor<1x8x20x64xf16> {
  %c0 = arith.constant 0 : index
  %e = tensor.extract %length[%c0] : tensor<1xi32>
  %n = arith.index_cast %e : i32 to index
  %k = attn.paged_kv %kp[%table] length %n : tensor<24x2x16x64xf16>, tensor<1x20xi32> -> tensor<1x2x?x64xf16>
  %v = attn.paged_kv %vp[%table] length %n : tensor<24x2x16x64xf16>, tensor<1x20xi32> -> tensor<1x2x?x64xf16>
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 30, right = 0>) align = bottom_right
      : (tensor<1x8x20x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>) -> tensor<1x8x20x64xf16>
  return %o : tensor<1x8x20x64xf16>
}
