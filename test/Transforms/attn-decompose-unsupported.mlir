// What the decompositions do not handle is reported at the op, not dropped.
// RUN: attn-opt %s --split-input-file --attn-decompose-linformer --attn-decompose-nystrom --attn-decompose-kernelized --attn-decompose-lsh --attn-decompose-routing --attn-fourier-mix-to-call --verify-diagnostics -o /dev/null

func.func @linformer_f16(%q: tensor<1x1x8x16xf16>, %e: tensor<4x8xf16>)
    -> tensor<1x1x8x16xf16> {
  // expected-error @+1 {{attn-decompose-linformer handles f32 only for now, got 'f16'}}
  %o = attn.linformer %q, %q, %q proj(%e, %e)
      : (tensor<1x1x8x16xf16>, tensor<1x1x8x16xf16>, tensor<1x1x8x16xf16>,
         tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<1x1x8x16xf16>
  return %o : tensor<1x1x8x16xf16>
}

// -----

func.func @nystrom_f64(%q: tensor<1x1x8x16xf64>) -> tensor<1x1x8x16xf64> {
  // expected-error @+1 {{attn-decompose-nystrom handles f32 only for now, got 'f64'}}
  %o = attn.nystrom %q, %q, %q landmarks = 2
      : (tensor<1x1x8x16xf64>, tensor<1x1x8x16xf64>, tensor<1x1x8x16xf64>)
      -> tensor<1x1x8x16xf64>
  return %o : tensor<1x1x8x16xf64>
}

// -----

func.func @nystrom_dynamic(%q: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  // expected-error @+1 {{attn-decompose-nystrom needs static shapes}}
  %o = attn.nystrom %q, %q, %q landmarks = 2
      : (tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      -> tensor<1x1x?x16xf32>
  return %o : tensor<1x1x?x16xf32>
}

// -----

func.func @kernelized_bf16(%q: tensor<1x1x8x16xbf16>) -> tensor<1x1x8x16xbf16> {
  // expected-error @+1 {{attn-decompose-kernelized handles f32 only for now, got 'bf16'}}
  %o = attn.kernelized %q, %q, %q feature_map = relu
      : (tensor<1x1x8x16xbf16>, tensor<1x1x8x16xbf16>, tensor<1x1x8x16xbf16>)
      -> tensor<1x1x8x16xbf16>
  return %o : tensor<1x1x8x16xbf16>
}

// -----

func.func @kernelized_dynamic(%q: tensor<?x1x8x16xf32>) -> tensor<?x1x8x16xf32> {
  // expected-error @+1 {{attn-decompose-kernelized needs static shapes}}
  %o = attn.kernelized %q, %q, %q feature_map = elu_plus_one causal
      : (tensor<?x1x8x16xf32>, tensor<?x1x8x16xf32>, tensor<?x1x8x16xf32>)
      -> tensor<?x1x8x16xf32>
  return %o : tensor<?x1x8x16xf32>
}

// -----

func.func @fourier_mix_f16(%x: tensor<1x8x16xf16>) -> tensor<1x8x16xf16> {
  // expected-error @+1 {{attn-fourier-mix-to-call handles f32 only for now, got 'f16'}}
  %y = attn.fourier_mix %x : tensor<1x8x16xf16> -> tensor<1x8x16xf16>
  return %y : tensor<1x8x16xf16>
}

// -----

func.func @lsh_f16(%qk: tensor<1x1x8x16xf16>, %r: tensor<1x16x2xf16>)
    -> tensor<1x1x8x16xf16> {
  // expected-error @+1 {{attn-decompose-lsh handles f32 only for now, got 'f16'}}
  %o = attn.lsh %qk, %qk rotations(%r) buckets = 4 rounds = 1 chunk = 4
      : (tensor<1x1x8x16xf16>, tensor<1x1x8x16xf16>, tensor<1x16x2xf16>)
      -> tensor<1x1x8x16xf16>
  return %o : tensor<1x1x8x16xf16>
}

// -----

func.func @lsh_dynamic(%qk: tensor<1x1x?x16xf32>, %r: tensor<1x16x2xf32>)
    -> tensor<1x1x?x16xf32> {
  // expected-error @+1 {{attn-decompose-lsh needs static shapes}}
  %o = attn.lsh %qk, %qk rotations(%r) buckets = 4 rounds = 1 chunk = 4
      : (tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x16x2xf32>)
      -> tensor<1x1x?x16xf32>
  return %o : tensor<1x1x?x16xf32>
}

// -----

func.func @routing_bf16(%q: tensor<1x1x8x16xbf16>, %c: tensor<2x16xbf16>)
    -> tensor<1x1x8x16xbf16> {
  // expected-error @+1 {{attn-decompose-routing handles f32 only for now, got 'bf16'}}
  %o = attn.routing %q, %q, %q centroids(%c) top_k = 3
      : (tensor<1x1x8x16xbf16>, tensor<1x1x8x16xbf16>, tensor<1x1x8x16xbf16>,
         tensor<2x16xbf16>) -> tensor<1x1x8x16xbf16>
  return %o : tensor<1x1x8x16xbf16>
}

// -----

func.func @routing_dynamic(%q: tensor<1x1x?x16xf32>, %c: tensor<2x16xf32>)
    -> tensor<1x1x?x16xf32> {
  // expected-error @+1 {{attn-decompose-routing needs static shapes}}
  %o = attn.routing %q, %q, %q centroids(%c) top_k = 3
      : (tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>,
         tensor<2x16xf32>) -> tensor<1x1x?x16xf32>
  return %o : tensor<1x1x?x16xf32>
}
