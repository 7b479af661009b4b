// What attn-lower-attention-grad cannot differentiate, refused at the op.
// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-lower-attention-grad

func.func @weight(%q: tensor<1x1x8x8xf32>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x8xf32> {
  // expected-error @+1 {{attn-lower-attention-grad: #attn.distance_weight (not additive) has no backward yet}}
  %dq, %dk, %dv = attn.attention_grad %q, %q, %q, %q, %q, %lse mods = [#attn.distance_weight<weights = [0.5], threshold = 1.0>]
      : (tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8xf32>) -> (tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>)
  return %dq : tensor<1x1x8x8xf32>
}

// -----

func.func @region(%q: tensor<1x1x8x8xf32>, %lse: tensor<1x1x8xf32>) -> tensor<1x1x8x8xf32> {
  // A score region is differentiated op by op: one without a rule is named.
  // expected-error @+1 {{attn-lower-attention-grad: the score region's 'math.erf' has no backward yet}}
  %dq, %dk, %dv = attn.attention_grad %q, %q, %q, %q, %q, %lse score {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %y = math.erf %x : f32
      attn.yield %y : f32
  } : (tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8xf32>) -> (tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>)
  return %dq : tensor<1x1x8x8xf32>
}

// -----

func.func @dynamic_bias(%q: tensor<1x1x8x8xf32>, %lse: tensor<1x1x8xf32>, %b: tensor<?x1x8x8xf32>) -> tensor<?x1x8x8xf32> {
  // expected-error @+1 {{attn-lower-attention-grad: the bias gradient needs the bias's batch, head and query dimensions static}}
  %dq, %dk, %dv, %db = attn.attention_grad %q, %q, %q, %q, %q, %lse bias(%b)
      : (tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8xf32>, tensor<?x1x8x8xf32>) -> (tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>, tensor<?x1x8x8xf32>)
  return %db : tensor<?x1x8x8xf32>
}
