// bf16 attention with both products by vdpbf16ps (attn-to-cpu-kernels
// {bf16-dot}, which attn-run picks on CPUs with AVX-512 BF16 and no AMX;
// forced here with --bf16-products=dot): the f32 kernel's register blocks,
// each FMA a dot of 16 bf16 pairs with a broadcast pair, on the AMX path's
// pair layouts, the online softmax in f32 vectors. Held, like
// test/e2e/half.mlir, to twice the error of the naive attention computed in bf16 (S, P and O
// rounded to it) against the f64 reference on the same inputs: Q (scaled)
// and P are rounded to bf16 once each, as the naive attention rounds S and
// P, so a correct kernel stays under the bar while a dropped or doubled key
// tile, a misplaced pair or an unscaled accumulator lands far above it.
// The shapes are e2e/amx.mlir's (Inputs/bf16-products.mlir): odd key counts
// (a last key pair half past the keys), padded query tiles, head dims 64 to
// 256, Dv != D, GQA, patterns, segment ids, NaN in dropped cache slots.
// REQUIRES: avx512bf16
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=dot --check --entry=cross | FileCheck %s
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=dot --check --entry=causal_d128 | FileCheck %s
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=dot --check --entry=window_gqa_d96 | FileCheck %s
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=dot --check --entry=documents | FileCheck %s
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=dot --check --entry=bottom_right_d256 | FileCheck %s
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=dot --check --entry=alibi_causal | FileCheck %s
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=dot --check --entry=key_bias | FileCheck %s
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=dot --check --entry=window_block_lse | FileCheck %s --check-prefixes=CHECK,LSE
// CHECK: check: {{.*}} = 2 x the naive bf16 attention's {{.*}}: PASS
// LSE: check lse: {{.*}}: PASS
// The bar catches an output 2 % off.
// RUN: not attn-run %S/Inputs/bf16-products.mlir --bf16-products=dot --check --entry=cross --perturb-output=0.02 | FileCheck %s --check-prefix=PERTURBED
// PERTURBED: check: {{.*}}: FAIL
//
// A KV cache of 300 slots, the last 20 holding NaN: the 40 new queries at
// positions 240-279 never see them (they sit in partial and skipped key
// tiles, where 0 x NaN must not reach the sums).
// RUN: rm -rf %t && mkdir -p %t
// RUN: python3 %S/Inputs/plant-nonfinite.py %t 1 2 40 300 64 nan 280 281 282 283 284 285 286 287 288 289 290 291 292 293 294 295 296 297 298 299
// RUN: attn-run %S/Inputs/bf16-products.mlir --bf16-products=dot --entry=cache --input q=%t/q.npy --input k=%t/k.npy --input v=%t/v.npy --check | FileCheck %s

