// Kernels for gpu-device-buffers.test. Each output has the query's shape,
// so one call's output can be the next call's query.

// GQA 2:1, causal bottom-right: 4 heads of one 33-row query tile leave
// most workgroups idle, so the 700 keys are split over workgroups and a
// merge kernel combines their partial results (on the device).
func.func @gqa_split(%q: tensor<1x4x33x32xf32>, %k: tensor<1x2x700x32xf32>,
                     %v: tensor<1x2x700x32xf32>) -> tensor<1x4x33x32xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x4x33x32xf32>, tensor<1x2x700x32xf32>, tensor<1x2x700x32xf32>)
      -> tensor<1x4x33x32xf32>
  return %o : tensor<1x4x33x32xf32>
}
