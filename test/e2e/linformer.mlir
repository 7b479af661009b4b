// attn.linformer (attn-decompose-linformer, then the attention kernels)
// against the f64 reference (tooling/lib/ReferenceEfficient.cpp). Tolerance
// 1e-4 of the output scale: K' = E K sums Lk f32 products of N(0, 1)
// entries (|K'| ~ sqrt(Lk) ~ 32), so scores reach ~150 and their f32
// rounding (~1e-5 relative) feeds the softmax.
// RUN: attn-run %s --entry=shared_gqa --check --tolerance=1e-4 | FileCheck %s
// RUN: attn-run %s --entry=per_head --check --tolerance=1e-4 | FileCheck %s
// RUN: attn-run %s --entry=cross_lengths --check --tolerance=1e-4 | FileCheck %s
// RUN: attn-run %s --entry=cross_lengths --check --tolerance=1e-4 --generic | FileCheck %s
// CHECK: check: {{.*}}: PASS
//
// Property: with E = F = I (k = Lk) Linformer is dense softmax attention.
// Same seeded q, k, v (arguments 0-2) in both entries; 1e-5 absolute: the
// projections multiply by exact ones and zeros, so the outputs differ only
// by the order of f32 sums.
// RUN: rm -rf %t && mkdir -p %t
// RUN: python3 %S/Inputs/make-matrix-npy.py eye %t/eye.npy 97
// RUN: attn-run %s --entry=identity --random-inputs --input e_proj=%t/eye.npy --input f_proj=%t/eye.npy --output %t/linformer.npy
// RUN: attn-run %s --entry=dense --output %t/dense.npy --check | FileCheck %s
// RUN: python3 %S/Inputs/compare-npy.py %t/linformer.npy %t/dense.npy 1e-5 | FileCheck %s --check-prefix=SAME
// SAME: max abs difference {{.*}}: SAME

// One E, F for all heads; 4 query heads on 2 key/value heads; L = 97, D = 40.
func.func @shared_gqa(%q: tensor<1x4x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                      %v: tensor<1x2x97x40xf32>, %e: tensor<16x97xf32>,
                      %f: tensor<16x97xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.linformer %q, %k, %v proj(%e, %f)
      : (tensor<1x4x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>,
         tensor<16x97xf32>, tensor<16x97xf32>) -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}

// One E, F per head; L = 1025, D = 64, k = 64.
func.func @per_head(%q: tensor<1x2x1025x64xf32>, %k: tensor<1x2x1025x64xf32>,
                    %v: tensor<1x2x1025x64xf32>, %e: tensor<2x64x1025xf32>,
                    %f: tensor<2x64x1025xf32>) -> tensor<1x2x1025x64xf32> {
  %o = attn.linformer %q, %k, %v proj(%e, %f)
      : (tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>,
         tensor<1x2x1025x64xf32>, tensor<2x64x1025xf32>,
         tensor<2x64x1025xf32>) -> tensor<1x2x1025x64xf32>
  return %o : tensor<1x2x1025x64xf32>
}

// Lq = 1000 queries on Lk = 1025 keys, batch 2, an explicit scale.
func.func @cross_lengths(%q: tensor<2x2x1000x64xf32>,
                         %k: tensor<2x2x1025x64xf32>,
                         %v: tensor<2x2x1025x64xf32>, %e: tensor<48x1025xf32>,
                         %f: tensor<48x1025xf32>) -> tensor<2x2x1000x64xf32> {
  %o = attn.linformer %q, %k, %v proj(%e, %f) scale = 0.05
      : (tensor<2x2x1000x64xf32>, tensor<2x2x1025x64xf32>,
         tensor<2x2x1025x64xf32>, tensor<48x1025xf32>, tensor<48x1025xf32>)
      -> tensor<2x2x1000x64xf32>
  return %o : tensor<2x2x1000x64xf32>
}

func.func @identity(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                    %v: tensor<1x2x97x40xf32>, %e: tensor<97x97xf32>,
                    %f: tensor<97x97xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.linformer %q, %k, %v proj(%e, %f)
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>,
         tensor<97x97xf32>, tensor<97x97xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @dense(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                 %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
