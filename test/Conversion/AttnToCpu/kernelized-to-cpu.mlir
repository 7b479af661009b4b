// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx512 --attn-kernelized-to-cpu --canonicalize | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx2 --attn-kernelized-to-cpu --canonicalize | FileCheck %s --check-prefix=AVX2

// Non-causal elu + 1 with GQA 8:4: one call per (batch, key/value head)
// builds S [64, 64] and z [64], then one call per (batch, query head,
// block of 64 query rows) writes O. No tensor of features is materialized.
// CHECK-LABEL: func.func private @elu__attn_cpu_linear_state
// CHECK-SAME: (%[[K:.*]]: memref<2x4x900x64xf32>, %[[V:.*]]: memref<2x4x900x64xf32>, %[[S:.*]]: memref<?x?x64x64xf32>, %[[Z:.*]]: memref<?x?x64xf32>, %{{.*}}: memref<64x0xf32>, %[[SPLITS:.*]]: index, %[[B:.*]]: index, %{{.*}}: index, %[[SPLIT:.*]]: index)
// Key range `split` of `splits` (whole tiles of the 15), written to slot
// split * 2 + b of S and z.
// CHECK: %[[TILES:.*]] = arith.ceildivui %c15, %[[SPLITS]]
// CHECK: %[[PER:.*]] = arith.muli %[[TILES]], %c64
// CHECK: %[[FIRST:.*]] = arith.muli %[[SPLIT]], %[[PER]]
// CHECK: %[[BEGIN:.*]] = arith.minui %[[FIRST]], %c900
// CHECK: %[[LAST:.*]] = arith.addi %[[BEGIN]], %[[PER]]
// CHECK: %[[END:.*]] = arith.minui %[[LAST]], %c900
// CHECK: %[[SLOT0:.*]] = arith.muli %[[SPLIT]], %c2
// CHECK: %[[SLOT:.*]] = arith.addi %[[SLOT0]], %[[B]]
// CHECK: vector.store %{{.*}}, %[[S]][%[[SLOT]],
// CHECK: %[[PHI:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// Key tiles of 64 rows, the last one partial.
// CHECK: scf.for %[[J0:.*]] = %[[BEGIN]] to %[[END]] step %c64
// CHECK: arith.subi %[[END]], %[[J0]]
// CHECK: arith.minui %{{.*}}, %c64
// phi of the tile's rows into the scratch, its column sums carried in 4
// vectors; the next tile's V rows and the key rows two tiles ahead are
// prefetched into L2 (4 lines each), clamped to the last row.
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: arith.minui %{{.*}}, %c899
// CHECK-COUNT-4: memref.prefetch %[[V]]{{.*}}, read, locality<2>, data
// CHECK: arith.minui %{{.*}}, %c899
// CHECK-COUNT-4: memref.prefetch %[[K]]{{.*}}, read, locality<2>, data
// CHECK: vector.load %[[K]]
// CHECK: arith.cmpf ogt
// CHECK: math.exp
// CHECK: arith.select
// CHECK: vector.store %{{.*}}, %[[PHI]]
// z += the column sums.
// CHECK: vector.load %[[Z]]
// CHECK: vector.store %{{.*}}, %[[Z]]
// S's rows in register blocks of 6 rows x 4 vectors: per key 4 loads of
// V's row, 6 broadcasts of phi and 24 FMAs; the 4 rows left of 64 in one
// block of 4 (16 FMAs).
// CHECK: scf.for %{{.*}} = %c0 to %c60 step %c6
// CHECK-COUNT-24: vector.load %[[S]]
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-4: vector.load %[[V]]
// CHECK: memref.load %[[PHI]]
// CHECK-NEXT: vector.broadcast
// CHECK-COUNT-24: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-24: vector.store %{{.*}}, %[[S]]
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-16: vector.fma
// CHECK-NOT: vector.fma
// CHECK: return

// The output: query head h reads key/value head h / (8 / Hkv).
// CHECK-LABEL: func.func private @elu__attn_cpu_linear_output
// CHECK-SAME: (%[[Q:.*]]: memref<2x8x1000x64xf32>, %[[S2:.*]]: memref<?x?x64x64xf32>, %[[Z2:.*]]: memref<?x?x64xf32>, %[[O:.*]]: memref<2x8x1000x64xf32>, %{{.*}}: index, %[[HQ:.*]]: index, %{{.*}}: index)
// CHECK: %[[HKV:.*]] = memref.dim %[[S2]], %c1
// CHECK: %[[GROUP:.*]] = arith.divui %c8, %[[HKV]]
// CHECK: %[[HEAD:.*]] = arith.divui %[[HQ]], %[[GROUP]]
// CHECK: %[[PHIQ:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK: %[[DENS:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64xf32>
// phi(q) of the block's rows into the scratch (the next block's rows
// prefetched), then per row its dot with z.
// CHECK: scf.for
// CHECK-COUNT-4: memref.prefetch %[[Q]]
// CHECK: math.exp
// CHECK: vector.store %{{.*}}, %[[PHIQ]]
// CHECK: scf.for
// CHECK: vector.fma
// CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc>
// CHECK: memref.store %{{.*}}, %[[DENS]]
// O = phi S in blocks of 6 rows x 4 vectors over the 64 features, divided
// by the row's denominator and 0 where it is 0.
// CHECK: scf.for
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1
// CHECK-COUNT-4: vector.load %[[S2]][%{{.*}}, %[[HEAD]],
// CHECK-COUNT-24: vector.fma
// CHECK: memref.load %[[DENS]]
// CHECK: arith.cmpf oeq
// CHECK: arith.divf
// CHECK: arith.mulf
// CHECK: arith.select
// CHECK: vector.store %{{.*}}, %[[O]]

// The op becomes foralls calling them, with S and z in between: the
// state per (batch, key/value head, key range), as many ranges as the
// OpenMP runtime's threads ask for over 8 pairs (at most 15 / 4 tiles),
// then the ranges' S and z summed into the first slot.
// CHECK-LABEL: func.func @elu
// CHECK-NOT: attn.kernelized
// CHECK: %[[THREADS:.*]] = call @omp_get_max_threads()
// CHECK: %[[T:.*]] = arith.index_castui %[[THREADS]]
// CHECK: %[[WANTED:.*]] = arith.ceildivui %[[T]], %c8
// CHECK: %[[BOUND:.*]] = arith.minui %[[WANTED]], %c3
// CHECK: %[[RANGES:.*]] = arith.maxui %[[BOUND]], %c1
// CHECK: %[[SLOTS:.*]] = arith.muli %[[RANGES]], %c2
// CHECK: %[[STATE:.*]] = memref.alloc(%[[SLOTS]]) {alignment = 64 : i64} : memref<?x4x64x64xf32>
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (2, 4, %[[RANGES]])
// CHECK: func.call @elu__attn_cpu_linear_state
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (2, 4)
// CHECK: scf.for %{{.*}} = %c1 to %[[RANGES]] step %c1
// CHECK: arith.addf
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (2, 8, 16)
// CHECK: func.call @elu__attn_cpu_linear_output
// CHECK: bufferization.to_tensor

// With AVX2, blocks of 6 rows x 2 vectors (chunks of 16 columns of Dv).
// AVX2-LABEL: func.func private @elu__attn_cpu_linear_state
// AVX2: scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// AVX2: scf.for %{{.*}} = %c0 to %c60 step %c6
// AVX2-COUNT-12: vector.fma
// AVX2-LABEL: func.func @elu
// AVX2-NOT: attn.kernelized
func.func @elu(%q: tensor<2x8x1000x64xf32>, %k: tensor<2x4x900x64xf32>,
               %v: tensor<2x4x900x64xf32>) -> tensor<2x8x1000x64xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = elu_plus_one
      : (tensor<2x8x1000x64xf32>, tensor<2x4x900x64xf32>,
         tensor<2x4x900x64xf32>) -> tensor<2x8x1000x64xf32>
  return %o : tensor<2x8x1000x64xf32>
}

// -----

// ReLU features (no exp) with dynamic lengths; D = 40 is whole vectors of
// 8 but not of 16: the AVX-512 kernel leaves the op to the decomposition.
// CHECK-LABEL: func.func @relu_d40
// CHECK: attn.kernelized
// AVX2-LABEL: func.func private @relu_d40__attn_cpu_linear_state
// AVX2-NOT: math.exp
// AVX2: arith.maximumf
// AVX2-LABEL: func.func @relu_d40
// AVX2-NOT: attn.kernelized
func.func @relu_d40(%q: tensor<1x2x?x40xf32>, %k: tensor<1x2x?x40xf32>,
                    %v: tensor<1x2x?x40xf32>) -> tensor<1x2x?x40xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = relu
      : (tensor<1x2x?x40xf32>, tensor<1x2x?x40xf32>,
         tensor<1x2x?x40xf32>) -> tensor<1x2x?x40xf32>
  return %o : tensor<1x2x?x40xf32>
}

// -----

// Causal elu + 1 with GQA 4:2: one call per (batch, key/value head) walks
// the rows in chunks of 64. Per chunk: phi of its keys (rows past the
// keys zeroed) and its transpose through registers (16 x 16 blocks, 4
// butterfly stages of 16 shuffles); per query head of the group: phi of its
// queries, their dots with z, the scores phi(q) phi(k)^T masked to j <= i
// (row sums into the denominators), then O = phi(Q) S + scores V over the
// keys up to the block's last row; then S and z take the chunk.
// CHECK-LABEL: func.func private @causal__attn_cpu_linear_causal
// CHECK-SAME: (%[[Q:.*]]: memref<1x4x100x48xf32>, %[[K:.*]]: memref<1x2x100x48xf32>, %[[V:.*]]: memref<1x2x100x32xf32>, %[[S:.*]]: memref<?x?x48x32xf32>, %[[Z:.*]]: memref<?x?x48xf32>, %[[O:.*]]: memref<1x4x100x32xf32>, %{{.*}}: index, %{{.*}}: index)
// CHECK: %[[PHIK:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64x48xf32>
// CHECK: %[[PHIKT:.*]] = memref.alloca() {alignment = 64 : i64} : memref<48x64xf32>
// CHECK: %[[PHIQ:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64x48xf32>
// CHECK: %[[SCORES:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK: %[[DEN:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64xf32>
// CHECK: scf.for %[[C0:.*]] = %c0 to %c100 step %c64
// CHECK: vector.load %[[K]]
// CHECK: math.exp
// CHECK: vector.store %{{.*}}, %[[PHIK]]
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c16
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c48 step %c16
// CHECK-COUNT-16: vector.load %[[PHIK]]
// CHECK-COUNT-64: vector.shuffle
// CHECK-COUNT-16: vector.store %{{.*}}, %[[PHIKT]]
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1
// CHECK: vector.load %[[Q]]
// CHECK: vector.store %{{.*}}, %[[PHIQ]]
// CHECK: vector.reduction <add>
// CHECK: memref.store %{{.*}}, %[[DEN]]
// CHECK: vector.load %[[PHIKT]]
// CHECK: memref.load %[[PHIQ]]
// CHECK: vector.fma
// CHECK: arith.cmpi
// CHECK: arith.select
// CHECK: vector.store %{{.*}}, %[[SCORES]]
// CHECK: vector.reduction <add>
// CHECK: memref.store %{{.*}}, %[[DEN]]
// CHECK: vector.load %[[S]]
// CHECK: memref.load %[[PHIQ]]
// CHECK: vector.load %[[V]]
// CHECK: memref.load %[[SCORES]]
// CHECK: memref.load %[[DEN]]
// CHECK: arith.divf
// CHECK: vector.store %{{.*}}, %[[O]]
// CHECK: vector.store %{{.*}}, %[[Z]]
// CHECK: vector.store %{{.*}}, %[[S]]
// With fewer (batch, key/value head) pairs (2) than the OpenMP runtime's
// threads and 2 key chunks, the chunks run in parallel: each chunk's S and
// z (the state function, one key tile per range; slots chunk * B + b),
// their exclusive prefix sums (the total in slot 2), then the outputs per
// (key/value head, chunk); else the sequential call per pair.
// The parallel form's chunk function reads S and z of the chunks before
// at slot min(chunk, 2) * B + b (chunks past the keys: the total).
// CHECK-LABEL: func.func private @causal__attn_cpu_linear_causal_chunk
// CHECK-SAME: %[[CB:[^:]*]]: index, %{{.*}}: index, %[[CHUNK:[^:]*]]: index)
// CHECK: arith.muli %[[CHUNK]], %c64
// CHECK: %[[BEFORE:.*]] = arith.minui %[[CHUNK]], %c2
// CHECK: arith.addi %[[BEFORE]], %[[CB]]
// CHECK-LABEL: func.func @causal
// CHECK-NOT: attn.kernelized
// CHECK: %[[THREADS:.*]] = call @omp_get_max_threads()
// CHECK: %[[T:.*]] = arith.index_castui %[[THREADS]]
// CHECK: %[[PAR:.*]] = arith.cmpi ugt, %[[T]], %c2
// CHECK: %[[SLOTS:.*]] = arith.select %[[PAR]], %c3, %c1
// CHECK: memref.alloc(%[[SLOTS]]) {alignment = 64 : i64} : memref<?x2x48x32xf32>
// CHECK: scf.if %[[PAR]]
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (2, 2)
// CHECK-NEXT: func.call @causal__attn_cpu_linear_state({{.*}}, %c2, %c0,
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (2, 2)
// CHECK-NEXT: func.call @causal__attn_cpu_linear_causal_chunk
// CHECK: } else {
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK-NEXT: func.call @causal__attn_cpu_linear_causal(
// AVX2-LABEL: func.func private @causal__attn_cpu_linear_causal
// AVX2-COUNT-24: vector.shuffle
// AVX2-LABEL: func.func @causal
// AVX2-NOT: attn.kernelized
func.func @causal(%q: tensor<1x4x100x48xf32>, %k: tensor<1x2x100x48xf32>,
                  %v: tensor<1x2x100x32xf32>) -> tensor<1x4x100x32xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = elu_plus_one causal
      : (tensor<1x4x100x48xf32>, tensor<1x2x100x48xf32>,
         tensor<1x2x100x32xf32>) -> tensor<1x4x100x32xf32>
  return %o : tensor<1x4x100x32xf32>
}

// -----

// Causal FAVOR+ (32 features) on the same kernel: s W^T [48, 32] is written
// once before the calls; each chunk's key features are products with it,
// minus s^2 |k|^2 / 2, whose maximum joins the running one carried by the
// chunk loop; S and z are rescaled by exp(old - new) (1 when it did not
// grow); the query features subtract their row's maximum.
// CHECK-LABEL: func.func private @favor_causal__attn_cpu_linear_causal
// CHECK-SAME: %[[W:[^:]*]]: memref<48x32xf32>, %{{.*}}: index, %{{.*}}: index)
// CHECK: scf.for %{{.*}} = %c0 to %c100 step %c64 iter_args(%[[MAX:.*]] = %{{.*}}) -> (f32)
// CHECK: vector.load %[[W]]
// CHECK: vector.fma
// CHECK: vector.reduction <add>
// CHECK: arith.maximumf
// CHECK: %[[CHUNK:.*]] = vector.reduction <maximumf>
// CHECK: %[[NEW:.*]] = arith.maximumf %[[MAX]], %[[CHUNK]] : f32
// CHECK: math.exp
// CHECK: arith.cmpf oeq, %[[NEW]], %[[MAX]] : f32
// CHECK: arith.subf %[[MAX]], %[[NEW]] : f32
// CHECK: math.exp %{{.*}} : f32
// CHECK: vector.reduction <maximumf>
// CHECK: math.exp
// CHECK: scf.yield %[[NEW]] : f32
// CHECK-LABEL: func.func @favor_causal
// CHECK: %[[WT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<48x32xf32>
// CHECK: arith.mulf %{{.*}}, %cst
// CHECK: memref.store %{{.*}}, %[[WT]][%{{.*}}, %{{.*}}]
// CHECK: func.call @favor_causal__attn_cpu_linear_causal
// AVX2-LABEL: func.func @favor_causal
// AVX2-NOT: attn.kernelized
func.func @favor_causal(%q: tensor<1x2x100x48xf32>, %k: tensor<1x2x100x48xf32>,
                        %v: tensor<1x2x100x32xf32>, %w: tensor<32x48xf32>)
    -> tensor<1x2x100x32xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor causal
      : (tensor<1x2x100x48xf32>, tensor<1x2x100x48xf32>,
         tensor<1x2x100x32xf32>, tensor<32x48xf32>) -> tensor<1x2x100x32xf32>
  return %o : tensor<1x2x100x32xf32>
}

// -----

// RFA (16 projections, 32 features): products with s W^T [48, 16] into the
// first 16 columns of phi, then sin into them and cos into the next 16
// (times 1 / sqrt(16)), both summed into z.
// CHECK-LABEL: func.func private @rfa__attn_cpu_linear_state
// CHECK-SAME: %[[W:[^:]*]]: memref<48x16xf32>, %{{.*}}: index, %{{.*}}: index)
// CHECK: %[[PHI:.*]] = memref.alloca() {alignment = 64 : i64} : memref<64x32xf32>
// CHECK: vector.load %[[W]]
// CHECK: vector.fma
// CHECK: vector.store %{{.*}}, %[[PHI]][%{{.*}}, %c0]
// CHECK: %[[P:.*]] = vector.load %[[PHI]][%[[ROW:.*]], %c0]
// CHECK-NEXT: %[[SIN:.*]] = math.sin %[[P]]
// CHECK-NEXT: %[[SINS:.*]] = arith.mulf %[[SIN]], %[[NORM:.*]] :
// CHECK-NEXT: %[[COS:.*]] = math.cos %[[P]]
// CHECK-NEXT: %[[COSS:.*]] = arith.mulf %[[COS]], %[[NORM]] :
// CHECK-NEXT: vector.store %[[SINS]], %[[PHI]][%[[ROW]], %c0]
// CHECK-NEXT: vector.store %[[COSS]], %[[PHI]][%[[ROW]], %c16]
// CHECK-LABEL: func.func private @rfa__attn_cpu_linear_output
// CHECK: math.sin
// CHECK: math.cos
// 100 keys are too few to split: no thread count is asked for.
// CHECK-LABEL: func.func @rfa
// CHECK-NOT: attn.kernelized
// CHECK-NOT: omp_get_max_threads
// CHECK: func.call @rfa__attn_cpu_linear_state
// CHECK: func.call @rfa__attn_cpu_linear_output
// AVX2-LABEL: func.func @rfa
// AVX2-NOT: attn.kernelized
func.func @rfa(%q: tensor<1x2x100x48xf32>, %k: tensor<1x2x100x48xf32>,
               %v: tensor<1x2x100x32xf32>, %w: tensor<16x48xf32>)
    -> tensor<1x2x100x32xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = rfa
      : (tensor<1x2x100x48xf32>, tensor<1x2x100x48xf32>,
         tensor<1x2x100x32xf32>, tensor<16x48xf32>) -> tensor<1x2x100x32xf32>
  return %o : tensor<1x2x100x32xf32>
}

// -----

// Non-causal FAVOR+ runs as two softmax attentions (the decomposition).
// CHECK-LABEL: func.func @favor
// CHECK: attn.kernelized
// AVX2-LABEL: func.func @favor
// AVX2: attn.kernelized
func.func @favor(%q: tensor<1x2x100x48xf32>, %k: tensor<1x2x100x48xf32>,
                 %v: tensor<1x2x100x32xf32>, %w: tensor<32x48xf32>)
    -> tensor<1x2x100x32xf32> {
  %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor
      : (tensor<1x2x100x48xf32>, tensor<1x2x100x48xf32>,
         tensor<1x2x100x32xf32>, tensor<32x48xf32>) -> tensor<1x2x100x32xf32>
  return %o : tensor<1x2x100x32xf32>
}

// -----

// 64 chunk states of [1024, 1024] floats would take over 256 MiB: the
// causal form stays sequential whatever the threads (no thread count is
// asked, no parallel functions are built).
// CHECK-LABEL: func.func private @big_states__attn_cpu_linear_causal(
// CHECK-NOT: func.func private @big_states__attn_cpu_linear_state
// CHECK-NOT: func.func private @big_states__attn_cpu_linear_causal_chunk
// CHECK-LABEL: func.func @big_states
// CHECK-NOT: omp_get_max_threads
// CHECK: call @big_states__attn_cpu_linear_causal(
func.func @big_states(%q: tensor<1x2x4096x1024xf32>, %k: tensor<1x1x4096x1024xf32>,
                      %v: tensor<1x1x4096x1024xf32>) -> tensor<1x2x4096x1024xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = relu causal
      : (tensor<1x2x4096x1024xf32>, tensor<1x1x4096x1024xf32>,
         tensor<1x1x4096x1024xf32>) -> tensor<1x2x4096x1024xf32>
  return %o : tensor<1x2x4096x1024xf32>
}

// -----

// Head dims past 1024 would put the 64 x D phi scratches over 256 KiB of a
// worker thread's stack: left to the decomposition.
// CHECK-LABEL: func.func @wide
// CHECK: attn.kernelized
// AVX2-LABEL: func.func @wide
// AVX2: attn.kernelized
func.func @wide(%q: tensor<1x1x8x2048xf32>, %k: tensor<1x1x8x2048xf32>,
                %v: tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32> {
  %o = attn.kernelized %q, %k, %v feature_map = relu
      : (tensor<1x1x8x2048xf32>, tensor<1x1x8x2048xf32>,
         tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}
