// attn.nystrom (attn-decompose-nystrom: landmarks, pseudo-inverse, and two
// attention kernels) against the f64 reference, which runs the same
// documented iteration in double. Tolerance 1e-4 of the output scale: the
// pseudo-inverse iteration multiplies f32 rounding by the condition number
// of the m x m kernel A (observed: 7e-7 to 2.4e-6 below, 4e-5 at m = L).
// RUN: attn-run %s --entry=gqa_97 --check --tolerance=1e-4 | FileCheck %s
// RUN: attn-run %s --entry=uneven_segments --check --tolerance=1e-4 | FileCheck %s
// RUN: attn-run %s --entry=uneven_segments --check --tolerance=1e-4 --generic | FileCheck %s
// RUN: attn-run %s --entry=long --check --tolerance=1e-4 | FileCheck %s
// CHECK: check: {{.*}}: PASS
//
// Property: with one landmark per row (m = L) the segment means are the
// rows, F = A = Bm = softmax(scale Q K^T), and F pinv(A) Bm V = A V: dense
// attention. 20 pseudo-inverse steps (the default 6 leave 3.5e-2 at this
// condition number; 12 leave 4e-4, 20 leave 3e-5); 1e-4 absolute on an
// output of scale ~0.75.
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-run %s --entry=one_landmark_per_row --output %t/nystrom.npy --check --tolerance=1e-4 | FileCheck %s
// RUN: attn-run %s --entry=dense --output %t/dense.npy
// RUN: python3 %S/Inputs/compare-npy.py %t/nystrom.npy %t/dense.npy 1e-4 | FileCheck %s --check-prefix=SAME
// SAME: max abs difference {{.*}}: SAME

// 4 query heads on 2 key/value heads, L = 97 in 8 segments of 12 or 13 rows.
func.func @gqa_97(%q: tensor<1x4x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                  %v: tensor<1x2x97x40xf32>) -> tensor<1x4x97x40xf32> {
  %o = attn.nystrom %q, %k, %v landmarks = 8
      : (tensor<1x4x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
      -> tensor<1x4x97x40xf32>
  return %o : tensor<1x4x97x40xf32>
}

// Lq = 1000 (62 or 63 rows per segment), Lk = 1025 (64 or 65), D = 64.
func.func @uneven_segments(%q: tensor<1x2x1000x64xf32>,
                           %k: tensor<1x2x1025x64xf32>,
                           %v: tensor<1x2x1025x64xf32>)
    -> tensor<1x2x1000x64xf32> {
  %o = attn.nystrom %q, %k, %v landmarks = 16
      : (tensor<1x2x1000x64xf32>, tensor<1x2x1025x64xf32>,
         tensor<1x2x1025x64xf32>) -> tensor<1x2x1000x64xf32>
  return %o : tensor<1x2x1000x64xf32>
}

// L = 1025, 64 landmarks, 8 pseudo-inverse steps, batch 2, explicit scale.
func.func @long(%q: tensor<2x2x1025x64xf32>, %k: tensor<2x2x1025x64xf32>,
                %v: tensor<2x2x1025x64xf32>) -> tensor<2x2x1025x64xf32> {
  %o = attn.nystrom %q, %k, %v landmarks = 64 scale = 0.1
      {pinv_iterations = 8 : i64}
      : (tensor<2x2x1025x64xf32>, tensor<2x2x1025x64xf32>,
         tensor<2x2x1025x64xf32>) -> tensor<2x2x1025x64xf32>
  return %o : tensor<2x2x1025x64xf32>
}

func.func @one_landmark_per_row(%q: tensor<1x2x97x40xf32>,
                                %k: tensor<1x2x97x40xf32>,
                                %v: tensor<1x2x97x40xf32>)
    -> tensor<1x2x97x40xf32> {
  %o = attn.nystrom %q, %k, %v landmarks = 97 {pinv_iterations = 20 : i64}
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @dense(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                 %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
