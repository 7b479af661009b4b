// aot-spec.yaml's attention with dynamic batch and lengths: the artifact's
// signature says the output is [q.0, 4, q.2, 40].
func.func @aot_dynamic(%q: tensor<?x4x?x40xf32>, %k: tensor<?x2x?x40xf32>, %v: tensor<?x2x?x40xf32>) -> tensor<?x4x?x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<?x4x?x40xf32>, tensor<?x2x?x40xf32>, tensor<?x2x?x40xf32>) -> tensor<?x4x?x40xf32>
  return %o : tensor<?x4x?x40xf32>
}
