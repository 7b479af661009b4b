// The non-softmax-sparse families on one set of shapes (L = 1024, D = 64).

// Linformer with k = 128 projected positions, shared E and F.
func.func @linformer(%q: tensor<1x12x1024x64xf32>, %k: tensor<1x12x1024x64xf32>,
                     %v: tensor<1x12x1024x64xf32>, %e: tensor<128x1024xf32>,
                     %f: tensor<128x1024xf32>) -> tensor<1x12x1024x64xf32> {
  %o = attn.linformer %q, %k, %v proj(%e, %f)
      : (tensor<1x12x1024x64xf32>, tensor<1x12x1024x64xf32>,
         tensor<1x12x1024x64xf32>, tensor<128x1024xf32>, tensor<128x1024xf32>)
      -> tensor<1x12x1024x64xf32>
  return %o : tensor<1x12x1024x64xf32>
}

// Nystromformer with 64 landmarks.
func.func @nystrom(%q: tensor<1x12x1024x64xf32>, %k: tensor<1x12x1024x64xf32>,
                   %v: tensor<1x12x1024x64xf32>) -> tensor<1x12x1024x64xf32> {
  %o = attn.nystrom %q, %k, %v landmarks = 64
      : (tensor<1x12x1024x64xf32>, tensor<1x12x1024x64xf32>,
         tensor<1x12x1024x64xf32>) -> tensor<1x12x1024x64xf32>
  return %o : tensor<1x12x1024x64xf32>
}

// Performer (FAVOR+, 256 random features), causal.
func.func @performer(%q: tensor<1x12x1024x64xf32>, %k: tensor<1x12x1024x64xf32>,
                     %v: tensor<1x12x1024x64xf32>, %w: tensor<256x64xf32>)
    -> tensor<1x12x1024x64xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor causal
      : (tensor<1x12x1024x64xf32>, tensor<1x12x1024x64xf32>,
         tensor<1x12x1024x64xf32>, tensor<256x64xf32>)
      -> tensor<1x12x1024x64xf32>
  return %o : tensor<1x12x1024x64xf32>
}

// Linear Transformer (elu + 1 features).
func.func @linear(%q: tensor<1x12x1024x64xf32>, %k: tensor<1x12x1024x64xf32>,
                  %v: tensor<1x12x1024x64xf32>) -> tensor<1x12x1024x64xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = elu_plus_one
      : (tensor<1x12x1024x64xf32>, tensor<1x12x1024x64xf32>,
         tensor<1x12x1024x64xf32>) -> tensor<1x12x1024x64xf32>
  return %o : tensor<1x12x1024x64xf32>
}

// Reformer: 4 hash rounds into 32 buckets, chunks of 64.
func.func @reformer(%qk: tensor<1x12x1024x64xf32>, %v: tensor<1x12x1024x64xf32>,
                    %r: tensor<4x64x16xf32>) -> tensor<1x12x1024x64xf32> {
  %o = attn.lsh %qk, %v rotations(%r) buckets = 32 rounds = 4 chunk = 64
      : (tensor<1x12x1024x64xf32>, tensor<1x12x1024x64xf32>,
         tensor<4x64x16xf32>) -> tensor<1x12x1024x64xf32>
  return %o : tensor<1x12x1024x64xf32>
}

// Routing Transformer: 32 clusters (about sqrt(L)) of 32 members.
func.func @routing(%q: tensor<1x12x1024x64xf32>, %k: tensor<1x12x1024x64xf32>,
                   %v: tensor<1x12x1024x64xf32>, %c: tensor<32x64xf32>)
    -> tensor<1x12x1024x64xf32> {
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 32
      : (tensor<1x12x1024x64xf32>, tensor<1x12x1024x64xf32>,
         tensor<1x12x1024x64xf32>, tensor<32x64xf32>)
      -> tensor<1x12x1024x64xf32>
  return %o : tensor<1x12x1024x64xf32>
}

// FNet token mixing on hidden states, and RoPE on queries.
func.func @fnet_and_rope(%x: tensor<1x1024x768xf32>, %q: tensor<1x12x1024x64xf32>)
    -> (tensor<1x1024x768xf32>, tensor<1x12x1024x64xf32>) {
  %y = attn.fourier_mix %x : tensor<1x1024x768xf32> -> tensor<1x1024x768xf32>
  %r = attn.rope %q style = half : tensor<1x12x1024x64xf32> -> tensor<1x12x1024x64xf32>
  return %y, %r : tensor<1x1024x768xf32>, tensor<1x12x1024x64xf32>
}
