// Paged K and V read in place (matchPagedKeys): the kernel takes the pools,
// the table and the [1] i32 length as they are, reads the length once
// (clamped to the capacity: 3 pages of 16 rows), bounds its key tiles by
// it, and reads each key row's page from the table (clamped to the pool).
// No gather of the cache and no static schedule (the tiles depend on the
// length). On CUDA the tensor-core kernel's cp.async copies read the page.
// RUN: attn-opt %s --attn-set-target=target=vulkan --attn-tile --attn-to-gpu-kernels | FileCheck %s
// RUN: attn-opt %s --attn-set-target=target=cuda-sm80 --attn-tile --attn-to-gpu-kernels | FileCheck %s --check-prefix=CUDA

// CHECK-LABEL: gpu.func @paged_decode(
// CHECK-SAME: %[[Q:.*]]: memref<1x4x1x64xf16>, %[[KP:.*]]: memref<5x2x16x64xf16>, %[[VP:.*]]: memref<5x2x16x64xf16>, %[[TABLE:.*]]: memref<1x3xi32>, %[[LEN:.*]]: memref<1xi32>
// CHECK-SAME: attn.bindings = [{{.*}}name = "arg3"{{.*}}name = "arg4"
// CHECK-NOT: name = "schedule"
// CHECK: %[[N:.*]] = memref.load %[[LEN]][%{{.*}}] : memref<1xi32>
// CHECK: arith.maxsi %[[N]]
// CHECK: arith.minsi %{{.*}}, %c48_i32
// CHECK: %[[PAGE:.*]] = memref.load %[[TABLE]][%{{.*}}, %{{.*}}] : memref<1x3xi32>
// CHECK: arith.maxsi %[[PAGE]]
// CHECK: arith.minsi %{{.*}}, %c4_i32
// CHECK: memref.load %[[KP]]
// CHECK-NOT: attn.paged_kv

// CUDA-LABEL: gpu.func @paged_decode(
// CUDA: memref.load %{{.*}} : memref<1x3xi32>
// CUDA: nvgpu.device_async_copy %{{.*}}, %{{.*}} : memref<5x2x16x64xf16> to memref<{{.*}}, #gpu.address_space<workgroup>>
func.func @paged_decode(%q: tensor<1x4x1x64xf16>, %kp: tensor<5x2x16x64xf16>,
                        %vp: tensor<5x2x16x64xf16>, %table: tensor<1x3xi32>,
                        %length: tensor<1xi32>) -> tensor<1x4x1x64xf16> {
  %c0 = arith.constant 0 : index
  %e = tensor.extract %length[%c0] : tensor<1xi32>
  %n = arith.index_cast %e : i32 to index
  %k = attn.paged_kv %kp[%table] length %n : tensor<5x2x16x64xf16>, tensor<1x3xi32> -> tensor<1x2x?x64xf16>
  %v = attn.paged_kv %vp[%table] length %n : tensor<5x2x16x64xf16>, tensor<1x3xi32> -> tensor<1x2x?x64xf16>
  %o = attn.attention %q, %k, %v pattern(#attn.causal) align = bottom_right
      : (tensor<1x4x1x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>) -> tensor<1x4x1x64xf16>
  return %o : tensor<1x4x1x64xf16>
}
