// bf16 attention with both products on AMX tiles (attn-to-cpu-kernels{amx},
// which attn-run turns on where the CPU has AMX and Linux grants the
// process its tile state): S^T = K Q^T and acc^T += V^T P^T by tdpbf16ps,
// the online softmax in f32 vectors. Held, like test/e2e/half.mlir, to
// twice the error of the naive attention computed in bf16 (S, P and O
// rounded to it) against the f64 reference on the same inputs: Q (scaled)
// and P are rounded to bf16 once each, as the naive attention rounds S and
// P, so a correct kernel stays under the bar while a dropped or doubled key
// tile, a misplaced pair or an unscaled accumulator lands far above it.
// The shapes (Inputs/bf16-products.mlir) cover what the tiles meet at their
// edges: key counts that are not whole key tiles or 16-row blocks (the last
// block read from a zero-padded copy), query tiles with padded rows, head
// dims of 2, 3, 4 and 8 tiles, Dv != D, GQA, a per-key bias, partial tiles
// of patterns (on the tiles when their values are finite), segment ids,
// and NaN in keys that a pattern drops (their tile's P V on guarded f32
// vectors: a zero weight times NaN would reach the sum; the cache case
// fails when that guard is skipped).
// REQUIRES: amx
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=amx --check --entry=cross | FileCheck %s
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=amx --check --entry=causal_d128 | FileCheck %s
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=amx --check --entry=window_gqa_d96 | FileCheck %s
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=amx --check --entry=documents | FileCheck %s
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=amx --check --entry=bottom_right_d256 | FileCheck %s
// The same without AMX (bf16 widened to f32 vectors) passes the same bar.
// RUN: attn-run %S/Inputs/bf16-products.mlir --check --entry=cross --bf16-products=widen | FileCheck %s
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=amx --check --entry=alibi_causal | FileCheck %s
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=amx --check --entry=key_bias | FileCheck %s
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=amx --check --entry=window_block_lse | FileCheck %s --check-prefixes=CHECK,LSE
// CHECK: check: {{.*}} = 2 x the naive bf16 attention's {{.*}}: PASS
// LSE: check lse: {{.*}}: PASS
// The bar catches an output 2 % off.
// RUN: not attn-run %S/Inputs/bf16-products.mlir --bf16-products=amx --check --entry=cross --perturb-output=0.02 | FileCheck %s --check-prefix=PERTURBED
// PERTURBED: check: {{.*}}: FAIL
//
// A KV cache of 300 slots, the last 20 holding NaN: the 40 new queries at
// positions 240-279 never see them (they sit in partial and skipped key
// tiles, where 0 x NaN must not reach the sums).
// RUN: rm -rf %t && mkdir -p %t
// RUN: python3 %S/Inputs/plant-nonfinite.py %t 1 2 40 300 64 nan 280 281 282 283 284 285 286 287 288 289 290 291 292 293 294 295 296 297 298 299
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=amx --entry=cache --input q=%t/q.npy --input k=%t/k.npy --input v=%t/v.npy --check | FileCheck %s

