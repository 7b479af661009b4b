// A function that returns its argument through layout ops becomes the
// gather kernel of GpuLayoutKernel.cpp: 128 invocations striding over the
// result, each element's source index found by walking the chain back
// (a pad's padding read as its value, inside an scf.if so that nothing
// outside the source is loaded), no workgroup memory, no barrier.
// RUN: attn-opt %s --split-input-file --attn-set-target=target=vulkan --attn-to-gpu-kernels | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cuda-sm80 --attn-to-gpu-kernels | FileCheck %s --check-prefix=CUDA

// CHECK-LABEL: gpu.func @split_k(
// CHECK-SAME: %[[QKV:.*]]: memref<10x32xf32>, %[[K:.*]]: memref<2x2x8x4xf32>) kernel
// CHECK-SAME: attn.bindings = [{access = "read", name = "arg0"}, {access = "write", name = "result0"}]
// CHECK-SAME: attn.grid = array<i64: 1, 1, 1>
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK-NOT: memref.alloc
// CHECK: scf.for %[[E:.*]] = %{{.*}} to %c128{{.*}} step %c128
// The pad's rows: index - 3, compared unsigned with the 5 rows.
// CHECK: %[[ROW:.*]] = arith.subi %{{.*}}, %c3
// CHECK: %[[OUT:.*]] = arith.cmpi uge, %[[ROW]], %c5
// The expand_shape's group (b, row) linearized: b * 5 + row.
// CHECK: %[[B5:.*]] = arith.muli %{{.*}}, %c5
// CHECK: %[[SROW:.*]] = arith.addi %[[B5]], %[[ROW]]
// The slice's column offset (16: the key heads).
// CHECK: %[[COL:.*]] = arith.addi %{{.*}}, %c16
// CHECK: %[[V:.*]] = scf.if %[[OUT]] -> (f32) {
// CHECK-NEXT: scf.yield %{{.*}} : f32
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[L:.*]] = memref.load %[[QKV]][%[[SROW]], %[[COL]]]
// CHECK-NEXT: scf.yield %[[L]]
// CHECK: memref.store %[[V]], %[[K]]
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return

// CUDA-LABEL: gpu.func @split_k(
// CUDA-SAME: %{{.*}}: memref<10x32xf32>, %{{.*}}: memref<2x2x8x4xf32>) kernel
// CUDA-NOT: workgroup(
func.func @split_k(%qkv: tensor<10x32xf32>) -> tensor<2x2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %k = tensor.extract_slice %qkv[0, 16] [10, 8] [1, 1] : tensor<10x32xf32> to tensor<10x8xf32>
  %e = tensor.expand_shape %k [[0, 1], [2, 3]] output_shape [2, 5, 2, 4] : tensor<10x8xf32> into tensor<2x5x2x4xf32>
  %init = tensor.empty() : tensor<2x2x5x4xf32>
  %t = linalg.transpose ins(%e : tensor<2x5x2x4xf32>) outs(%init : tensor<2x2x5x4xf32>) permutation = [0, 2, 1, 3]
  %p = tensor.pad %t low[0, 0, 3, 0] high[0, 0, 0, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<2x2x5x4xf32> to tensor<2x2x8x4xf32>
  return %p : tensor<2x2x8x4xf32>
}

// -----

// A merge into rows: no pad, so no guard; the collapse_shape's group
// delinearized. 2^20 + 2^16 elements take the most workgroups (8192), each
// invocation striding by 8192 x 128.
// CHECK-LABEL: gpu.func @merge(
// CHECK-SAME: attn.grid = array<i64: 8192, 1, 1>
// CHECK: scf.for %{{.*}} = %{{.*}} to %c1114112 step %c1048576
// CHECK-NOT: scf.if
// CHECK: memref.load
// CHECK: memref.store
func.func @merge(%heads: tensor<1x17x1024x64xf32>) -> tensor<1024x1088xf32> {
  %init = tensor.empty() : tensor<1x1024x17x64xf32>
  %t = linalg.transpose ins(%heads : tensor<1x17x1024x64xf32>) outs(%init : tensor<1x1024x17x64xf32>) permutation = [0, 2, 1, 3]
  %c = tensor.collapse_shape %t [[0, 1], [2, 3]] : tensor<1x1024x17x64xf32> into tensor<1024x1088xf32>
  return %c : tensor<1024x1088xf32>
}

// -----

// bf16 on Vulkan moves as i16 words, the pad's zero among them.
// CHECK-LABEL: gpu.func @pad_bf16(
// CHECK-SAME: memref<3x4xi16>, %{{.*}}: memref<5x4xi16>
// CHECK: scf.if %{{.*}} -> (i16)
func.func @pad_bf16(%x: tensor<3x4xbf16>) -> tensor<5x4xbf16> {
  %zero = arith.constant 0.0 : bf16
  %p = tensor.pad %x low[2, 0] high[0, 0] {
  ^bb0(%a: index, %b: index):
    tensor.yield %zero : bf16
  } : tensor<3x4xbf16> to tensor<5x4xbf16>
  return %p : tensor<5x4xbf16>
}
