// Decoding shapes: few queries against many keys. When the query heads of
// a key/value group times the queries fit one vector (16 lanes for AVX-512,
// 8 for AVX2), the CPU kernel packs them into its lanes and reads each key
// and value row once per group (test/Conversion/AttnToCpu/packed-heads.mlir
// pins the structure); otherwise the per-head kernel runs. Both vector
// widths and the generic lowering are checked against the f64 reference.
// Tolerance 1e-5 of the output's scale, as in causal.mlir: f32 dot products
// of <= 128 terms and <= 8 rescaled key tiles stay well under 1e-6
// relative error, while a lane given the wrong head or query position is
// off by order 1e-1.
// RUN: attn-run %s --entry=mqa_one_token --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=mqa_one_token --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=gqa_three_tokens --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=gqa_three_tokens --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=window_draft --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=window_draft --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=top_left_few --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=top_left_few --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=no_pattern --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=no_pattern --check --generic | FileCheck %s
// RUN: attn-run %s --entry=alibi_stays_per_head --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=mqa_split_keys --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=mqa_split_keys --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=split_empty_ranges --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=split_empty_ranges --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=gqa_odd_rows --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=gqa_odd_rows --check --target=cpu-avx2 | FileCheck %s
// A padding mask as a per-key bias shared by the heads keeps the packed
// kernel, alone and with split keys: -inf on slots whose values hold NaN
// (batched decoding with left padding), on both widths and the generic
// path.
// RUN: rm -rf %t && mkdir -p %t/g %t/s
// RUN: python3 %S/Inputs/plant-nonfinite.py --values-only %t/g 2 1 1 77 40 nan 0 1 2 3 50
// RUN: python3 %S/Inputs/make-key-bias.py %t/g/bias.npy 2 1 77 0 1 2 3 50
// RUN: attn-run %s --entry=padded_gqa --random-inputs --input k=%t/g/k.npy --input v=%t/g/v.npy --input bias=%t/g/bias.npy --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=padded_gqa --random-inputs --input k=%t/g/k.npy --input v=%t/g/v.npy --input bias=%t/g/bias.npy --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=padded_gqa --random-inputs --input k=%t/g/k.npy --input v=%t/g/v.npy --input bias=%t/g/bias.npy --check --generic | FileCheck %s
// RUN: python3 %S/Inputs/plant-nonfinite.py --values-only %t/s 1 1 1 3000 64 nan 0 1 2 3 4 5 6 7 8 9 2999
// RUN: python3 %S/Inputs/make-key-bias.py %t/s/bias.npy 1 1 3000 0 1 2 3 4 5 6 7 8 9 2999
// RUN: attn-run %s --entry=padded_mqa_split --input k=%t/s/k.npy --input v=%t/s/v.npy --input bias=%t/s/bias.npy --random-inputs --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=padded_mqa_split --input k=%t/s/k.npy --input v=%t/s/v.npy --input bias=%t/s/bias.npy --random-inputs --check --target=cpu-avx2 | FileCheck %s
// CHECK: check: {{.*}}: PASS

// MQA: 8 query heads on one key/value head, one token at the end of a
// 300-key cache (a partial last key tile).
func.func @mqa_one_token(%q: tensor<1x8x1x64xf32>, %k: tensor<1x1x300x64xf32>, %v: tensor<1x1x300x64xf32>) -> tensor<1x8x1x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x1x64xf32>, tensor<1x1x300x64xf32>, tensor<1x1x300x64xf32>) -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// GQA 2:1, three tokens (lanes g * 3 + i), batch 2, head dim 40: the
// causal tail masks differently per query lane.
func.func @gqa_three_tokens(%q: tensor<2x4x3x40xf32>, %k: tensor<2x2x77x40xf32>, %v: tensor<2x2x77x40xf32>) -> tensor<2x4x3x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<2x4x3x40xf32>, tensor<2x2x77x40xf32>, tensor<2x2x77x40xf32>) -> tensor<2x4x3x40xf32>
  return %o : tensor<2x4x3x40xf32>
}

// A sliding window over a 500-key cache, four draft tokens of four heads:
// 16 lanes (packed with AVX-512, per head with AVX2); most key tiles are
// empty and skipped.
func.func @window_draft(%q: tensor<1x4x4x32xf32>, %k: tensor<1x1x500x32xf32>, %v: tensor<1x1x500x32xf32>) -> tensor<1x4x4x32xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 40, right = 0>) align = bottom_right
      : (tensor<1x4x4x32xf32>, tensor<1x1x500x32xf32>, tensor<1x1x500x32xf32>) -> tensor<1x4x4x32xf32>
  return %o : tensor<1x4x4x32xf32>
}

// Top-left causal with few queries: query i sees keys 0..i only, and
// every key tile but the first is empty.
func.func @top_left_few(%q: tensor<1x6x2x16xf32>, %k: tensor<1x3x260x16xf32>, %v: tensor<1x3x260x16xf32>) -> tensor<1x6x2x16xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x6x2x16xf32>, tensor<1x3x260x16xf32>, tensor<1x3x260x16xf32>) -> tensor<1x6x2x16xf32>
  return %o : tensor<1x6x2x16xf32>
}

// No pattern, one head per group, five queries.
func.func @no_pattern(%q: tensor<1x2x5x128xf32>, %k: tensor<1x2x1000x128xf32>, %v: tensor<1x2x1000x128xf32>) -> tensor<1x2x5x128xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x5x128xf32>, tensor<1x2x1000x128xf32>, tensor<1x2x1000x128xf32>) -> tensor<1x2x5x128xf32>
  return %o : tensor<1x2x5x128xf32>
}

// Score mods that depend on the head (ALiBi slopes) keep the per-head
// kernel.
func.func @alibi_stays_per_head(%q: tensor<1x4x1x32xf32>, %k: tensor<1x2x150x32xf32>, %v: tensor<1x2x150x32xf32>) -> tensor<1x4x1x32xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      mods = [#attn.alibi<max_bias = 8.0>]
      : (tensor<1x4x1x32xf32>, tensor<1x2x150x32xf32>, tensor<1x2x150x32xf32>) -> tensor<1x4x1x32xf32>
  return %o : tensor<1x4x1x32xf32>
}

// One key/value head for two threads or more: the keys are split into
// ranges (at least 4 key tiles each) merged by their log-sum-exp weights.
func.func @mqa_split_keys(%q: tensor<1x4x1x64xf32>, %k: tensor<1x1x3000x64xf32>, %v: tensor<1x1x3000x64xf32>) -> tensor<1x4x1x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x4x1x64xf32>, tensor<1x1x3000x64xf32>, tensor<1x1x3000x64xf32>) -> tensor<1x4x1x64xf32>
  return %o : tensor<1x4x1x64xf32>
}

// Top-left causal over split keys: every range but the first keeps
// nothing (m = -inf) and must weigh 0 in the merge.
func.func @split_empty_ranges(%q: tensor<1x2x3x32xf32>, %k: tensor<1x1x2100x32xf32>, %v: tensor<1x1x2100x32xf32>) -> tensor<1x2x3x32xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x3x32xf32>, tensor<1x1x2100x32xf32>, tensor<1x1x2100x32xf32>) -> tensor<1x2x3x32xf32>
  return %o : tensor<1x2x3x32xf32>
}

// GQA 12:4 with a head dim of whole vectors: the scores are dot products
// along D (4 query rows x 4 or 2 keys per block, summed by a transposing
// shuffle tree); 3 rows leave a zero row in the block, 301 keys a partial
// block of keys that reduce one by one, D 48 is 3 zmm / 6 ymm.
func.func @gqa_odd_rows(%q: tensor<2x12x1x48xf32>, %k: tensor<2x4x301x48xf32>, %v: tensor<2x4x301x48xf32>) -> tensor<2x12x1x48xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<2x12x1x48xf32>, tensor<2x4x301x48xf32>, tensor<2x4x301x48xf32>) -> tensor<2x12x1x48xf32>
  return %o : tensor<2x12x1x48xf32>
}

// GQA 2:1, one token per batch row, each row's own padding (bias
// [2, 1, 1, 77]).
func.func @padded_gqa(%q: tensor<2x2x1x40xf32>, %k: tensor<2x1x77x40xf32>,
                      %v: tensor<2x1x77x40xf32>, %bias: tensor<2x1x1x77xf32>)
    -> tensor<2x2x1x40xf32> {
  %o = attn.attention %q, %k, %v bias(%bias)
      : (tensor<2x2x1x40xf32>, tensor<2x1x77x40xf32>, tensor<2x1x77x40xf32>,
         tensor<2x1x1x77xf32>) -> tensor<2x2x1x40xf32>
  return %o : tensor<2x2x1x40xf32>
}

// MQA with one group: its keys split over the threads, each range reading
// its own slice of the bias.
func.func @padded_mqa_split(%q: tensor<1x4x1x64xf32>, %k: tensor<1x1x3000x64xf32>,
                            %v: tensor<1x1x3000x64xf32>,
                            %bias: tensor<1x1x1x3000xf32>)
    -> tensor<1x4x1x64xf32> {
  %o = attn.attention %q, %k, %v bias(%bias)
      : (tensor<1x4x1x64xf32>, tensor<1x1x3000x64xf32>, tensor<1x1x3000x64xf32>,
         tensor<1x1x1x3000xf32>) -> tensor<1x4x1x64xf32>
  return %o : tensor<1x4x1x64xf32>
}
