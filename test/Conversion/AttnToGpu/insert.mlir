// A function that inserts an argument into another at run-time offsets
// becomes the insertion kernel of GpuInsertKernel.cpp: the destination
// bound as an argument it writes in place (no result binding), 128
// invocations striding over the inserted elements only, the offsets read
// once before the loop, and each store behind one unsigned bound check per
// run-time offset (static offsets need none).
// RUN: attn-opt %s --split-input-file --attn-set-target=target=vulkan --attn-to-gpu-kernels | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cuda-sm80 --attn-to-gpu-kernels | FileCheck %s --check-prefix=CUDA

// CHECK-LABEL: gpu.func @append_rows(
// CHECK-SAME: %[[ROWS:.*]]: memref<2x2x3x8xf32>, %[[AT:.*]]: memref<1xi32>, %[[CACHE:.*]]: memref<2x2x16x8xf32>) kernel
// CHECK-SAME: attn.bindings = [{access = "read", name = "arg0"}, {access = "read", name = "arg1"}, {access = "readwrite", name = "arg2"}]
// CHECK-SAME: attn.grid = array<i64: 1, 1, 1>
// CHECK-NOT: memref.alloc
// CHECK: %[[WORD:.*]] = memref.load %[[AT]][%{{.*}}] : memref<1xi32>
// CHECK: %[[OFF:.*]] = arith.index_cast %[[WORD]] : i32 to index
// The loop covers the 96 inserted elements, not the cache's 512.
// CHECK: scf.for %{{.*}} = %{{.*}} to %c96 step %c128
// CHECK-NOT: memref.load %[[CACHE]]
// CHECK: %[[ROW:.*]] = arith.addi %{{.*}}, %[[OFF]] : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %c16
// CHECK: scf.if %[[IN]] {
// CHECK-NEXT: %[[V:.*]] = memref.load %[[ROWS]]
// CHECK-NEXT: memref.store %[[V]], %[[CACHE]][%{{.*}}, %{{.*}}, %[[ROW]], %{{.*}}]
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return

// CUDA-LABEL: gpu.func @append_rows(
// CUDA-SAME: %{{.*}}: memref<2x2x3x8xf32>, %{{.*}}: memref<1xi32>, %{{.*}}: memref<2x2x16x8xf32>) kernel
// CUDA-NOT: workgroup(
func.func @append_rows(%rows: tensor<2x2x3x8xf32>, %at: tensor<1xi32>, %cache: tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> {
  %c0 = arith.constant 0 : index
  %a = tensor.extract %at[%c0] : tensor<1xi32>
  %row = arith.index_cast %a : i32 to index
  %r = tensor.insert_slice %rows into %cache[0, 0, %row, 0] [2, 2, 3, 8] [1, 1, 1, 1] : tensor<2x2x3x8xf32> into tensor<2x2x16x8xf32>
  return %r : tensor<2x2x16x8xf32>
}

// -----

// Static offsets only: no bound check, the offset added as a constant
// (bf16 as 16-bit words on Vulkan, copied as they are).
// CHECK-LABEL: gpu.func @static_rows(
// CHECK-SAME: {access = "read", name = "arg0"}, {access = "readwrite", name = "arg1"}
// CHECK: scf.for
// CHECK: %[[ROW:.*]] = arith.addi %{{.*}}, %c5 : index
// CHECK-NOT: scf.if
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[ROW]], %{{.*}}] : memref<16x8xi16>
func.func @static_rows(%rows: tensor<2x8xbf16>, %cache: tensor<16x8xbf16>) -> tensor<16x8xbf16> {
  %r = tensor.insert_slice %rows into %cache[5, 0] [2, 8] [1, 1] : tensor<2x8xbf16> into tensor<16x8xbf16>
  return %r : tensor<16x8xbf16>
}
