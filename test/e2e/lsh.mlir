// attn.lsh (attn-decompose-lsh: hashing, the runtime's bucket sort, chunked
// attention) against the f64 reference (tooling/lib/ReferenceEfficient.cpp),
// which hashes in f64, sorts with std::stable_sort and evaluates each
// query's key set directly. Tolerance 1e-4 of the output scale: the keys
// are unit rows, so the scores stay ~1 and the f32 rounding of the softmax
// and of the round weights is ~1e-6 (observed below 5e-7). Hashing in f32
// and f64 could only disagree on a near tie of the rotated coordinates
// (differences ~1e-7); the seeded inputs here have none.
// RUN: attn-run %s --entry=odd_chunks --check --tolerance=1e-4 | FileCheck %s
// RUN: attn-run %s --entry=causal_rounds --check --tolerance=1e-4 | FileCheck %s
// RUN: attn-run %s --entry=batch_1025 --check --tolerance=1e-4 | FileCheck %s
// RUN: attn-run %s --entry=tiny_chunks_causal --check --tolerance=1e-4 | FileCheck %s
// CHECK: check: {{.*}}: PASS
// Ahead of time: the shared library links the runtime's counting sort.
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-compile %s --emit=so -o %t/liblsh.so
// RUN: attn-run %s --entry=odd_chunks --load=%t/liblsh.so --check --tolerance=1e-4 | FileCheck %s
//
// Property: with one bucket (zero rotations: every projection is 0 and the
// argmax takes bucket 0) and one chunk (chunk >= L), every query sees every
// other key, in each round alike, so LSH attention is dense softmax
// attention with K = the unit rows of qk and the diagonal removed (the
// score region below). 1e-5 absolute: the same f32 products summed in a
// different order.
// RUN: python3 %S/Inputs/make-matrix-npy.py tensor %t/qk.npy 11 1 2 97 40
// RUN: python3 %S/Inputs/make-matrix-npy.py tensor %t/v.npy 12 1 2 97 40
// RUN: python3 %S/Inputs/make-matrix-npy.py unit-rows %t/qk.npy %t/keys.npy
// RUN: python3 %S/Inputs/make-matrix-npy.py zeros %t/rotations.npy 3 40 2
// RUN: attn-run %s --entry=one_bucket --input qk=%t/qk.npy --input v=%t/v.npy --input rotations=%t/rotations.npy --output %t/lsh.npy --check | FileCheck %s
// RUN: attn-run %s --entry=dense_without_self --input q=%t/qk.npy --input k=%t/keys.npy --input v=%t/v.npy --output %t/dense.npy
// RUN: python3 %S/Inputs/compare-npy.py %t/lsh.npy %t/dense.npy 1e-5 | FileCheck %s --check-prefix=SAME
// SAME: max abs difference {{.*}}: SAME

// L = 97 in chunks of 16 (the last one has 1 row), D = 40, 2 rounds of 8
// buckets.
func.func @odd_chunks(%qk: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>,
                      %r: tensor<2x40x4xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.lsh %qk, %v rotations(%r) buckets = 8 rounds = 2 chunk = 16
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<2x40x4xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

// Causal, L = 1000, D = 64, 4 rounds of 16 buckets, chunks of 48.
func.func @causal_rounds(%qk: tensor<1x2x1000x64xf32>,
                         %v: tensor<1x2x1000x64xf32>,
                         %r: tensor<4x64x8xf32>) -> tensor<1x2x1000x64xf32> {
  %o = attn.lsh %qk, %v rotations(%r) buckets = 16 rounds = 4 chunk = 48
         causal
      : (tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>, tensor<4x64x8xf32>)
      -> tensor<1x2x1000x64xf32>
  return %o : tensor<1x2x1000x64xf32>
}

// B = 2, L = 1025, D = 64, Dv = 40, 32 buckets, one round, chunks of 64,
// explicit scale.
func.func @batch_1025(%qk: tensor<2x1x1025x64xf32>, %v: tensor<2x1x1025x40xf32>,
                      %r: tensor<1x64x16xf32>) -> tensor<2x1x1025x40xf32> {
  %o = attn.lsh %qk, %v rotations(%r) buckets = 32 rounds = 1 chunk = 64
         scale = 0.25
      : (tensor<2x1x1025x64xf32>, tensor<2x1x1025x40xf32>, tensor<1x64x16xf32>)
      -> tensor<2x1x1025x40xf32>
  return %o : tensor<2x1x1025x40xf32>
}

// Chunks of 1 and 64 buckets with causal masking: most queries have no key
// in a round, many in no round at all (they return their own value row).
func.func @tiny_chunks_causal(%qk: tensor<1x1x97x40xf32>,
                              %v: tensor<1x1x97x40xf32>,
                              %r: tensor<2x40x32xf32>)
    -> tensor<1x1x97x40xf32> {
  %o = attn.lsh %qk, %v rotations(%r) buckets = 64 rounds = 2 chunk = 1
         causal
      : (tensor<1x1x97x40xf32>, tensor<1x1x97x40xf32>, tensor<2x40x32xf32>)
      -> tensor<1x1x97x40xf32>
  return %o : tensor<1x1x97x40xf32>
}

func.func @one_bucket(%qk: tensor<1x2x97x40xf32>, %v: tensor<1x2x97x40xf32>,
                      %r: tensor<3x40x2xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.lsh %qk, %v rotations(%r) buckets = 4 rounds = 3 chunk = 128
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<3x40x2xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @dense_without_self(%q: tensor<1x2x97x40xf32>,
                              %k: tensor<1x2x97x40xf32>,
                              %v: tensor<1x2x97x40xf32>)
    -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v score {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %self = arith.cmpi eq, %i, %j : index
      %ninf = arith.constant 0xFF800000 : f32
      %y = arith.select %self, %ninf, %x : f32
      attn.yield %y : f32
  } : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
    -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
