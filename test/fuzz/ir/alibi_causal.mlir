// A causal decoder layer's attention with ALiBi positions (Press et al.) and
// Gemma-2-style soft-capping of the logits.
func.func @alibi(%q: tensor<1x12x2048x64xf32>, %k: tensor<1x12x2048x64xf32>,
                 %v: tensor<1x12x2048x64xf32>) -> tensor<1x12x2048x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      mods = [#attn.alibi<max_bias = 8.0>, #attn.softcap<cap = 50.0>]
      : (tensor<1x12x2048x64xf32>, tensor<1x12x2048x64xf32>,
         tensor<1x12x2048x64xf32>) -> tensor<1x12x2048x64xf32>
  return %o : tensor<1x12x2048x64xf32>
}
