// attn-raise on what TOSA -> linalg produces (Debian's stock mlir-opt-22
// lowers the TOSA below: tosa-to-linalg-named, tosa-to-linalg,
// tosa-to-arith, tosa-to-tensor). TOSA writes attention on [B*H, L, D]
// with tosa.matmul, tosa.transpose for K^T, a scale multiply by a
// broadcast [1, 1, 1] constant, tosa.reduce_max / reduce_sum (linalg.reduce
// plus keepdim reshapes) and the softmax's division as a multiply by
// tosa.reciprocal. Raised and compiled, each computes what its linalg
// computes (1e-5 absolute: the same f32 softmax in another order), and the
// plain one what attn's f64 reference computes.
// RUN: rm -rf %t && mkdir -p %t
// RUN: mlir-opt-22 %s --pass-pipeline="builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),canonicalize,cse)" -o %t/linalg.mlir
// RUN: FileCheck %s --check-prefix=LINALG < %t/linalg.mlir
// LINALG-COUNT-2: linalg.batch_matmul
// LINALG: linalg.reduce
// RUN: attn-opt %t/linalg.mlir --attn-raise --canonicalize -o %t/raised.mlir
// RUN: FileCheck %s < %t/raised.mlir
// CHECK-LABEL: func.func @tosa_attention
// CHECK-NOT: linalg.
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} scale = 0.158113882 : (tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>, tensor<1x4x97x40xf32>) -> tensor<1x4x97x40xf32>
// CHECK-NOT: linalg.
// CHECK-LABEL: func.func @tosa_causal_constant
// CHECK-NOT: linalg.
// CHECK: attn.attention {{.*}} pattern(#attn.causal) scale = 0.353553385 :
// CHECK-NOT: linalg.
// RUN: attn-run %t/linalg.mlir --entry=tosa_attention --output %t/plain-linalg.npy
// RUN: attn-run %t/raised.mlir --entry=tosa_attention --output %t/plain-raised.npy
// RUN: python3 %S/Inputs/compare-npy.py %t/plain-linalg.npy %t/plain-raised.npy 1e-5 | FileCheck %s --check-prefix=SAME
// RUN: attn-run %t/linalg.mlir --entry=tosa_causal_constant --output %t/causal-linalg.npy
// RUN: attn-run %t/raised.mlir --entry=tosa_causal_constant --output %t/causal-raised.npy
// RUN: python3 %S/Inputs/compare-npy.py %t/causal-linalg.npy %t/causal-raised.npy 1e-5 | FileCheck %s --check-prefix=SAME
// SAME: max abs difference {{.*}}: SAME

func.func @tosa_attention(%q: tensor<4x97x40xf32>, %k: tensor<4x97x40xf32>, %v: tensor<4x97x40xf32>) -> tensor<4x97x40xf32> {
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %shift = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %scale = "tosa.const"() {values = dense<0.158113882> : tensor<1x1x1xf32>} : () -> tensor<1x1x1xf32>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<4x97x40xf32>) -> tensor<4x40x97xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<4x97x40xf32>, tensor<4x40x97xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x97x97xf32>
  %ss = tosa.mul %s, %scale, %shift : (tensor<4x97x97xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<4x97x97xf32>
  %m = tosa.reduce_max %ss {axis = 2 : i32} : (tensor<4x97x97xf32>) -> tensor<4x97x1xf32>
  %d = tosa.sub %ss, %m : (tensor<4x97x97xf32>, tensor<4x97x1xf32>) -> tensor<4x97x97xf32>
  %e = tosa.exp %d : (tensor<4x97x97xf32>) -> tensor<4x97x97xf32>
  %sum = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<4x97x97xf32>) -> tensor<4x97x1xf32>
  %r = tosa.reciprocal %sum : (tensor<4x97x1xf32>) -> tensor<4x97x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<4x97x97xf32>, tensor<4x97x1xf32>, tensor<1xi8>) -> tensor<4x97x97xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<4x97x97xf32>, tensor<4x97x40xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x97x40xf32>
  return %o : tensor<4x97x40xf32>
}

// A causal mask as a constant [1, L, L] of 0 / -inf added after the scale.
func.func @tosa_causal_constant(%q: tensor<3x16x8xf32>, %k: tensor<3x16x8xf32>, %v: tensor<3x16x8xf32>) -> tensor<3x16x8xf32> {
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %shift = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %scale = "tosa.const"() {values = dense<0.353553385> : tensor<1x1x1xf32>} : () -> tensor<1x1x1xf32>
  %mask = "tosa.const"() {values = dense<[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]> : tensor<1x16x16xf32>} : () -> tensor<1x16x16xf32>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<3x16x8xf32>) -> tensor<3x8x16xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<3x16x8xf32>, tensor<3x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<3x16x16xf32>
  %ss = tosa.mul %s, %scale, %shift : (tensor<3x16x16xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<3x16x16xf32>
  %sm = tosa.add %ss, %mask : (tensor<3x16x16xf32>, tensor<1x16x16xf32>) -> tensor<3x16x16xf32>
  %m = tosa.reduce_max %sm {axis = 2 : i32} : (tensor<3x16x16xf32>) -> tensor<3x16x1xf32>
  %d = tosa.sub %sm, %m : (tensor<3x16x16xf32>, tensor<3x16x1xf32>) -> tensor<3x16x16xf32>
  %e = tosa.exp %d : (tensor<3x16x16xf32>) -> tensor<3x16x16xf32>
  %sum = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<3x16x16xf32>) -> tensor<3x16x1xf32>
  %r = tosa.reciprocal %sum : (tensor<3x16x1xf32>) -> tensor<3x16x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<3x16x16xf32>, tensor<3x16x1xf32>, tensor<1xi8>) -> tensor<3x16x16xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<3x16x16xf32>, tensor<3x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<3x16x8xf32>
  return %o : tensor<3x16x8xf32>
}
