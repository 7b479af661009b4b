// A function of one element-wise linalg.generic becomes the element kernel
// of GpuElementwiseKernel.cpp: 128 invocations striding over the result,
// each input loaded where its affine map puts it (mod expanded into index
// arithmetic, no guard: the maps were checked against the bounds),
// linalg.index as the loop index, the body cloned once per element.
// RUN: attn-opt %s --attn-set-target=target=vulkan --attn-to-gpu-kernels | FileCheck %s
// RUN: attn-opt %s --attn-set-target=target=cuda-sm80 --attn-to-gpu-kernels | FileCheck %s --check-prefix=CUDA

// CHECK-LABEL: gpu.func @rope_half(
// CHECK-SAME: %[[X:.*]]: memref<2x3x5x8xf32>, %[[COS:.*]]: memref<5x4xf32>, %[[SIN:.*]]: memref<5x4xf32>, %[[Y:.*]]: memref<2x3x5x8xf32>) kernel
// CHECK-SAME: attn.bindings = [{access = "read", name = "arg0"}, {access = "read", name = "arg1"}, {access = "read", name = "arg2"}, {access = "write", name = "result0"}]
// CHECK-SAME: attn.grid = array<i64: 2, 1, 1>
// CHECK-NOT: memref.alloc
// CHECK: scf.for %{{.*}} = %{{.*}} to %c240 step %c256
// CHECK: %[[D:.*]] = arith.remui %{{.*}}, %c8
// CHECK: %[[A:.*]] = memref.load %[[X]]
// The partner (d + 4) mod 8, floor mod as affine defines it.
// CHECK: %[[SUM:.*]] = arith.addi %[[D]], %c4
// CHECK: arith.remsi %[[SUM]], %c8
// CHECK: %[[P:.*]] = memref.load %[[X]]
// CHECK: memref.load %[[COS]]
// CHECK: memref.load %[[SIN]]
// linalg.index 3 is the loop's d.
// CHECK: arith.cmpi ult, %[[D]], %c4
// CHECK-NOT: scf.if
// CHECK: memref.store %{{.*}}, %[[Y]]
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return

// CUDA-LABEL: gpu.func @rope_half(
// CUDA-NOT: workgroup(
#x = affine_map<(b, h, s, d) -> (b, h, s, d)>
#half = affine_map<(b, h, s, d) -> (b, h, s, (d + 4) mod 8)>
#table = affine_map<(b, h, s, d) -> (s, d mod 4)>
func.func @rope_half(%x: tensor<2x3x5x8xf32>, %cos: tensor<5x4xf32>, %sin: tensor<5x4xf32>) -> tensor<2x3x5x8xf32> {
  %e = tensor.empty() : tensor<2x3x5x8xf32>
  %c4 = arith.constant 4 : index
  %y = linalg.generic {indexing_maps = [#x, #half, #table, #table, #x], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %x, %cos, %sin : tensor<2x3x5x8xf32>, tensor<2x3x5x8xf32>, tensor<5x4xf32>, tensor<5x4xf32>) outs(%e : tensor<2x3x5x8xf32>) {
  ^bb0(%a: f32, %partner: f32, %c: f32, %s: f32, %out: f32):
    %d = linalg.index 3 : index
    %first = arith.cmpi ult, %d, %c4 : index
    %ps = arith.mulf %partner, %s : f32
    %neg = arith.negf %ps : f32
    %rot = arith.select %first, %neg, %ps : f32
    %ac = arith.mulf %a, %c : f32
    %r = arith.addf %ac, %rot : f32
    linalg.yield %r : f32
  } -> tensor<2x3x5x8xf32>
  return %y : tensor<2x3x5x8xf32>
}
