// The backward of attn.attention (attn.attention_grad, lowered by
// attn-lower-attention-grad) run by attn-run --backward on a seeded dO:
// dQ, dK and dV against the f64 reference's gradients
// (ReferenceGradients.cpp, itself checked against finite differences in
// the unit tests), on the vectorized CPU path (the forward's kernels, then
// the fused backward kernel of attn-attention-grad-to-cpu where it covers
// the op, else attn-lower-attention-grad's loops) and on --generic. Tolerance 1e-4 of each gradient's
// scale: f32 has 6e-8 relative precision; dK and dV sum over up to
// 4 x 1000 query rows and dS = P (dP - D) cancels, which leaves errors
// near 1e-6 scaled (measured: at most 3e-6); a wrong formula or a missed
// tile is off by 1e-2 or more.
// RUN: attn-run %s --entry=dense_odd --backward --check | FileCheck %s
// RUN: attn-run %s --entry=dense_odd --backward --check --generic | FileCheck %s
// RUN: attn-run %s --entry=causal_top_left --backward --check | FileCheck %s
// RUN: attn-run %s --entry=causal_bottom_right_d128 --backward --check | FileCheck %s
// RUN: attn-run %s --entry=causal_bottom_right_d128 --backward --check --generic | FileCheck %s
// RUN: attn-run %s --entry=gqa_4to1_long --backward --check | FileCheck %s
// RUN: attn-run %s --entry=mqa_cross --backward --check | FileCheck %s
// RUN: attn-run %s --entry=sliding_window --backward --check | FileCheck %s
// RUN: attn-run %s --entry=bigbird --backward --check | FileCheck %s
// RUN: attn-run %s --entry=documents --backward --check | FileCheck %s
// RUN: attn-run %s --entry=alibi_softcap --backward --check | FileCheck %s
// RUN: attn-run %s --entry=t5_bias --backward --check | FileCheck %s --check-prefixes=CHECK,TABLE
// RUN: attn-run %s --entry=t5_bias --backward --check --generic | FileCheck %s --check-prefixes=CHECK,TABLE
// RUN: attn-run %s --entry=shaw_gqa --backward --check | FileCheck %s --check-prefixes=CHECK,TABLE
// RUN: attn-run %s --entry=mask_and_bias --backward --check | FileCheck %s --check-prefixes=CHECK,BIAS
// RUN: attn-run %s --entry=mask_and_bias --backward --check --generic | FileCheck %s --check-prefixes=CHECK,BIAS
// RUN: attn-run %s --entry=per_key_bias_causal --backward --check | FileCheck %s --check-prefixes=CHECK,BIAS
// CHECK: check dq: {{.*}}: PASS
// CHECK: check dk: {{.*}}: PASS
// CHECK: check dv: {{.*}}: PASS
// A bias operand gets its gradient (attn.attention_grad's fourth result),
// summed over the dimensions it broadcasts.
// BIAS: check dbias: {{.*}}: PASS
// The relative-position table (T5 buckets, Shaw's clipped distances) gets
// its gradient: each logit's dX added to the entry it read.
// TABLE: check drel_table: {{.*}}: PASS

// The backward visits exactly the key tiles the pattern keeps something
// of (the forward's tile classes; exact for causal and window), as the
// forward's kernel does at its own tiling: the fused kernel once per tile,
// the generic lowering (two passes; documents' segments take it) in each
// pass.
// RUN: attn-run %s --entry=causal_top_left --backward --stats | FileCheck %s --check-prefix=FUSED
// RUN: attn-run %s --entry=causal_bottom_right_d128 --backward --stats | FileCheck %s --check-prefix=FUSED
// RUN: attn-run %s --entry=sliding_window --backward --stats | FileCheck %s --check-prefix=FUSED
// FUSED: stats: query tile {{[0-9]+}}, key tile {{[0-9]+}}: visited [[FORWARD:[0-9]+]] of
// FUSED-NEXT: stats: key tiles the pattern keeps something of (reference): [[FORWARD]]
// FUSED-NEXT: stats: backward, query tile 64, key tile 64: the fused kernel visited [[KEPT:[0-9]+]] of {{[0-9]+}} tiles; the pattern keeps something of [[KEPT]] (reference)
// RUN: attn-run %s --entry=sliding_window --backward --stats --generic | FileCheck %s --check-prefix=STATS
// RUN: attn-run %s --entry=causal_bottom_right_d128 --backward --stats --generic | FileCheck %s --check-prefix=STATS
// STATS: stats: backward, query tile 64, key tile 64: the dQ pass visited [[KEPT:[0-9]+]] and the dK/dV pass [[KEPT]] of {{[0-9]+}} tiles; the pattern keeps something of [[KEPT]] (reference)

// A NaN in the K and V rows no query keeps (keys 60.. under top-left
// causal with Lq = 60) reaches no gradient: their dK and dV rows are 0.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/make-matrix-npy.py nan-tail %t/k.npy 1 60 1 2 80 32
// RUN: %python %S/Inputs/make-matrix-npy.py nan-tail %t/v.npy 2 60 1 2 80 32
// RUN: attn-run %s --entry=masked_nan_keys --backward --check --input k=%t/k.npy --input v=%t/v.npy --random-inputs | FileCheck %s
// RUN: attn-run %s --entry=masked_nan_keys --backward --check --generic --input k=%t/k.npy --input v=%t/v.npy --random-inputs | FileCheck %s

// 16-bit inputs: the backward reads them widened, accumulates in f32 and
// rounds each gradient once (tolerance: 8 units of the format's rounding,
// RunBackward.cpp; seen 2.4e-3 bf16, 3.5e-4 f16).
// RUN: attn-run %s --entry=bf16_causal_gqa --backward --check | FileCheck %s
// RUN: attn-run %s --entry=f16_dense --backward --check --generic | FileCheck %s
// RUN: attn-run %s --entry=f16_dense --backward --check | FileCheck %s
// A score region is differentiated op by op (forward-mode tangents of its
// arithmetic, ScoreRegionDerivative.cpp); the reference evaluates it in f64
// and differentiates it by central differences. The tensors it captures
// (an argument, a constant) get their gradients: each logit's dX times the
// region's derivative with respect to the element it read. dcaptured sums
// up to 3500 logits per element in f32 (scaled errors up to 2e-5
// measured), under the 1e-4 bar.
// RUN: attn-run %s --entry=score_region --check | FileCheck %s --check-prefix=ONREGION
// RUN: attn-run %s --entry=score_region --backward --check | FileCheck %s --check-prefixes=CHECK,CAPTURED
// RUN: attn-run %s --entry=region_constant --backward --check | FileCheck %s --check-prefixes=CHECK,CAPTURED
// ONREGION: check: {{.*}}: PASS
// CAPTURED: check dcaptured0: {{.*}}: PASS
// Bias and boolean mask operands whose gradients are not asked for
// (--backward-operand-grads=false, as when no mask requires grad in
// PyTorch) take the fused kernel too: bias lanes added as the scores are
// finished, mask bytes read per lane.
// RUN: attn-run %s --entry=mask_and_bias --backward --backward-operand-grads=false --check | FileCheck %s
// RUN: attn-run %s --entry=per_key_bias_causal --backward --backward-operand-grads=false --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=mask_and_bias --backward --backward-operand-grads=false --stats | FileCheck %s --check-prefix=FUSEDONLY
// FUSEDONLY: stats: backward, query tile 64, key tile 64: the fused kernel visited 8 of 8 tiles
// A -inf bias (padding) drops keys 50.. (P = 0 exactly); a NaN score plus
// -inf stays NaN, as in the reference (and PyTorch's additive masks).
// RUN: %python %S/Inputs/make-matrix-npy.py inf-tail %t/pad.npy 3 50 1 1 1 60
// RUN: attn-run %s --entry=per_key_bias_causal --backward --backward-operand-grads=false --check --input bias=%t/pad.npy --random-inputs | FileCheck %s
// Document masks (segment ids, alone or AND-ed with a positional pattern)
// take the fused kernel: key and query tiles whose id ranges are disjoint
// are skipped (exact for packed documents: the reference's count), ids are
// compared per lane in the others; i32 and i64 ids.
// RUN: attn-run %s --entry=documents --backward --stats | FileCheck %s --check-prefix=DOCS
// RUN: attn-run %s --entry=documents_i64 --backward --check | FileCheck %s
// RUN: attn-run %s --entry=documents_i64 --backward --stats | FileCheck %s --check-prefix=DOCS
// DOCS: stats: backward, query tile 64, key tile 64: the fused kernel visited [[KEPT:[0-9]+]] of {{[0-9]+}} tiles; the pattern keeps something of [[KEPT]] (reference)
// The fused kernel blocked for AVX2 (6 rows x 2 vectors of 8 lanes).
// RUN: attn-run %s --entry=dense_odd --backward --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=causal_bottom_right_d128 --backward --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=mqa_cross --backward --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=alibi_softcap --backward --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=bf16_causal_gqa --backward --check --target=cpu-avx2 | FileCheck %s

// The check can fail: a perturbed tolerance of 0 fails on rounding.
// RUN: not attn-run %s --entry=dense_odd --backward --check --tolerance=0 | FileCheck %s --check-prefix=STRICT
// STRICT: check dq: {{.*}}: FAIL
// A NaN in a gradient fails, and so does a 1 % error in one entry.
// RUN: not attn-run %s --entry=dense_odd --backward --check --perturb-output=nan | FileCheck %s --check-prefix=NAN
// NAN: check dq: {{.*}}1 NON-FINITE MISMATCHES: FAIL
// RUN: not attn-run %s --entry=dense_odd --backward --check --perturb-output=0.01 | FileCheck %s --check-prefix=STRICT

// Bad input, each refused at its op: a family without a backward, a mod
// and a score region the lowering cannot differentiate.
// RUN: not attn-run %S/Inputs/backward-bad.mlir --entry=linformer --backward 2>&1 | FileCheck %s --check-prefix=LINFORMER
// LINFORMER: backward-bad.mlir:3:8: error: attn-run --backward: attn.linformer has no backward yet
// RUN: not attn-run %S/Inputs/backward-bad.mlir --entry=distance_weight --backward 2>&1 | FileCheck %s --check-prefix=WEIGHT
// WEIGHT: backward-bad.mlir:9:8: error: 'attn.attention_grad' op attn-lower-attention-grad: #attn.distance_weight (not additive) has no backward yet
// RUN: not attn-run %S/Inputs/backward-bad.mlir --entry=score_region --backward 2>&1 | FileCheck %s --check-prefix=REGION
// REGION: backward-bad.mlir:15:8: error: 'attn.attention_grad' op attn-lower-attention-grad: the score region's 'math.erf' has no backward yet

func.func @dense_odd(%q: tensor<2x3x97x40xf32>, %k: tensor<2x3x97x40xf32>, %v: tensor<2x3x97x40xf32>) -> tensor<2x3x97x40xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<2x3x97x40xf32>, tensor<2x3x97x40xf32>, tensor<2x3x97x40xf32>) -> tensor<2x3x97x40xf32>
  return %o : tensor<2x3x97x40xf32>
}

func.func @causal_top_left(%q: tensor<1x2x130x64xf32>, %k: tensor<1x2x130x64xf32>, %v: tensor<1x2x130x64xf32>) -> tensor<1x2x130x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x130x64xf32>, tensor<1x2x130x64xf32>, tensor<1x2x130x64xf32>) -> tensor<1x2x130x64xf32>
  return %o : tensor<1x2x130x64xf32>
}

func.func @causal_bottom_right_d128(%q: tensor<1x2x37x128xf32>, %k: tensor<1x2x150x128xf32>, %v: tensor<1x2x150x128xf32>) -> tensor<1x2x37x128xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x2x37x128xf32>, tensor<1x2x150x128xf32>, tensor<1x2x150x128xf32>) -> tensor<1x2x37x128xf32>
  return %o : tensor<1x2x37x128xf32>
}

func.func @gqa_4to1_long(%q: tensor<1x4x1000x64xf32>, %k: tensor<1x1x1000x64xf32>, %v: tensor<1x1x1000x64xf32>) -> tensor<1x4x1000x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x4x1000x64xf32>, tensor<1x1x1000x64xf32>, tensor<1x1x1000x64xf32>) -> tensor<1x4x1000x64xf32>
  return %o : tensor<1x4x1000x64xf32>
}

func.func @mqa_cross(%q: tensor<2x4x45x40xf32>, %k: tensor<2x1x97x40xf32>, %v: tensor<2x1x97x40xf32>) -> tensor<2x4x45x40xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<2x4x45x40xf32>, tensor<2x1x97x40xf32>, tensor<2x1x97x40xf32>) -> tensor<2x4x45x40xf32>
  return %o : tensor<2x4x45x40xf32>
}

func.func @sliding_window(%q: tensor<1x2x300x64xf32>, %k: tensor<1x2x300x64xf32>, %v: tensor<1x2x300x64xf32>) -> tensor<1x2x300x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 40, right = 0>)
      : (tensor<1x2x300x64xf32>, tensor<1x2x300x64xf32>, tensor<1x2x300x64xf32>) -> tensor<1x2x300x64xf32>
  return %o : tensor<1x2x300x64xf32>
}

func.func @bigbird(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.or<[#attn.window<left = 8, right = 8>, #attn.global<[0, 1]>,
                        #attn.random_blocks<block = 16, count = 2, seed = 7>]>)
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @documents(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>, %qi: tensor<1x97xi32>, %ki: tensor<1x97xi32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v segments(%qi, %ki) pattern(#attn.and<[#attn.segments, #attn.causal]>)
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x97xi32>, tensor<1x97xi32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @documents_i64(%q: tensor<2x2x70x32xf32>, %k: tensor<2x2x150x32xf32>, %v: tensor<2x2x150x32xf32>, %qi: tensor<2x70xi64>, %ki: tensor<2x150xi64>) -> tensor<2x2x70x32xf32> {
  %o = attn.attention %q, %k, %v segments(%qi, %ki) pattern(#attn.segments)
      : (tensor<2x2x70x32xf32>, tensor<2x2x150x32xf32>, tensor<2x2x150x32xf32>, tensor<2x70xi64>, tensor<2x150xi64>) -> tensor<2x2x70x32xf32>
  return %o : tensor<2x2x70x32xf32>
}

func.func @alibi_softcap(%q: tensor<1x4x97x64xf32>, %k: tensor<1x4x97x64xf32>, %v: tensor<1x4x97x64xf32>) -> tensor<1x4x97x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) scale = 1.0
      mods = [#attn.alibi<max_bias = 8.0>, #attn.softcap<cap = 2.0>]
      : (tensor<1x4x97x64xf32>, tensor<1x4x97x64xf32>, tensor<1x4x97x64xf32>) -> tensor<1x4x97x64xf32>
  return %o : tensor<1x4x97x64xf32>
}

func.func @t5_bias(%q: tensor<1x4x97x40xf32>, %k: tensor<1x4x200x40xf32>, %v: tensor<1x4x200x40xf32>, %t: tensor<4x16xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.attention %q, %k, %v rel_table(%t) pattern(#attn.causal) align = bottom_right mods = [#attn.t5_bias<buckets = 16, max_distance = 40, bidirectional = false>]
      : (tensor<1x4x97x40xf32>, tensor<1x4x200x40xf32>, tensor<1x4x200x40xf32>, tensor<4x16xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}

func.func @mask_and_bias(%q: tensor<2x2x50x32xf32>, %k: tensor<2x2x70x32xf32>, %v: tensor<2x2x70x32xf32>, %m: tensor<2x1x50x70xi1>, %b: tensor<1x2x50x70xf32>) -> tensor<2x2x50x32xf32> {
  %o = attn.attention %q, %k, %v mask(%m) bias(%b)
      : (tensor<2x2x50x32xf32>, tensor<2x2x70x32xf32>, tensor<2x2x70x32xf32>, tensor<2x1x50x70xi1>, tensor<1x2x50x70xf32>) -> tensor<2x2x50x32xf32>
  return %o : tensor<2x2x50x32xf32>
}

func.func @masked_nan_keys(%q: tensor<1x4x60x32xf32>, %k: tensor<1x2x80x32xf32>, %v: tensor<1x2x80x32xf32>) -> tensor<1x4x60x32xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x4x60x32xf32>, tensor<1x2x80x32xf32>, tensor<1x2x80x32xf32>) -> tensor<1x4x60x32xf32>
  return %o : tensor<1x4x60x32xf32>
}

func.func @per_key_bias_causal(%q: tensor<1x4x60x32xf32>, %k: tensor<1x2x60x32xf32>, %v: tensor<1x2x60x32xf32>, %b: tensor<1x1x1x60xf32>) -> tensor<1x4x60x32xf32> {
  %o = attn.attention %q, %k, %v bias(%b) pattern(#attn.causal)
      : (tensor<1x4x60x32xf32>, tensor<1x2x60x32xf32>, tensor<1x2x60x32xf32>, tensor<1x1x1x60xf32>) -> tensor<1x4x60x32xf32>
  return %o : tensor<1x4x60x32xf32>
}

func.func @shaw_gqa(%q: tensor<2x4x45x32xf32>, %k: tensor<2x2x70x32xf32>, %v: tensor<2x2x70x32xf32>, %t: tensor<4x17xf32>) -> tensor<2x4x45x32xf32> {
  %o = attn.attention %q, %k, %v rel_table(%t) align = bottom_right mods = [#attn.shaw_bias<max_distance = 8>]
      : (tensor<2x4x45x32xf32>, tensor<2x2x70x32xf32>, tensor<2x2x70x32xf32>, tensor<4x17xf32>) -> tensor<2x4x45x32xf32>
  return %o : tensor<2x4x45x32xf32>
}

func.func @bf16_causal_gqa(%q: tensor<1x4x97x64xbf16>, %k: tensor<1x2x97x64xbf16>, %v: tensor<1x2x97x64xbf16>) -> tensor<1x4x97x64xbf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x4x97x64xbf16>, tensor<1x2x97x64xbf16>, tensor<1x2x97x64xbf16>) -> tensor<1x4x97x64xbf16>
  return %o : tensor<1x4x97x64xbf16>
}

func.func @f16_dense(%q: tensor<2x2x45x40xf16>, %k: tensor<2x2x70x40xf16>, %v: tensor<2x2x70x40xf16>) -> tensor<2x2x45x40xf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<2x2x45x40xf16>, tensor<2x2x70x40xf16>, tensor<2x2x70x40xf16>) -> tensor<2x2x45x40xf16>
  return %o : tensor<2x2x45x40xf16>
}

func.func @score_region(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>, %w: tensor<2x97xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal) score {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %wj = tensor.extract %w[%h, %j] : tensor<2x97xf32>
      %half = arith.constant 0.5 : f32
      %t = math.tanh %x : f32
      %g = arith.mulf %t, %half : f32
      %s = arith.mulf %x, %wj : f32
      %y = arith.addf %s, %g : f32
      %one = arith.constant 1.0 : f32
      %e = arith.constant 0.75 : f32
      %c = arith.constant 0.05 : f32
      %xx = arith.mulf %x, %x : f32
      %r = arith.addf %xx, %one : f32
      %pw = math.powf %r, %e : f32
      %pc = arith.mulf %pw, %c : f32
      %z = arith.addf %y, %pc : f32
      attn.yield %z : f32
  } : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @region_constant(%q: tensor<1x2x50x32xf32>, %k: tensor<1x2x70x32xf32>, %v: tensor<1x2x70x32xf32>) -> tensor<1x2x50x32xf32> {
  %slopes = arith.constant dense<[0.25, -0.5]> : tensor<2xf32>
  %o = attn.attention %q, %k, %v score {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %m = tensor.extract %slopes[%h] : tensor<2xf32>
      %d = arith.subi %j, %i : index
      %di = arith.index_cast %d : index to i64
      %df = arith.sitofp %di : i64 to f32
      %a = math.absf %df : f32
      %p = arith.mulf %m, %a : f32
      %y = arith.subf %x, %p : f32
      attn.yield %y : f32
  } : (tensor<1x2x50x32xf32>, tensor<1x2x70x32xf32>, tensor<1x2x70x32xf32>) -> tensor<1x2x50x32xf32>
  return %o : tensor<1x2x50x32xf32>
}
