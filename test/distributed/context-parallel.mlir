// Context-parallel attention under mpirun on this machine (docs/
// Distributed.md): each rank keeps its share of the tokens, runs ring or
// Ulysses attention, and rank 0 gathers the output, compares it with the
// same attention run whole in one process ("context parallel vs one
// process": both f32 flash attention, only the merge order differs, so the
// bar is the f32 tolerance 1e-5 of the output scale) and checks it against
// the f64 reference (1e-5, as in test/e2e/dense.mlir). One thread per rank:
// four ranks share two cores.
// REQUIRES: mpi
// Open MPI's allocations are not instrumented (leak reports at exit).
// UNSUPPORTED: sanitize
//
// Dense, on 2 and 4 ranks (ring), and Ulysses on 2 (P divides the heads).
// RUN: %mpirun -np 2 attn-run %s --entry=dense --context-parallel=ring --check --num-threads=1 | FileCheck %s --check-prefixes=CHECK,DENSE2
// RUN: %mpirun -np 4 attn-run %s --entry=dense --context-parallel=ring --check --num-threads=1 | FileCheck %s --check-prefixes=CHECK,DENSE4
// RUN: %mpirun -np 2 attn-run %s --entry=dense --context-parallel=ulysses --check --num-threads=1 | FileCheck %s
// DENSE2: rank 0/2 ring: rows [0, 256); K/V blocks from ranks [1] (1 received)
// DENSE2: rank 1/2 ring: rows [256, 512); K/V blocks from ranks [0] (1 received)
// DENSE4: rank 0/4 ring: rows [0, 128); K/V blocks from ranks [3, 2, 1] (3 received)
// DENSE4: rank 3/4 ring: rows [384, 512); K/V blocks from ranks [2, 1, 0] (3 received)
//
// Causal, zigzag: rank r holds chunks r and 7 - r of 8, so every rank has
// 2 x 8 (query chunk, key chunk) pairs of which the same 9 are kept:
// query chunk r sees key chunks 0..r, chunk 7 - r sees 0..7 - r.
// RUN: %mpirun -np 4 attn-run %s --entry=causal_gqa --context-parallel=zigzag --check --num-threads=1 | FileCheck %s --check-prefixes=CHECK,ZIGZAG
// RUN: %mpirun -np 2 attn-run %s --entry=causal_gqa --context-parallel=ring --check --num-threads=1 | FileCheck %s
// Ulysses with fewer key/value heads (2) than ranks (4): ranks 0-1 and 2-3
// get the same key/value head, each its own query head.
// RUN: %mpirun -np 4 attn-run %s --entry=causal_gqa --context-parallel=ulysses --check --num-threads=1 | FileCheck %s
// ZIGZAG: rank 0/4 zigzag: rows [0, 125) + [875, 1000); {{.*}}; 9 block pairs computed, 7 skipped
// ZIGZAG: rank 1/4 zigzag: rows [125, 250) + [750, 875); {{.*}}; 9 block pairs computed, 7 skipped
// ZIGZAG: rank 2/4 zigzag: rows [250, 375) + [625, 750); {{.*}}; 9 block pairs computed, 7 skipped
// ZIGZAG: rank 3/4 zigzag: rows [375, 500) + [500, 625); {{.*}}; 9 block pairs computed, 7 skipped
//
// Sliding window of 100 keys over 4 x 256 tokens: rank r's queries see
// keys from 256 r - 100 on, i.e. rank r - 1's block only. Rank 0 receives
// nothing, the others exactly one block, and rank 3 sends nothing.
// RUN: %mpirun -np 4 attn-run %s --entry=window --context-parallel=ring --check --num-threads=1 | FileCheck %s --check-prefixes=CHECK,WINDOW
// WINDOW: rank 0/4 ring: rows [0, 256); K/V blocks from ranks [] (0 received)
// WINDOW: rank 1/4 ring: rows [256, 512); K/V blocks from ranks [0] (1 received)
// WINDOW: rank 2/4 ring: rows [512, 768); K/V blocks from ranks [1] (1 received)
// WINDOW: rank 3/4 ring: rows [768, 1024); K/V blocks from ranks [2] (1 received); 0 bytes sent
//
// Document mask (packed documents, causal within each): attn-run's ids
// start a new document every 16 tokens on average, so a rank's queries
// share documents with the rank before it (the document across the
// boundary) and no other: rank 3 gets rank 2's block only, where plain
// causal attention needs ranks 0, 1 and 2.
// RUN: %mpirun -np 4 attn-run %s --entry=documents --context-parallel=ring --check --num-threads=1 | FileCheck %s --check-prefixes=CHECK,DOCS
// DOCS: rank 2/4 ring: rows [300, 450); K/V blocks from ranks [1] (1 received)
// DOCS: rank 3/4 ring: rows [450, 600); K/V blocks from ranks [2] (1 received)
// RUN: %mpirun -np 2 attn-run %s --entry=documents --context-parallel=zigzag --check --num-threads=1 | FileCheck %s
//
// Uneven splits: 1001 tokens over 4 ranks (251, 250, 250, 250) and 3 ranks.
// RUN: %mpirun -np 4 attn-run %s --entry=uneven --context-parallel=ring --check --num-threads=1 | FileCheck %s --check-prefixes=CHECK,UNEVEN
// RUN: %mpirun -np 3 attn-run %s --entry=uneven --context-parallel=zigzag --check --num-threads=1 | FileCheck %s
// RUN: %mpirun -np 4 attn-run %s --entry=uneven --context-parallel=ulysses --check --num-threads=1 | FileCheck %s
// UNEVEN: rank 0/4 ring: rows [0, 251);
// UNEVEN: rank 1/4 ring: rows [251, 501);
//
// Distance-based mods see global positions: ALiBi with soft-capping.
// RUN: %mpirun -np 4 attn-run %s --entry=alibi --context-parallel=zigzag --check --num-threads=1 | FileCheck %s
//
// What cannot be split is refused, on every rank, with the reason.
// RUN: not %mpirun -np 2 attn-run %s --entry=alibi --context-parallel=ulysses --num-threads=1 2>&1 | FileCheck %s --check-prefix=ULYSSES-MODS
// ULYSSES-MODS: score mods are per head: they cannot run on a slice of the heads (Ulysses); use the ring
// RUN: not %mpirun -np 3 attn-run %s --entry=causal_gqa --context-parallel=ulysses --num-threads=1 2>&1 | FileCheck %s --check-prefix=ULYSSES-HEADS
// ULYSSES-HEADS: Ulysses needs the number of ranks (3) to divide the query heads (4) and to divide or be a multiple of the key/value heads (2); use the ring
// RUN: not %mpirun -np 2 attn-run %s --entry=global --context-parallel=ring --num-threads=1 2>&1 | FileCheck %s --check-prefix=GLOBAL
// GLOBAL: context-parallel attention needs a pattern that depends on j - i alone
//
// CHECK: context parallel vs one process: max abs difference {{.*}}, scaled {{(0\.00e\+00|[0-9.]+e-(0[6-9]|[1-9][0-9]))$}}
// CHECK: check: {{.*}}: PASS

func.func @dense(%q: tensor<1x2x512x64xf32>, %k: tensor<1x2x512x64xf32>,
                 %v: tensor<1x2x512x64xf32>) -> tensor<1x2x512x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x512x64xf32>, tensor<1x2x512x64xf32>, tensor<1x2x512x64xf32>)
      -> tensor<1x2x512x64xf32>
  return %o : tensor<1x2x512x64xf32>
}

func.func @causal_gqa(%q: tensor<1x4x1000x64xf32>, %k: tensor<1x2x1000x64xf32>,
                      %v: tensor<1x2x1000x64xf32>) -> tensor<1x4x1000x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x4x1000x64xf32>, tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>)
      -> tensor<1x4x1000x64xf32>
  return %o : tensor<1x4x1000x64xf32>
}

func.func @window(%q: tensor<1x4x1024x64xf32>, %k: tensor<1x4x1024x64xf32>,
                  %v: tensor<1x4x1024x64xf32>) -> tensor<1x4x1024x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.window<left = 100, right = 0>)
      : (tensor<1x4x1024x64xf32>, tensor<1x4x1024x64xf32>, tensor<1x4x1024x64xf32>)
      -> tensor<1x4x1024x64xf32>
  return %o : tensor<1x4x1024x64xf32>
}

func.func @documents(%q: tensor<2x2x600x32xf32>, %k: tensor<2x2x600x32xf32>,
                     %v: tensor<2x2x600x32xf32>, %ids: tensor<2x600xi32>)
    -> tensor<2x2x600x32xf32> {
  %o = attn.attention %q, %k, %v segments(%ids, %ids)
      pattern(#attn.and<[#attn.causal, #attn.segments]>)
      : (tensor<2x2x600x32xf32>, tensor<2x2x600x32xf32>, tensor<2x2x600x32xf32>,
         tensor<2x600xi32>, tensor<2x600xi32>) -> tensor<2x2x600x32xf32>
  return %o : tensor<2x2x600x32xf32>
}

func.func @uneven(%q: tensor<1x4x1001x48xf32>, %k: tensor<1x4x1001x48xf32>,
                  %v: tensor<1x4x1001x40xf32>) -> tensor<1x4x1001x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x4x1001x48xf32>, tensor<1x4x1001x48xf32>, tensor<1x4x1001x40xf32>)
      -> tensor<1x4x1001x40xf32>
  return %o : tensor<1x4x1001x40xf32>
}

func.func @alibi(%q: tensor<1x4x512x64xf32>, %k: tensor<1x4x512x64xf32>,
                 %v: tensor<1x4x512x64xf32>) -> tensor<1x4x512x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      mods = [#attn.softcap<cap = 30.0>, #attn.alibi<max_bias = 8.0>]
      : (tensor<1x4x512x64xf32>, tensor<1x4x512x64xf32>, tensor<1x4x512x64xf32>)
      -> tensor<1x4x512x64xf32>
  return %o : tensor<1x4x512x64xf32>
}

func.func @global(%q: tensor<1x2x64x32xf32>, %k: tensor<1x2x64x32xf32>,
                  %v: tensor<1x2x64x32xf32>) -> tensor<1x2x64x32xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.or<[#attn.causal, #attn.global<[0]>]>)
      : (tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>)
      -> tensor<1x2x64x32xf32>
  return %o : tensor<1x2x64x32xf32>
}
