// attn-tile produces the tiled form every back end consumes (docs/Design.md,
// "The tiled form"; the GENERIC run also checks that it prints and parses
// back): a forall over (batch, head, query tile), an empty
// online-softmax state, one attn.online_attention, attn.finalize_tile.
// RUN: attn-opt %s --split-input-file --attn-tile="q-tile=32 kv-tile=16 for-target=false" --canonicalize --cse | attn-opt --split-input-file | FileCheck %s --check-prefix=GENERIC
// Tile sizes from the CPU kernel plan of each op.
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx512 --attn-tile=kv-tile=0 | FileCheck %s --check-prefix=AVX512
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx2 --attn-tile=kv-tile=0 | FileCheck %s --check-prefix=AVX2
// RUN: not attn-opt %s --split-input-file --attn-set-target=target=tpu --attn-tile 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: attn-set-target: unknown target 'tpu' (cpu, cpu-avx2, cpu-avx512, cpu-avx512-bf16, cpu-amx, host, vulkan,

// GENERIC-LABEL: func @causal
// GENERIC: %[[EMPTY:.*]] = tensor.empty() : tensor<1x4x97x24xf32>
// GENERIC: scf.forall (%[[H:.*]], %[[T:.*]]) in (4, 4) shared_outs(%[[OUT:.*]] = %[[EMPTY]])
// GENERIC:   %[[FIRST:.*]] = arith.minui
// GENERIC:   %[[ROWS:.*]] = arith.subi %{{.*}}, %[[FIRST]]
// GENERIC:   %[[M:.*]] = linalg.fill ins(%cst{{.*}} : f32) outs(%{{.*}} : tensor<?xf32>)
// GENERIC:   %[[L:.*]] = linalg.fill ins(%cst{{.*}} : f32) outs(%{{.*}} : tensor<?xf32>)
// GENERIC:   %[[ACC:.*]] = linalg.fill ins(%cst{{.*}} : f32) outs(%{{.*}} : tensor<?x24xf32>)
// GENERIC:   %{{.*}}, %[[SUM:.*]], %[[NEWACC:.*]] = attn.online_attention %arg0, %arg1, %arg2
// GENERIC-SAME: tile(%c0, %[[H]], %[[T]]) state(%[[M]], %[[L]], %[[ACC]] : tensor<?xf32>, tensor<?xf32>, tensor<?x24xf32>)
// GENERIC-SAME: query_tile = 32 key_tile = 16 pattern(#attn.causal)
// GENERIC:   %[[ROWSOUT:.*]] = attn.finalize_tile %[[NEWACC]], %[[SUM]] : tensor<?x24xf32>, tensor<?xf32> -> tensor<?x24xf32>
// GENERIC:   tensor.parallel_insert_slice %[[ROWSOUT]] into %[[OUT]][0, %[[H]], %[[FIRST]], 0] [1, 1, %[[ROWS]], 24]
// GENERIC-NOT: attn.attention
// AVX512-LABEL: func @causal
// AVX512: attn.online_attention {{.*}} query_tile = 64 key_tile = 128 pattern(#attn.causal)
// AVX2-LABEL: func @causal
// AVX2: attn.online_attention {{.*}} query_tile = 24 key_tile = 128 pattern(#attn.causal)
func.func @causal(%q: tensor<1x4x97x40xf32>, %k: tensor<1x2x100x40xf32>,
                  %v: tensor<1x2x100x24xf32>) -> tensor<1x4x97x24xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x4x97x40xf32>, tensor<1x2x100x40xf32>, tensor<1x2x100x24xf32>)
      -> tensor<1x4x97x24xf32>
  return %o : tensor<1x4x97x24xf32>
}

// -----

// Sparser patterns take 32-key tiles; table patterns shrink the key tile to
// divide their blocks, and 24-row query tiles restart at each 64-row block
// (24 + 24 + 16).
// AVX512-LABEL: func @window
// AVX512: query_tile = 64 key_tile = 32 pattern
// AVX2-LABEL: func @window
// AVX2: query_tile = 24 key_tile = 32 pattern
func.func @window(%q: tensor<1x1x256x16xf32>) -> tensor<1x1x256x16xf32> {
  %o = attn.attention %q, %q, %q pattern(#attn.window<left = 40, right = 0>)
      : (tensor<1x1x256x16xf32>, tensor<1x1x256x16xf32>, tensor<1x1x256x16xf32>)
      -> tensor<1x1x256x16xf32>
  return %o : tensor<1x1x256x16xf32>
}

// -----

// AVX512-LABEL: func @blocks
// AVX512: query_tile = 64 key_tile = 32 pattern
// AVX2-LABEL: func @blocks
// AVX2: %[[TILES:.*]] = arith.muli %{{.*}}, %c3
// AVX2: scf.forall ({{.*}}) in (1, 1, %[[TILES]])
// AVX2: arith.divui %{{.*}}, %c3
// AVX2: arith.remui %{{.*}}, %c3
// AVX2: query_tile = 24 period = 64 key_tile = 32 pattern
func.func @blocks(%q: tensor<1x1x128x16xf32>) -> tensor<1x1x128x16xf32> {
  %o = attn.attention %q, %q, %q
      pattern(#attn.block_layout<block = 64, layout = dense<
        [[[1, 0], [1, 1]]]> : tensor<1x2x2xi1>>)
      : (tensor<1x1x128x16xf32>, tensor<1x1x128x16xf32>, tensor<1x1x128x16xf32>)
      -> tensor<1x1x128x16xf32>
  return %o : tensor<1x1x128x16xf32>
}

// -----

// Every operand, attribute and the score region move to the tile op; the
// element type stays, the state is f32.
// GENERIC-LABEL: func @everything
// GENERIC: attn.online_attention %arg0, %arg0, %arg0 mask(%arg1 : tensor<1x1x8x8xi1>) bias(%arg2 : tensor<1x2x8x8xf16>)
// GENERIC-SAME: state({{.*}} : tensor<?xf32>, tensor<?xf32>, tensor<?x16xf32>)
// GENERIC-SAME: query_tile = 32 key_tile = 16 pattern(#attn.causal) scale = 5.000000e-01 align = bottom_right mods = [#attn.alibi<max_bias = 8.000000e+00>] score {
// GENERIC: ^bb0(%{{.*}}: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// GENERIC:   arith.mulf
// GENERIC:   attn.yield
// GENERIC: } : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>
// GENERIC: attn.finalize_tile %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<?xf32> -> tensor<?x16xf16>
func.func @everything(%q: tensor<1x2x8x16xf16>, %mask: tensor<1x1x8x8xi1>,
                      %bias: tensor<1x2x8x8xf16>) -> tensor<1x2x8x16xf16> {
  %o = attn.attention %q, %q, %q mask(%mask) bias(%bias)
      pattern(#attn.causal) scale = 0.5 align = bottom_right
      mods = [#attn.alibi<max_bias = 8.0>] score {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %c = arith.constant 0.5 : f32
      %y = arith.mulf %x, %c : f32
      attn.yield %y : f32
  } : (tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>,
       tensor<1x1x8x8xi1>, tensor<1x2x8x8xf16>) -> tensor<1x2x8x16xf16>
  return %o : tensor<1x2x8x16xf16>
}

// The lse result: a second shared output written from attn.tile_lse of the
// final state, at the tile's rows; the offsets travel to the tile op.
// GENERIC-LABEL: func @lse_offsets
// GENERIC: scf.forall (%[[H:.*]], %[[T:.*]]) in (4, 4) shared_outs(%[[OUT:.*]] = %{{.*}}, %[[LSE:.*]] = %{{.*}}) -> (tensor<1x4x97x24xf32>, tensor<1x4x97xf32>)
// GENERIC:   %[[MAX:.*]], %[[SUM:.*]], %[[ACC:.*]] = attn.online_attention
// GENERIC-SAME: pattern(#attn.window<left = 40, right = 0>) query_offset = 100 key_offset = 70
// GENERIC:   attn.finalize_tile %[[ACC]], %[[SUM]]
// GENERIC:   %[[ROWLSE:.*]] = attn.tile_lse %[[MAX]], %[[SUM]] : tensor<?xf32>
// GENERIC:   tensor.parallel_insert_slice %{{.*}} into %[[OUT]]
// GENERIC:   tensor.parallel_insert_slice %[[ROWLSE]] into %[[LSE]][0, %[[H]], %{{.*}}] [1, 1, %{{.*}}] [1, 1, 1] : tensor<?xf32> into tensor<1x4x97xf32>
func.func @lse_offsets(%q: tensor<1x4x97x40xf32>, %k: tensor<1x2x100x40xf32>,
                       %v: tensor<1x2x100x24xf32>)
    -> (tensor<1x4x97x24xf32>, tensor<1x4x97xf32>) {
  %o, %l = attn.attention %q, %k, %v
      pattern(#attn.window<left = 40, right = 0>) query_offset = 100 key_offset = 70
      : (tensor<1x4x97x40xf32>, tensor<1x2x100x40xf32>, tensor<1x2x100x24xf32>)
      -> (tensor<1x4x97x24xf32>, tensor<1x4x97xf32>)
  return %o, %l : tensor<1x4x97x24xf32>, tensor<1x4x97xf32>
}

// -----

// With a target the key tile is at most 1024 rows (the CPU kernels' stack
// tile).
// RUN: not attn-opt %s --split-input-file --attn-set-target=target=cpu-avx512 --attn-tile=kv-tile=2048 2>&1 | FileCheck %s --check-prefix=BIGTILE
// BIGTILE: error: attn-tile: tile sizes must be 1 to 4096 (kv-tile 0 to 1024 with a target)
