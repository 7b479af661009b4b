// bf16 attentions whose shapes test the pair products' edges (AMX tiles:
// e2e/amx.mlir; vdpbf16ps: e2e/bf16-dot.mlir): key counts that are not
// whole key tiles or 16-row blocks, padded query tiles, head dims of 2, 3, 4
// and 8 x 32, Dv != D and an odd number of 16-dim blocks, GQA, patterns
// with partial tiles, segment ids, and a cache whose dropped slots hold
// NaN (e2e/Inputs/plant-nonfinite.py writes its inputs).

// Lq = 300 (4 full query tiles and a padded one), Lk = 333 (the last key
// tile has 77 keys, its last 16-row block 13), D = 64.
func.func @cross(%q: tensor<2x2x300x64xbf16>, %k: tensor<2x2x333x64xbf16>,
                 %v: tensor<2x2x333x64xbf16>) -> tensor<2x2x300x64xbf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<2x2x300x64xbf16>, tensor<2x2x333x64xbf16>, tensor<2x2x333x64xbf16>)
      -> tensor<2x2x300x64xbf16>
  return %o : tensor<2x2x300x64xbf16>
}

func.func @causal_d128(%q: tensor<1x2x257x128xbf16>, %k: tensor<1x2x257x128xbf16>,
                       %v: tensor<1x2x257x128xbf16>) -> tensor<1x2x257x128xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x257x128xbf16>, tensor<1x2x257x128xbf16>, tensor<1x2x257x128xbf16>)
      -> tensor<1x2x257x128xbf16>
  return %o : tensor<1x2x257x128xbf16>
}

// Four query heads on two key/value heads, D = 96 (3 tiles), Dv = 48.
func.func @window_gqa_d96(%q: tensor<1x4x200x96xbf16>, %k: tensor<1x2x200x96xbf16>,
                          %v: tensor<1x2x200x48xbf16>) -> tensor<1x4x200x48xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 70, right = 10>)
      : (tensor<1x4x200x96xbf16>, tensor<1x2x200x96xbf16>, tensor<1x2x200x48xbf16>)
      -> tensor<1x4x200x48xbf16>
  return %o : tensor<1x4x200x48xbf16>
}

func.func @documents(%q: tensor<2x2x150x64xbf16>, %k: tensor<2x2x150x64xbf16>,
                     %v: tensor<2x2x150x64xbf16>, %qi: tensor<2x150xi32>,
                     %ki: tensor<2x150xi32>) -> tensor<2x2x150x64xbf16> {
  %o = attn.attention %q, %k, %v segments(%qi, %ki) pattern(#attn.segments)
      : (tensor<2x2x150x64xbf16>, tensor<2x2x150x64xbf16>, tensor<2x2x150x64xbf16>,
         tensor<2x150xi32>, tensor<2x150xi32>) -> tensor<2x2x150x64xbf16>
  return %o : tensor<2x2x150x64xbf16>
}

// D = 256 (8 tiles), Lq < Lk, bottom-right causal.
func.func @bottom_right_d256(%q: tensor<1x2x70x256xbf16>, %k: tensor<1x2x190x256xbf16>,
                             %v: tensor<1x2x190x256xbf16>) -> tensor<1x2x70x256xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x2x70x256xbf16>, tensor<1x2x190x256xbf16>, tensor<1x2x190x256xbf16>)
      -> tensor<1x2x70x256xbf16>
  return %o : tensor<1x2x70x256xbf16>
}

func.func @cache(%q: tensor<1x2x40x64xbf16>, %k: tensor<1x2x300x64xbf16>,
                 %v: tensor<1x2x300x64xbf16>) -> tensor<1x2x40x64xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) query_offset = 240
      : (tensor<1x2x40x64xbf16>, tensor<1x2x300x64xbf16>, tensor<1x2x300x64xbf16>)
      -> tensor<1x2x40x64xbf16>
  return %o : tensor<1x2x40x64xbf16>
}

// An lse result with query / key offsets (a block of a larger attention):
// the pair kernels keep scores unscaled and fold the scale into exp, so
// the lse must scale the running max back.
func.func @window_block_lse(%q: tensor<2x4x97x64xbf16>, %k: tensor<2x2x130x64xbf16>,
                            %v: tensor<2x2x130x48xbf16>)
    -> (tensor<2x4x97x48xbf16>, tensor<2x4x97xf32>) {
  %o, %l = attn.attention %q, %k, %v
      pattern(#attn.window<left = 40, right = 0>) query_offset = 100 key_offset = 70
      : (tensor<2x4x97x64xbf16>, tensor<2x2x130x64xbf16>, tensor<2x2x130x48xbf16>)
      -> (tensor<2x4x97x48xbf16>, tensor<2x4x97xf32>)
  return %o, %l : tensor<2x4x97x48xbf16>, tensor<2x4x97xf32>
}

// A score mod (ALiBi) sees scaled scores: Q keeps the scale there.
func.func @alibi_causal(%q: tensor<1x4x130x64xbf16>, %k: tensor<1x4x130x64xbf16>,
                        %v: tensor<1x4x130x64xbf16>) -> tensor<1x4x130x64xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) mods = [#attn.alibi<max_bias = 8.0>]
      : (tensor<1x4x130x64xbf16>, tensor<1x4x130x64xbf16>, tensor<1x4x130x64xbf16>)
      -> tensor<1x4x130x64xbf16>
  return %o : tensor<1x4x130x64xbf16>
}

// A per-key bias per (batch, head) on GQA: added to the scaled scores
// after the tile products (Q keeps its scale).
func.func @key_bias(%q: tensor<2x4x150x64xbf16>, %k: tensor<2x2x333x64xbf16>,
                    %v: tensor<2x2x333x64xbf16>, %b: tensor<2x4x1x333xbf16>)
    -> tensor<2x4x150x64xbf16> {
  %o = attn.attention %q, %k, %v bias(%b)
      : (tensor<2x4x150x64xbf16>, tensor<2x2x333x64xbf16>,
         tensor<2x2x333x64xbf16>, tensor<2x4x1x333xbf16>)
      -> tensor<2x4x150x64xbf16>
  return %o : tensor<2x4x150x64xbf16>
}
