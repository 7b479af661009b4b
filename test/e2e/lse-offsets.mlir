// The lse result and query/key offsets of attn.attention (one block of a
// larger attention, as context-parallel ranks compute it) against the f64
// reference, which places query i and key j at query_offset + i and
// key_offset + j and returns log sum exp of each row's kept scores: on the
// vectorized CPU kernels (AVX2 and AVX-512 blockings) and the generic
// lowering. Tolerance 1e-5 of the output scale, as in dense.mlir; the lse
// (m + log l in f32, l a sum of <= Lk terms) is judged the same way, scaled
// by its largest magnitude, and rows that keep nothing must be -inf on both
// sides.
// RUN: attn-run %s --entry=window_block --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=window_block --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=window_block --check --generic | FileCheck %s
// RUN: attn-run %s --entry=causal_empty_rows --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=causal_empty_rows --check --generic | FileCheck %s
// RUN: attn-run %s --entry=alibi_t5_block --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=alibi_t5_block --check --generic | FileCheck %s
// RUN: attn-run %s --entry=segments_block --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=segments_block --check --generic | FileCheck %s
// RUN: attn-run %s --entry=gqa_decode_lse --check --target=cpu-avx512 | FileCheck %s
// An lse result cannot go to a GPU target yet: a located error.
// RUN: not attn-run %s --entry=window_block --device=vulkan 2>&1 | FileCheck %s --check-prefix=GPU
// CHECK: check: {{.*}}: PASS
// CHECK: check lse: {{.*}}: PASS
// GPU: lse-offsets.mlir:{{[0-9]+}}:{{[0-9]+}}: error: the lse result of attn.attention is not supported by target 'vulkan-lavapipe' yet (CPU targets only)

// Queries 100..196 against keys 70..199 under a window of 40 (a ring step
// of a sliding-window attention); GQA 4:2, D = 64, Dv = 48.
func.func @window_block(%q: tensor<2x4x97x64xf32>, %k: tensor<2x2x130x64xf32>,
                        %v: tensor<2x2x130x48xf32>)
    -> (tensor<2x4x97x48xf32>, tensor<2x4x97xf32>) {
  %o, %l = attn.attention %q, %k, %v
      pattern(#attn.window<left = 40, right = 0>) query_offset = 100 key_offset = 70
      : (tensor<2x4x97x64xf32>, tensor<2x2x130x64xf32>, tensor<2x2x130x48xf32>)
      -> (tensor<2x4x97x48xf32>, tensor<2x4x97xf32>)
  return %o, %l : tensor<2x4x97x48xf32>, tensor<2x4x97xf32>
}

// Keys 150..449 for queries 0..199, causal: rows 0..149 keep nothing
// (output 0, lse -inf).
func.func @causal_empty_rows(%q: tensor<1x2x200x64xf32>, %k: tensor<1x2x300x64xf32>,
                             %v: tensor<1x2x300x64xf32>)
    -> (tensor<1x2x200x64xf32>, tensor<1x2x200xf32>) {
  %o, %l = attn.attention %q, %k, %v pattern(#attn.causal) key_offset = 150
      : (tensor<1x2x200x64xf32>, tensor<1x2x300x64xf32>, tensor<1x2x300x64xf32>)
      -> (tensor<1x2x200x64xf32>, tensor<1x2x200xf32>)
  return %o, %l : tensor<1x2x200x64xf32>, tensor<1x2x200xf32>
}

// Distance-based mods see the global distance: ALiBi and a causal T5 bias.
func.func @alibi_t5_block(%q: tensor<1x4x64x32xf32>, %k: tensor<1x4x96x32xf32>,
                          %v: tensor<1x4x96x32xf32>, %rel_table: tensor<4x32xf32>)
    -> (tensor<1x4x64x32xf32>, tensor<1x4x64xf32>) {
  %o, %l = attn.attention %q, %k, %v rel_table(%rel_table) pattern(#attn.causal)
      query_offset = 256 key_offset = 192
      mods = [#attn.alibi<max_bias = 8.0>,
              #attn.t5_bias<buckets = 32, max_distance = 128, bidirectional = false>]
      : (tensor<1x4x64x32xf32>, tensor<1x4x96x32xf32>, tensor<1x4x96x32xf32>,
         tensor<4x32xf32>) -> (tensor<1x4x64x32xf32>, tensor<1x4x64xf32>)
  return %o, %l : tensor<1x4x64x32xf32>, tensor<1x4x64xf32>
}

// Document masks: ids are the block's own, positions global (causal).
func.func @segments_block(%q: tensor<1x2x100x64xf32>, %k: tensor<1x2x100x64xf32>,
                          %v: tensor<1x2x100x64xf32>, %q_segments: tensor<1x100xi32>,
                          %kv_segments: tensor<1x100xi32>)
    -> (tensor<1x2x100x64xf32>, tensor<1x2x100xf32>) {
  %o, %l = attn.attention %q, %k, %v segments(%q_segments, %kv_segments)
      pattern(#attn.and<[#attn.causal, #attn.segments]>) query_offset = 300 key_offset = 250
      : (tensor<1x2x100x64xf32>, tensor<1x2x100x64xf32>, tensor<1x2x100x64xf32>,
         tensor<1x100xi32>, tensor<1x100xi32>)
      -> (tensor<1x2x100x64xf32>, tensor<1x2x100xf32>)
  return %o, %l : tensor<1x2x100x64xf32>, tensor<1x2x100xf32>
}

// A decoding shape (one query, GQA 8:2) with lse: the per-tile kernel.
func.func @gqa_decode_lse(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x1000x64xf32>,
                          %v: tensor<1x2x1000x64xf32>)
    -> (tensor<1x8x1x64xf32>, tensor<1x8x1xf32>) {
  %o, %l = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x1x64xf32>, tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>)
      -> (tensor<1x8x1x64xf32>, tensor<1x8x1xf32>)
  return %o, %l : tensor<1x8x1x64xf32>, tensor<1x8x1xf32>
}
