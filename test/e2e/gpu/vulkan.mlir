// GPU kernels (attn-to-gpu-kernels, Vulkan target) run on the Vulkan
// device (lavapipe where there is no GPU) against the f64 reference.
// Tolerance 1e-5 of the output's scale, as for the CPU kernels
// (test/e2e/causal.mlir): f32 dot products of D <= 128 terms and one
// rescale per raised running max stay well under 1e-6 relative error;
// real bugs give errors of order 1e-2 or larger.
// REQUIRES: vulkan
// Mesa is not built with the sanitizers: its allocations would be reported
// as leaks in the sanitizer build (scripts/sanitize.sh).
// UNSUPPORTED: sanitize
// RUN: attn-run %s --device=vulkan --check --entry=dense_odd | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=causal_top_left | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=causal_bottom_right_cross | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=gqa_d128 | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=mqa_decode | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=cross_lengths | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=sliding_window | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=bigbird | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=block_layout_per_head | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=documents_causal | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=documents_cross | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=alibi_causal | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=softcap | FileCheck %s
// A score region that halves every logit (run on the GPU) against half the
// scale (on the CPU, checked): tolerance 1e-5, the two differ by the
// rounding of one multiply and by summation order.
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-run %s --device=vulkan --entry=region --output %t/region.npy
// RUN: attn-run %s --entry=halved --output %t/halved.npy --check | FileCheck %s
// RUN: python3 %S/../Inputs/compare-npy.py %t/region.npy %t/halved.npy 1e-5 | FileCheck %s --check-prefix=SAME
// SAME: max abs difference {{.*}}: SAME
// RUN: attn-run %s --device=vulkan --check --entry=fully_masked_rows | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=dense_mask_bias | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=key_bias | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=shaw | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=one_of_each | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=d256_dv100 | FileCheck %s
// RUN: attn-run %s --device=vulkan --check --entry=t5_causal_cross | FileCheck %s
// The generic Vulkan target (16 KiB of workgroup memory: 16-row key tiles
// at D = 128).
// RUN: attn-run %s --device=vulkan --gpu-target=vulkan-generic --check --entry=gqa_d128 | FileCheck %s
// CHECK: check: {{.*}}: PASS
// The key tiles the GPU workgroups visit (counted by the kernels) are
// exactly the tiles the pattern keeps something of (counted on the host
// from the reference mask).
// RUN: attn-run %s --device=vulkan --stats --entry=sliding_window | FileCheck %s --check-prefix=STATS
// RUN: attn-run %s --device=vulkan --stats --entry=bigbird | FileCheck %s --check-prefix=STATS
// RUN: attn-run %s --device=vulkan --stats --entry=causal_top_left | FileCheck %s --check-prefix=STATS
// STATS: stats: query tile 64, key tile {{[0-9]+}}: visited [[N:[0-9]+]] of
// STATS-NEXT: stats: key tiles the pattern keeps something of (reference): [[N]]{{$}}

// L = 97 (two query tiles, the second short), D = 40, batch 2.
func.func @dense_odd(%q: tensor<2x3x97x40xf32>, %k: tensor<2x3x97x40xf32>,
                     %v: tensor<2x3x97x40xf32>) -> tensor<2x3x97x40xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<2x3x97x40xf32>, tensor<2x3x97x40xf32>, tensor<2x3x97x40xf32>)
      -> tensor<2x3x97x40xf32>
  return %o : tensor<2x3x97x40xf32>
}

// L = 1025: a last query tile of one row and a last key tile of one key.
func.func @causal_top_left(%q: tensor<1x2x1025x64xf32>, %k: tensor<1x2x1025x64xf32>,
                           %v: tensor<1x2x1025x64xf32>) -> tensor<1x2x1025x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>)
      -> tensor<1x2x1025x64xf32>
  return %o : tensor<1x2x1025x64xf32>
}

// Lq != Lk, bottom-right causal, GQA 4:1, D = 80.
func.func @causal_bottom_right_cross(%q: tensor<1x8x97x80xf32>, %k: tensor<1x2x1025x80xf32>,
                                     %v: tensor<1x2x1025x80xf32>) -> tensor<1x8x97x80xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x97x80xf32>, tensor<1x2x1025x80xf32>, tensor<1x2x1025x80xf32>)
      -> tensor<1x8x97x80xf32>
  return %o : tensor<1x8x97x80xf32>
}

// GQA 2:1 at D = 128.
func.func @gqa_d128(%q: tensor<1x4x97x128xf32>, %k: tensor<1x2x97x128xf32>,
                    %v: tensor<1x2x97x128xf32>) -> tensor<1x4x97x128xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x4x97x128xf32>, tensor<1x2x97x128xf32>, tensor<1x2x97x128xf32>)
      -> tensor<1x4x97x128xf32>
  return %o : tensor<1x4x97x128xf32>
}

// MQA decoding: one query per head, one KV head.
func.func @mqa_decode(%q: tensor<2x8x1x64xf32>, %k: tensor<2x1x1025x64xf32>,
                      %v: tensor<2x1x1025x64xf32>) -> tensor<2x8x1x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<2x8x1x64xf32>, tensor<2x1x1025x64xf32>, tensor<2x1x1025x64xf32>)
      -> tensor<2x8x1x64xf32>
  return %o : tensor<2x8x1x64xf32>
}

// Dense with Lq != Lk and a value dim unlike the key dim.
func.func @cross_lengths(%q: tensor<1x2x97x64xf32>, %k: tensor<1x2x300x64xf32>,
                         %v: tensor<1x2x300x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x97x64xf32>, tensor<1x2x300x64xf32>, tensor<1x2x300x40xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @sliding_window(%q: tensor<1x2x1025x64xf32>, %k: tensor<1x2x1025x64xf32>,
                          %v: tensor<1x2x1025x64xf32>) -> tensor<1x2x1025x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 100, right = 30>)
      : (tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>)
      -> tensor<1x2x1025x64xf32>
  return %o : tensor<1x2x1025x64xf32>
}

// Window + 2 global tokens + 2 random blocks of 16 (97 is not a multiple
// of the block): partial tiles read the random-block table from a buffer.
func.func @bigbird(%q: tensor<1x4x97x64xf32>, %k: tensor<1x4x97x64xf32>,
                   %v: tensor<1x4x97x64xf32>) -> tensor<1x4x97x64xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.or<[#attn.window<left = 8, right = 8>, #attn.global<[0, 1]>,
                        #attn.random_blocks<block = 16, count = 2, seed = 7>]>)
      : (tensor<1x4x97x64xf32>, tensor<1x4x97x64xf32>, tensor<1x4x97x64xf32>)
      -> tensor<1x4x97x64xf32>
  return %o : tensor<1x4x97x64xf32>
}

// One layout per head (per-head schedules); query block 1 of head 0 keeps
// nothing (its rows must be 0).
func.func @block_layout_per_head(%q: tensor<1x2x40x32xf32>,
                                 %k: tensor<1x2x40x32xf32>,
                                 %v: tensor<1x2x40x32xf32>)
    -> tensor<1x2x40x32xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.block_layout<block = 16, layout = dense<
        [[[1, 0, 0], [0, 0, 0], [1, 1, 1]],
         [[0, 1, 0], [1, 1, 0], [0, 0, 1]]]> : tensor<2x3x3xi1>>)
      : (tensor<1x2x40x32xf32>, tensor<1x2x40x32xf32>, tensor<1x2x40x32xf32>)
      -> tensor<1x2x40x32xf32>
  return %o : tensor<1x2x40x32xf32>
}

// Packed documents, causal within each (ids are seeded, increasing).
func.func @documents_causal(%q: tensor<2x2x97x40xf32>, %k: tensor<2x2x97x40xf32>,
                            %v: tensor<2x2x97x40xf32>, %ids: tensor<2x97xi32>)
    -> tensor<2x2x97x40xf32> {
  %o = attn.attention %q, %k, %v segments(%ids, %ids)
      pattern(#attn.and<[#attn.causal, #attn.segments]>)
      : (tensor<2x2x97x40xf32>, tensor<2x2x97x40xf32>, tensor<2x2x97x40xf32>,
         tensor<2x97xi32>, tensor<2x97xi32>) -> tensor<2x2x97x40xf32>
  return %o : tensor<2x2x97x40xf32>
}

// Query and key ids of different lengths and integer widths.
func.func @documents_cross(%q: tensor<1x2x37x40xf32>, %k: tensor<1x2x100x40xf32>,
                           %v: tensor<1x2x100x40xf32>, %qi: tensor<1x37xi64>,
                           %ki: tensor<1x100xi32>) -> tensor<1x2x37x40xf32> {
  %o = attn.attention %q, %k, %v segments(%qi, %ki) pattern(#attn.segments)
      : (tensor<1x2x37x40xf32>, tensor<1x2x100x40xf32>, tensor<1x2x100x40xf32>,
         tensor<1x37xi64>, tensor<1x100xi32>) -> tensor<1x2x37x40xf32>
  return %o : tensor<1x2x37x40xf32>
}

func.func @alibi_causal(%q: tensor<1x4x97x64xf32>, %k: tensor<1x4x97x64xf32>,
                        %v: tensor<1x4x97x64xf32>) -> tensor<1x4x97x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) mods = [#attn.alibi<max_bias = 8.0>]
      : (tensor<1x4x97x64xf32>, tensor<1x4x97x64xf32>, tensor<1x4x97x64xf32>)
      -> tensor<1x4x97x64xf32>
  return %o : tensor<1x4x97x64xf32>
}

func.func @softcap(%q: tensor<1x2x97x64xf32>, %k: tensor<1x2x97x64xf32>,
                   %v: tensor<1x2x97x64xf32>) -> tensor<1x2x97x64xf32> {
  %o = attn.attention %q, %k, %v mods = [#attn.softcap<cap = 2.0>]
      : (tensor<1x2x97x64xf32>, tensor<1x2x97x64xf32>, tensor<1x2x97x64xf32>)
      -> tensor<1x2x97x64xf32>
  return %o : tensor<1x2x97x64xf32>
}

func.func @region(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                  %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) score {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %half = arith.constant 0.5 : f32
      %y = arith.mulf %x, %half : f32
      attn.yield %y : f32
  } : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
    -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

// 0.5 / sqrt(40) = 0.0790569415...
func.func @halved(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                  %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) scale = 0.0790569415
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

// Rows 0..56 sit before the first key: they keep nothing and must be 0.
func.func @fully_masked_rows(%q: tensor<1x2x97x64xf32>, %k: tensor<1x2x40x64xf32>,
                             %v: tensor<1x2x40x64xf32>) -> tensor<1x2x97x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x2x97x64xf32>, tensor<1x2x40x64xf32>, tensor<1x2x40x64xf32>)
      -> tensor<1x2x97x64xf32>
  return %o : tensor<1x2x97x64xf32>
}

// A dense boolean mask (80 % kept, broadcast over heads) and an additive
// bias per head on a causal pattern: every tile evaluates the mask.
func.func @dense_mask_bias(%q: tensor<2x2x97x40xf32>, %k: tensor<2x2x97x40xf32>,
                           %v: tensor<2x2x97x40xf32>, %m: tensor<2x1x97x97xi1>,
                           %bias: tensor<1x2x97x97xf32>) -> tensor<2x2x97x40xf32> {
  %o = attn.attention %q, %k, %v mask(%m) bias(%bias) pattern(#attn.causal)
      : (tensor<2x2x97x40xf32>, tensor<2x2x97x40xf32>, tensor<2x2x97x40xf32>,
         tensor<2x1x97x97xi1>, tensor<1x2x97x97xf32>) -> tensor<2x2x97x40xf32>
  return %o : tensor<2x2x97x40xf32>
}

// A per-key bias [B, 1, 1, Lk]: one row read for every query.
func.func @key_bias(%q: tensor<2x2x97x40xf32>, %k: tensor<2x2x120x40xf32>,
                    %v: tensor<2x2x120x40xf32>, %bias: tensor<2x1x1x120xf32>)
    -> tensor<2x2x97x40xf32> {
  %o = attn.attention %q, %k, %v bias(%bias)
      : (tensor<2x2x97x40xf32>, tensor<2x2x120x40xf32>, tensor<2x2x120x40xf32>,
         tensor<2x1x1x120xf32>) -> tensor<2x2x97x40xf32>
  return %o : tensor<2x2x97x40xf32>
}

// Relative-position tables (rel_table operand): Shaw et al. per distance,
// and T5 buckets on a bottom-right causal cross attention.
func.func @shaw(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x97x40xf32>,
                %v: tensor<1x4x97x40xf32>, %t: tensor<4x33xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v rel_table(%t) mods = [#attn.shaw_bias<max_distance = 16>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<4x33xf32>)
      -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}

func.func @t5_causal_cross(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x200x40xf32>,
                           %v: tensor<1x4x200x40xf32>, %t: tensor<4x16xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v rel_table(%t) pattern(#attn.causal) align = bottom_right
      mods = [#attn.t5_bias<buckets = 16, max_distance = 40, bidirectional = false>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x200x40xf32>, tensor<1x4x200x40xf32>, tensor<4x16xf32>)
      -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}

// Sizes of 1 everywhere.
func.func @one_of_each(%q: tensor<1x1x1x1xf32>, %k: tensor<1x1x1x1xf32>,
                       %v: tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>)
      -> tensor<1x1x1x1xf32>
  return %o : tensor<1x1x1x1xf32>
}

// D = 256 with Dv = 100: two invocations per row, 8-key tiles.
func.func @d256_dv100(%q: tensor<1x1x70x256xf32>, %k: tensor<1x1x300x256xf32>,
                      %v: tensor<1x1x300x100xf32>) -> tensor<1x1x70x100xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x1x70x256xf32>, tensor<1x1x300x256xf32>, tensor<1x1x300x100xf32>)
      -> tensor<1x1x70x100xf32>
  return %o : tensor<1x1x70x100xf32>
}
