// attn.routing (attn-decompose-routing: centroid scores, the runtime's
// top-k, attention per cluster, the mean over a query's clusters) against
// the f64 reference (tooling/lib/ReferenceEfficient.cpp), which picks each
// cluster's members by a full std::sort of f64 scores. Tolerance 1e-4 of
// the output scale: f32 rounding of N(0, 1) scores (~5, over up to 48
// keys) is ~1e-6 (observed below 1e-6). f32 and f64 memberships could only
// differ on a near tie at a cluster's top_k boundary (gaps ~1e-6); the
// seeded inputs here have none.
// RUN: attn-run %s --entry=gqa --check --tolerance=1e-4 | FileCheck %s
// RUN: attn-run %s --entry=causal --check --tolerance=1e-4 | FileCheck %s
// RUN: attn-run %s --entry=cross_lengths --check --tolerance=1e-4 | FileCheck %s
// CHECK: check: {{.*}}: PASS
// Ahead of time: the shared library links the runtime's top-k and sort
// (libattn_support.so).
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-compile %s --emit=so -o %t/librouting.so
// RUN: attn-run %s --entry=causal --load=%t/librouting.so --check --tolerance=1e-4 | FileCheck %s
//
// Property: with one centroid and top_k = L every query and key is in the
// single cluster, so routing attention is dense softmax attention, causal
// or not (same seeded q, k, v: arguments 0-2 in every entry). 1e-5
// absolute: the same f32 products summed in a different order.
// RUN: attn-run %s --entry=one_cluster --output %t/routing.npy --check | FileCheck %s
// RUN: attn-run %s --entry=dense --output %t/dense.npy
// RUN: python3 %S/Inputs/compare-npy.py %t/routing.npy %t/dense.npy 1e-5 | FileCheck %s --check-prefix=SAME
// RUN: attn-run %s --entry=one_cluster_causal --output %t/routing-causal.npy
// RUN: attn-run %s --entry=dense_causal --output %t/dense-causal.npy
// RUN: python3 %S/Inputs/compare-npy.py %t/routing-causal.npy %t/dense-causal.npy 1e-5 | FileCheck %s --check-prefix=SAME
// SAME: max abs difference {{.*}}: SAME

// 4 query heads on 2 key/value heads, L = 97, D = 40, 7 clusters of 20.
func.func @gqa(%q: tensor<1x4x97x40xf32>, %k: tensor<1x2x97x40xf32>,
               %v: tensor<1x2x97x40xf32>, %c: tensor<7x40xf32>)
    -> tensor<1x4x97x40xf32> {
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 20
      : (tensor<1x4x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>,
         tensor<7x40xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}

// Causal, L = 1000, D = 64, 32 clusters of 32 (about sqrt(L)).
func.func @causal(%q: tensor<1x2x1000x64xf32>, %k: tensor<1x2x1000x64xf32>,
                  %v: tensor<1x2x1000x64xf32>, %c: tensor<32x64xf32>)
    -> tensor<1x2x1000x64xf32> {
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 32 causal
      : (tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>,
         tensor<1x2x1000x64xf32>, tensor<32x64xf32>) -> tensor<1x2x1000x64xf32>
  return %o : tensor<1x2x1000x64xf32>
}

// 1025 queries on 1000 keys, Dv = 40, 33 clusters of 48, explicit scale.
func.func @cross_lengths(%q: tensor<2x1x1025x64xf32>,
                         %k: tensor<2x1x1000x64xf32>,
                         %v: tensor<2x1x1000x40xf32>, %c: tensor<33x64xf32>)
    -> tensor<2x1x1025x40xf32> {
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 48 scale = 0.2
      : (tensor<2x1x1025x64xf32>, tensor<2x1x1000x64xf32>,
         tensor<2x1x1000x40xf32>, tensor<33x64xf32>) -> tensor<2x1x1025x40xf32>
  return %o : tensor<2x1x1025x40xf32>
}

func.func @one_cluster(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                       %v: tensor<1x2x97x40xf32>, %c: tensor<1x40xf32>)
    -> tensor<1x2x97x40xf32> {
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 97
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>,
         tensor<1x40xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @dense(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                 %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @one_cluster_causal(%q: tensor<1x2x97x40xf32>,
                              %k: tensor<1x2x97x40xf32>,
                              %v: tensor<1x2x97x40xf32>,
                              %c: tensor<1x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.routing %q, %k, %v centroids(%c) top_k = 97 causal
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>,
         tensor<1x40xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @dense_causal(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                        %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
