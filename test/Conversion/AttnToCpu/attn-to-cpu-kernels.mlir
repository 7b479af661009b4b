// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx2 --attn-tile=kv-tile=0 --attn-to-cpu-kernels --canonicalize | FileCheck %s --check-prefixes=CHECK,AVX2
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx512 --attn-tile=kv-tile=0 --attn-to-cpu-kernels --canonicalize | FileCheck %s --check-prefixes=CHECK,AVX512
// The conversion consumes the tiled form: what attn-tile cut into other
// tiles than the kernel plan's stays for attn-lower-online-attention.
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx512 --attn-tile="q-tile=32 kv-tile=128 for-target=false" --attn-to-cpu-kernels | FileCheck %s --check-prefix=OTHER

// The tiled attention becomes a forall over (head, query tile) calling an
// outlined tile function on buffers (the lowering of attn.online_attention
// and attn.finalize_tile); the result is the output buffer as a tensor.
// CHECK-LABEL: func.func private @dense__attn_cpu_flash_tile
// CHECK-SAME: (%[[Q:.*]]: memref<1x4x97x64xf32>, %[[K:.*]]: memref<1x2x100x64xf32>, %[[V:.*]]: memref<1x2x100x64xf32>, %[[O:.*]]: memref<1x4x97x64xf32>, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index)
// Scratch lives in the call's frame: packed Q^T, S^T, acc^T, m, l.
// AVX2:   memref.alloca() {alignment = 64 : i64} : memref<64x24xf32>
// AVX2:   memref.alloca() {alignment = 64 : i64} : memref<128x24xf32>
// AVX512: memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// AVX512: memref.alloca() {alignment = 64 : i64} : memref<128x64xf32>
// Whole query tiles (tq = TQ; the head dim is whole vectors) pack Q^T in
// blocks of lanes x lanes: lanes rows of Q transposed in registers,
// log2(lanes) stages of shuffle pairs, scaled, stored as columns of Q^T.
// Partial tiles (the last one here) go element by element.
// CHECK: %[[WHOLE:.*]] = arith.cmpi eq, %[[TQ:.*]], %c{{24|64}} : index
// CHECK-NEXT: scf.if %[[WHOLE]] {
// AVX2-COUNT-8: vector.load %[[Q]]{{.*}} : memref<1x4x97x64xf32>, vector<8xf32>
// AVX2-COUNT-24: vector.shuffle
// AVX512-COUNT-16: vector.load %[[Q]]{{.*}} : memref<1x4x97x64xf32>, vector<16xf32>
// AVX512-COUNT-64: vector.shuffle
// CHECK: arith.mulf
// AVX2: vector.store %{{.*}} : memref<64x24xf32>, vector<8xf32>
// AVX512: vector.store %{{.*}} : memref<64x64xf32>, vector<16xf32>
// CHECK: } else {
// CHECK: memref.load %[[Q]]
// CHECK: memref.store %{{.*}} : memref<64x{{24|64}}xf32>
// The score micro-kernel: (4 rows x 3 | 6 rows x 4) vectors accumulated
// over D.
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(
// AVX2-COUNT-3: vector.load {{.*}} : memref<64x24xf32>, vector<8xf32>
// AVX512-COUNT-4: vector.load {{.*}} : memref<64x64xf32>, vector<16xf32>
// CHECK: memref.load %[[K]]
// CHECK: vector.broadcast
// CHECK: vector.fma
// Online softmax: vertical max (x > max ? x : max, one vmaxps; NaN scores
// reach the row through exp), then exp(s - max) as 2^y: a polynomial in
// the fraction times 2^round(y) built from exponent bits (no math.exp).
// CHECK: %[[GT:.*]] = arith.cmpf ogt, %[[X:.*]], %[[MX:.*]] : vector<{{8|16}}xf32>
// CHECK: arith.select %[[GT]], %[[X]], %[[MX]]
// CHECK-NOT: math.exp
// CHECK: arith.shli %{{.*}} : vector<{{8|16}}xi32>
// CHECK: arith.bitcast %{{.*}} : vector<{{8|16}}xi32> to vector<{{8|16}}xf32>
// The accumulator update reads V.
// CHECK: memref.load %[[V]]
// CHECK: vector.fma
// Whole tiles store O in blocks too: acc^T times 1 / l per query lane,
// transposed in registers, stored as rows of O; partial tiles row by row.
// Rows that kept nothing (l = 0) are stored as 0.
// CHECK: %[[WHOLEOUT:.*]] = arith.cmpi eq, %[[TQ]], %c{{24|64}} : index
// CHECK-NEXT: scf.if %[[WHOLEOUT]] {
// CHECK: %[[EMPTY:.*]] = arith.cmpf oeq, %{{.*}} : vector<{{8|16}}xf32>
// CHECK: %[[INV:.*]] = arith.divf %{{.*}} : vector<{{8|16}}xf32>
// CHECK: arith.select %[[EMPTY]], %{{.*}}, %[[INV]]
// AVX2-COUNT-24: vector.shuffle
// AVX512-COUNT-64: vector.shuffle
// CHECK: vector.store %{{.*}}, %[[O]]
// CHECK: } else {
// CHECK: arith.cmpf oeq
// CHECK: memref.store {{.*}}, %[[O]]
// CHECK-LABEL: func.func @dense
// CHECK: %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x4x97x64xf32>
// AVX2:   scf.forall (%[[H:.*]], %[[T:.*]]) in (4, 5)
// AVX512: scf.forall (%[[H:.*]], %[[T:.*]]) in (4, 2)
// CHECK:   func.call @dense__attn_cpu_flash_tile({{.*}}, %[[OUT]], %c0, %[[H]], %[[T]])
// CHECK: bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NOT: attn.attention
// CHECK-NOT: attn.online_attention
// CHECK-NOT: attn.finalize_tile
// OTHER-LABEL: func.func @dense
// OTHER: attn.online_attention {{.*}} query_tile = 32 key_tile = 128
// OTHER: attn.finalize_tile
// OTHER-NOT: func.call
func.func @dense(%q: tensor<1x4x97x64xf32>, %k: tensor<1x2x100x64xf32>,
                 %v: tensor<1x2x100x64xf32>) -> tensor<1x4x97x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x4x97x64xf32>, tensor<1x2x100x64xf32>, tensor<1x2x100x64xf32>)
      -> tensor<1x4x97x64xf32>
  return %o : tensor<1x4x97x64xf32>
}

// -----

// Causal with static sizes: the key tiles of each query tile come from a
// compile-time schedule, CSR tables of row starts and entries (key tile * 2
// + 1 if partial). By hand for L = 300, key tile 128: query tile t (rows
// [TQ t, TQ t + TQ)) keeps key tile k iff 128 k <= TQ t + TQ - 1, and
// k is full iff 128 k + 127 <= TQ t.
//   TQ = 24: tiles 0-4 visit {0p}; 5 {0p,1p}; 6-9 {0f,1p}; 10 {0f,1p,2p};
//            11-12 {0f,1f,2p}.
//   TQ = 64: 0-1 {0p}; 2-3 {0f,1p}; 4 {0f,1f,2p}.
// AVX2: memref.global "private" constant @causal__attn_tiles_rows : memref<14xi32> = dense<[0, 1, 2, 3, 4, 5, 7, 9, 11, 13, 15, 18, 21, 24]>
// AVX2: memref.global "private" constant @causal__attn_tiles_entries : memref<24xi32> = dense<[1, 1, 1, 1, 1, 1, 3, 0, 3, 0, 3, 0, 3, 0, 3, 0, 3, 5, 0, 2, 5, 0, 2, 5]>
// AVX512: memref.global "private" constant @causal__attn_tiles_rows : memref<6xi32> = dense<[0, 1, 2, 4, 6, 9]>
// AVX512: memref.global "private" constant @causal__attn_tiles_entries : memref<9xi32> = dense<[1, 1, 0, 3, 0, 3, 0, 2, 5]>
// CHECK-LABEL: func.func private @causal__attn_cpu_flash_tile
// CHECK-SAME: %[[T:[a-z0-9]+]]: index)
// CHECK: %[[ROWS:.*]] = memref.get_global @causal__attn_tiles_rows
// CHECK: %[[ENTRIES:.*]] = memref.get_global @causal__attn_tiles_entries
// CHECK: memref.load %[[ROWS]][%[[T]]]
// CHECK: scf.for %[[E:.*]] = %{{.*}} to %{{.*}} step %c1 {
// CHECK:   %[[CODE:.*]] = memref.load %[[ENTRIES]][%[[E]]]
// CHECK:   %[[PARTIAL:.*]] = arith.cmpi ne
// No run-time emptiness test: every listed tile runs.
// CHECK-NOT: scf.if
// CHECK:     vector.fma
// CHECK:     scf.if %[[PARTIAL]] {
// The pattern is evaluated for a vector of queries (i32 lanes) against one
// key.
// CHECK:       arith.cmpi sle, %{{.*}}, %{{.*}} : vector<{{8|16}}xi32>
// CHECK:       arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<{{8|16}}xi1>, vector<{{8|16}}xf32>
func.func @causal(%q: tensor<1x1x300x64xf32>, %k: tensor<1x1x300x64xf32>,
                  %v: tensor<1x1x300x64xf32>) -> tensor<1x1x300x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x1x300x64xf32>, tensor<1x1x300x64xf32>, tensor<1x1x300x64xf32>)
      -> tensor<1x1x300x64xf32>
  return %o : tensor<1x1x300x64xf32>
}

// -----

// Dynamic lengths: every key tile is classified at run time; empty ones
// are skipped, partial ones masked (canonicalization folds "not empty" /
// "not full" into the comparisons). Positions of unknown size are compared
// on i64 lanes (i32 could wrap).
// CHECK-LABEL: func.func private @causal_dynamic__attn_cpu_flash_tile
// CHECK-NOT: memref.get_global
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c128 {
// CHECK:   %[[PARTIAL:.*]] = arith.cmpi sgt
// CHECK:   %[[NONEMPTY:.*]] = arith.cmpi sle
// CHECK:   scf.if %[[NONEMPTY]] {
// CHECK:     vector.fma
// CHECK:     scf.if %[[PARTIAL]] {
// CHECK:       arith.cmpi sle, %{{.*}}, %{{.*}} : vector<{{8|16}}xi64>
func.func @causal_dynamic(%q: tensor<1x1x?x64xf32>, %k: tensor<1x1x?x64xf32>,
                          %v: tensor<1x1x?x64xf32>) -> tensor<1x1x?x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x1x?x64xf32>, tensor<1x1x?x64xf32>, tensor<1x1x?x64xf32>)
      -> tensor<1x1x?x64xf32>
  return %o : tensor<1x1x?x64xf32>
}

// -----

// Random blocks depend on the head: one schedule per head (2 heads x 5 or
// 2 query tiles + 1 row starts). The key tile shrinks to the block (32) so
// that a tile lies in one key block, and partial tiles look the table up
// once per query lane.
// AVX2: memref.global "private" constant @bigbird__attn_tiles_rows : memref<11xi32>
// AVX512: memref.global "private" constant @bigbird__attn_tiles_rows : memref<5xi32>
// CHECK-LABEL: func.func private @bigbird__attn_cpu_flash_tile
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<32x{{24|64}}xf32>
// CHECK: scf.if
// CHECK: tensor.extract %{{.*}} : tensor<2x4x1xi32>
// CHECK: vector.from_elements {{.*}} : vector<{{8|16}}xi1>
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<{{8|16}}xi1>, vector<{{8|16}}xf32>
func.func @bigbird(%q: tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32> {
  %o = attn.attention %q, %q, %q
      pattern(#attn.or<[#attn.window<left = 8, right = 8>,
                        #attn.random_blocks<block = 32, count = 1, seed = 7>]>)
      : (tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>)
      -> tensor<1x2x100x16xf32>
  return %o : tensor<1x2x100x16xf32>
}

// -----

// Document masks: the id buffers are passed to the tile function; the query
// ids are gathered once per query tile, each key tile compares id ranges
// (min / max) to skip or mask, and partial tiles compare ids lane-wise
// (L = 50: two key tiles of 32).
// CHECK-LABEL: func.func private @documents__attn_cpu_flash_tile
// CHECK-SAME: %[[QIDS:[a-z0-9]+]]: memref<2x50xi32>, %[[KIDS:[a-z0-9]+]]: memref<2x50xi32>)
// CHECK: memref.load %[[QIDS]]
// CHECK: vector.from_elements {{.*}} : vector<{{8|16}}xi64>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (i64, i64)
// CHECK:   memref.load %[[QIDS]]
// CHECK: scf.for %{{.*}} = %c0 to %c50 step %c32 {
// CHECK:   scf.for {{.*}} iter_args({{.*}}) -> (i64, i64)
// CHECK:     memref.load %[[KIDS]]
// CHECK:     arith.minsi {{.*}} : i64
// CHECK:   scf.if
// CHECK:     arith.cmpi eq, %{{.*}}, %{{.*}} : vector<{{8|16}}xi64>
// CHECK-LABEL: func.func @documents
// CHECK: scf.forall
// CHECK: func.call @documents__attn_cpu_flash_tile({{.*}}, %{{.*}}, %{{.*}}) :
func.func @documents(%q: tensor<2x1x50x16xf32>, %ids: tensor<2x50xi32>)
    -> tensor<2x1x50x16xf32> {
  %o = attn.attention %q, %q, %q segments(%ids, %ids) pattern(#attn.segments)
      : (tensor<2x1x50x16xf32>, tensor<2x1x50x16xf32>, tensor<2x1x50x16xf32>,
         tensor<2x50xi32>, tensor<2x50xi32>) -> tensor<2x1x50x16xf32>
  return %o : tensor<2x1x50x16xf32>
}

// -----

// What the fast path lacks (dense mask / bias operands) stays in the tiled
// form for attn-lower-online-attention.
// CHECK-LABEL: func.func @with_bias
// CHECK: attn.online_attention {{.*}} bias(
// CHECK-NOT: func.call
func.func @with_bias(%q: tensor<1x1x8x16xf32>, %b: tensor<1x1x8x8xf32>)
    -> tensor<1x1x8x16xf32> {
  %o = attn.attention %q, %q, %q bias(%b)
      : (tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>,
         tensor<1x1x8x8xf32>) -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}

// -----

// A per-key bias runs in the kernels: the tile function takes it after its
// indices; per key row one scalar, broadcast over the query lanes and added
// after the scores; the smallest bias of the tile (-inf drops a key)
// decides whether V's update is guarded. A bias shared by the heads
// [B, 1, 1, Lk] keeps the decoding kernel (the group's heads packed in the
// lanes read the same scalar); one per head [B, Hq, 1, Lk] takes the
// per-query-tile kernel.
// CHECK-LABEL: func.func private @key_bias__attn_cpu_group_tile
// CHECK-SAME: %[[BATCH:[a-z0-9]+]]: index, %{{[a-z0-9]+}}: index, %{{[a-z0-9]+}}: index, %[[BIAS:[a-z0-9]+]]: memref<2x1x1x40xf32>)
// CHECK: %[[MIN:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %cst{{.*}}) -> (f32)
// CHECK:   %[[B:.*]] = memref.load %[[BIAS]][%[[BATCH]], %c0, %c0, %{{.*}}] : memref<2x1x1x40xf32>
// CHECK:   %[[LANES:.*]] = vector.broadcast %[[B]] : f32 to vector<{{8|16}}xf32>
// CHECK:   arith.addf %{{.*}}, %[[LANES]] : vector<{{8|16}}xf32>
// CHECK:   arith.minimumf %[[ACC]], %[[B]] : f32
// CHECK: arith.cmpf oeq, %[[MIN]], %cst{{.*}} : f32
// CHECK-LABEL: func.func @key_bias
// CHECK-NOT: attn.online_attention
func.func @key_bias(%q: tensor<2x4x1x16xf32>, %k: tensor<2x2x40x16xf32>,
                    %b: tensor<2x1x1x40xf32>) -> tensor<2x4x1x16xf32> {
  %o = attn.attention %q, %k, %k bias(%b)
      : (tensor<2x4x1x16xf32>, tensor<2x2x40x16xf32>, tensor<2x2x40x16xf32>,
         tensor<2x1x1x40xf32>) -> tensor<2x4x1x16xf32>
  return %o : tensor<2x4x1x16xf32>
}

// -----

// A dynamic batch dim of the bias broadcasts when it is 1 at run time.
// CHECK-LABEL: func.func private @dynamic_bias__attn_cpu_group_tile
// CHECK-SAME: %[[BATCH:[a-z0-9]+]]: index, %{{[a-z0-9]+}}: index, %{{[a-z0-9]+}}: index, %[[BIAS:[a-z0-9]+]]: memref<?x1x1x?xf32>)
// CHECK: %[[SIZE:.*]] = memref.dim %[[BIAS]], %c0 : memref<?x1x1x?xf32>
// CHECK: %[[ONE:.*]] = arith.cmpi eq, %[[SIZE]], %c1 : index
// CHECK: %[[ROW:.*]] = arith.select %[[ONE]], %c0, %[[BATCH]] : index
// CHECK: memref.load %[[BIAS]][%[[ROW]], %c0, %c0, %{{.*}}] : memref<?x1x1x?xf32>
func.func @dynamic_bias(%q: tensor<?x4x1x16xf32>, %k: tensor<?x2x?x16xf32>,
                        %b: tensor<?x1x1x?xf32>) -> tensor<?x4x1x16xf32> {
  %o = attn.attention %q, %k, %k bias(%b)
      : (tensor<?x4x1x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>,
         tensor<?x1x1x?xf32>) -> tensor<?x4x1x16xf32>
  return %o : tensor<?x4x1x16xf32>
}

// -----

// CHECK-LABEL: func.func private @head_bias__attn_cpu_flash_tile
// CHECK-SAME: %[[BATCH:[a-z0-9]+]]: index, %[[HEAD:[a-z0-9]+]]: index, %{{[a-z0-9]+}}: index, %[[BIAS:[a-z0-9]+]]: memref<2x4x1x40xf32>)
// CHECK: memref.load %[[BIAS]][%[[BATCH]], %[[HEAD]], %c0, %{{.*}}] : memref<2x4x1x40xf32>
// CHECK-NOT: attn_cpu_group_tile
// CHECK-LABEL: func.func @head_bias
func.func @head_bias(%q: tensor<2x4x1x16xf32>, %k: tensor<2x2x40x16xf32>,
                     %b: tensor<2x4x1x40xf32>) -> tensor<2x4x1x16xf32> {
  %o = attn.attention %q, %k, %k bias(%b)
      : (tensor<2x4x1x16xf32>, tensor<2x2x40x16xf32>, tensor<2x2x40x16xf32>,
         tensor<2x4x1x40xf32>) -> tensor<2x4x1x16xf32>
  return %o : tensor<2x4x1x16xf32>
}

// -----

// T5 relative bias in the kernel: the bucket of each lane's distance comes
// from a compile-time table and the bias from the rel_table operand, both
// gathered per query lane.
// CHECK-LABEL: func.func private @t5__attn_cpu_flash_tile
// CHECK-SAME: %[[TABLE:[a-z0-9]+]]: memref<2x32xf32>)
// CHECK: %[[BUCKETS:.*]] = memref.get_global @t5__attn_mod_table
// CHECK: vector.gather %[[BUCKETS]][%c0] [%{{.*}}], %{{.*}}, %{{.*}} : memref<65xf32>, vector<{{8|16}}xindex>
// CHECK: vector.gather %[[TABLE]][%{{.*}}, %c0] [%{{.*}}], %{{.*}}, %{{.*}} : memref<2x32xf32>, vector<{{8|16}}xindex>
// One bucket table (65 distances 0..64), shared by all lanes and vectors.
// CHECK: memref.global "private" constant @t5__attn_mod_table : memref<65xf32>
// CHECK-NOT: memref.global
// CHECK-LABEL: func.func @t5
// CHECK-NOT: attn.attention
func.func @t5(%q: tensor<1x2x64x16xf32>, %t: tensor<2x32xf32>)
    -> tensor<1x2x64x16xf32> {
  %o = attn.attention %q, %q, %q rel_table(%t)
      mods = [#attn.t5_bias<buckets = 32, max_distance = 64, bidirectional = true>]
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>,
         tensor<2x32xf32>) -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}

// -----

// Lane-wise score mods run in the kernel: ALiBi's slope for the tile's head
// comes from a constant table and is broadcast over the query lanes.
// CHECK-LABEL: func.func private @alibi__attn_cpu_flash_tile
// CHECK: vector.fma
// CHECK: tensor.extract %{{.*}}[%{{.*}}] : tensor<2xf32>
// CHECK: vector.broadcast {{.*}} : f32 to vector<{{8|16}}xf32>
// CHECK: math.absf {{.*}} : vector<{{8|16}}xf32>
// CHECK: math.tanh {{.*}} : vector<{{8|16}}xf32>
func.func @alibi(%q: tensor<1x2x64x16xf32>) -> tensor<1x2x64x16xf32> {
  %o = attn.attention %q, %q, %q pattern(#attn.causal)
      mods = [#attn.alibi<max_bias = 8.0>, #attn.softcap<cap = 30.0>]
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}

// -----

// Block patterns of 64 rows on 24-row query tiles: the tiles restart at
// every block (24 + 24 + 16 rows), so that none straddles two query blocks:
// 2 blocks x 3 tiles for L = 100. 64-row AVX-512 tiles align already (2).
// CHECK-LABEL: func.func private @layout__attn_cpu_flash_tile
// AVX2: arith.divui %{{.*}}, %c3 : index
// AVX2: arith.remui %{{.*}}, %c3 : index
// CHECK-LABEL: func.func @layout
// AVX2: scf.forall (%{{.*}}) in (6)
// AVX512: scf.forall (%{{.*}}) in (2)
func.func @layout(%q: tensor<1x1x100x16xf32>) -> tensor<1x1x100x16xf32> {
  %o = attn.attention %q, %q, %q
      pattern(#attn.block_layout<block = 64, layout = dense<[[[1, 0], [1, 1]]]>
                                 : tensor<1x2x2xi1>>)
      : (tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>)
      -> tensor<1x1x100x16xf32>
  return %o : tensor<1x1x100x16xf32>
}

// -----

// A pattern constant past 2^30 (here 2^32 + 1) makes the masks use i64
// lanes: on i32 the stride would wrap to 1 and keep every key.
// CHECK-LABEL: func.func private @strided_wide__attn_cpu_flash_tile
// (The exp's exponent bits are i32 lanes too, so only the mask's integer
// operations are excluded.)
// CHECK: arith.remsi %{{.*}}, %{{.*}} : vector<{{8|16}}xi64>
// CHECK-NOT: arith.{{(remsi|addi|subi|muli|cmpi).*}}xi32>
// CHECK: return
func.func @strided_wide(%q: tensor<1x1x100x64xf32>, %k: tensor<1x1x100x64xf32>,
                        %v: tensor<1x1x100x64xf32>) -> tensor<1x1x100x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.strided<stride = 4294967297>)
      : (tensor<1x1x100x64xf32>, tensor<1x1x100x64xf32>, tensor<1x1x100x64xf32>)
      -> tensor<1x1x100x64xf32>
  return %o : tensor<1x1x100x64xf32>
}

// -----

// Partial tiles guard the P V update lane by lane: a dropped key has weight
// 0, but 0 * V is NaN when V holds NaN or inf there (an unused KV-cache
// slot), so lanes with weight 0 keep their sum. Full tiles take the plain
// FMA loop.
// CHECK-LABEL: func.func private @causal_guard__attn_cpu_flash_tile
// CHECK: scf.if %[[PARTIAL:.*]] {
// CHECK: %[[KEPT:.*]] = arith.cmpf one, %{{.*}}, %{{.*}} : vector<{{8|16}}xf32>
// CHECK: %[[SUM:.*]] = vector.fma
// CHECK: arith.select %[[KEPT]], %[[SUM]], %{{.*}} : vector<{{8|16}}xi1>, vector<{{8|16}}xf32>
// CHECK: } else {
// CHECK-NOT: arith.cmpf one
// CHECK: vector.fma
func.func @causal_guard(%q: tensor<1x1x100x64xf32>, %k: tensor<1x1x100x64xf32>,
                        %v: tensor<1x1x100x64xf32>) -> tensor<1x1x100x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x1x100x64xf32>, tensor<1x1x100x64xf32>, tensor<1x1x100x64xf32>)
      -> tensor<1x1x100x64xf32>
  return %o : tensor<1x1x100x64xf32>
}

// -----

// The lse result: the tile function takes the [B, Hq, Lq] buffer last and
// stores m + log l per row (-inf where l = 0); no packed-head kernel, even
// for a decoding shape.
// CHECK-LABEL: func.func private @lse_decode__attn_cpu_flash_tile
// CHECK-SAME: %[[LSE:[a-z0-9]+]]: memref<1x8x1xf32>)
// CHECK: %[[LOG:.*]] = math.log
// CHECK: %[[ROW:.*]] = arith.addf %{{.*}}, %[[LOG]] : f32
// CHECK: %[[VAL:.*]] = arith.select %{{.*}}, %{{.*}}, %[[ROW]] : f32
// CHECK: memref.store %[[VAL]], %[[LSE]]
// CHECK-LABEL: func.func @lse_decode
// CHECK-NOT: __attn_cpu_group_tile
// CHECK: return
func.func @lse_decode(%q: tensor<1x8x1x64xf32>, %k: tensor<1x2x300x64xf32>,
                      %v: tensor<1x2x300x64xf32>)
    -> (tensor<1x8x1x64xf32>, tensor<1x8x1xf32>) {
  %o, %l = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x8x1x64xf32>, tensor<1x2x300x64xf32>, tensor<1x2x300x64xf32>)
      -> (tensor<1x8x1x64xf32>, tensor<1x8x1xf32>)
  return %o, %l : tensor<1x8x1x64xf32>, tensor<1x8x1xf32>
}
