// attn-to-gpu-kernels on a function of one attn.attention_grad: two
// kernels (GpuBackwardKernel.cpp). `@grad` writes dK and dV (results 1
// and 2), one workgroup per (key tile, key/value head, batch) and one
// invocation per key; `@grad_query_grad` writes dQ (result 0), one
// workgroup per (query tile, query head, batch). Both read the tile
// schedule of the causal pattern (per key tile its query tiles, and the
// reverse) from a constant buffer, and stage rows between two barriers.
// Causal, Lq = 40, Lk = 50, 32-row tiles: query tile 0 keeps a part of
// key tile 0; query tile 1 all of key tile 0 and a part of key tile 1.
// Words: starts per tile, then tile * 2 + (1 if full).
// RUN: attn-opt %s --split-input-file --attn-set-target=target=vulkan --attn-to-gpu-kernels | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cuda-sm80 --attn-to-gpu-kernels | FileCheck %s --check-prefix=CUDA

// CHECK-LABEL: gpu.module @attn_kernels
// CHECK: gpu.func @grad(
// CHECK-SAME: memref<6xi32>
// CHECK-SAME: %[[DK:[a-z0-9]+]]: memref<1x2x50x16xf32>, %[[DV:[a-z0-9]+]]: memref<1x2x50x8xf32>)
// CHECK-SAME: attn.bindings = [{access = "read", name = "arg0"}
// CHECK-SAME: {access = "constant", name = "schedule"}, {access = "write", name = "result1"}, {access = "write", name = "result2"}]
// CHECK-SAME: attn.constants = {schedule = dense<[0, 2, 3, 0, 3, 2]>
// CHECK-SAME: attn.grid = array<i64: 2, 2, 1>
// CHECK-SAME: attn.tiling = array<i64: 32, 0, 32>
// CHECK-SAME: known_block_size = array<i32: 32, 1, 1>
// The query heads of the group: one loop, dK and dV in its iter_args.
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// Rows that keep nothing of this key are skipped (p and dS = 0).
// CHECK: arith.cmpf une
// CHECK: math.exp
// CHECK: memref.store {{.*}}, %[[DK]]
// CHECK: memref.store {{.*}}, %[[DV]]
// CHECK: gpu.func @grad_query_grad(
// CHECK-SAME: memref<6xi32>, %[[DQ:[a-z0-9]+]]: memref<1x4x40x16xf32>)
// CHECK-SAME: {access = "write", name = "result0"}]
// CHECK-SAME: attn.constants = {schedule = dense<[0, 1, 3, 0, 1, 2]>
// CHECK-SAME: attn.grid = array<i64: 2, 4, 1>
// CHECK: memref.store {{.*}}, %[[DQ]]
// CHECK-NOT: func.func @grad
// CUDA: gpu.func @grad(
// CUDA-SAME: workgroup(
// CUDA: llvm.call_intrinsic "llvm.nvvm.ex2.approx"
// CUDA: gpu.func @grad_query_grad(
func.func @grad(%q: tensor<1x4x40x16xf32>, %k: tensor<1x2x50x16xf32>, %v: tensor<1x2x50x8xf32>,
                %o: tensor<1x4x40x8xf32>, %do: tensor<1x4x40x8xf32>, %lse: tensor<1x4x40xf32>)
    -> (tensor<1x4x40x16xf32>, tensor<1x2x50x16xf32>, tensor<1x2x50x8xf32>) {
  %dq, %dk, %dv = attn.attention_grad %q, %k, %v, %o, %do, %lse pattern(#attn.causal)
      : (tensor<1x4x40x16xf32>, tensor<1x2x50x16xf32>, tensor<1x2x50x8xf32>, tensor<1x4x40x8xf32>, tensor<1x4x40x8xf32>, tensor<1x4x40xf32>)
      -> (tensor<1x4x40x16xf32>, tensor<1x2x50x16xf32>, tensor<1x2x50x8xf32>)
  return %dq, %dk, %dv : tensor<1x4x40x16xf32>, tensor<1x2x50x16xf32>, tensor<1x2x50x8xf32>
}

// -----

// Dense and unmasked: no schedule, every tile, no mask code. A soft-cap
// multiplies dS by its derivative 1 - tanh^2 (t * t from the capped score).
// CHECK-LABEL: gpu.func @dense_softcap(
// CHECK-NOT: schedule
// CHECK: attn.grid = array<i64: 3, 2, 1>
// CHECK: math.tanh
// CHECK: arith.divf
// CHECK: arith.mulf
// CHECK: arith.subf
// CHECK-LABEL: gpu.func @dense_softcap_query_grad(
// CHECK-NOT: schedule
// CHECK: attn.grid = array<i64: 2, 2, 1>
func.func @dense_softcap(%q: tensor<1x2x33x8xf32>, %k: tensor<1x2x70x8xf32>, %v: tensor<1x2x70x8xf32>,
                         %o: tensor<1x2x33x8xf32>, %do: tensor<1x2x33x8xf32>, %lse: tensor<1x2x33xf32>)
    -> (tensor<1x2x33x8xf32>, tensor<1x2x70x8xf32>, tensor<1x2x70x8xf32>) {
  %dq, %dk, %dv = attn.attention_grad %q, %k, %v, %o, %do, %lse mods = [#attn.softcap<cap = 5.0>]
      : (tensor<1x2x33x8xf32>, tensor<1x2x70x8xf32>, tensor<1x2x70x8xf32>, tensor<1x2x33x8xf32>, tensor<1x2x33x8xf32>, tensor<1x2x33xf32>)
      -> (tensor<1x2x33x8xf32>, tensor<1x2x70x8xf32>, tensor<1x2x70x8xf32>)
  return %dq, %dk, %dv : tensor<1x2x33x8xf32>, tensor<1x2x70x8xf32>, tensor<1x2x70x8xf32>
}
