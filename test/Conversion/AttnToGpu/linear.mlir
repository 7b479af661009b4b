// A function of one linalg.matmul (a layer's product) becomes the tiled
// GEMM kernel of GpuLinearKernel.cpp: 128 invocations, a 32 x 64 tile of Y
// per workgroup (8 x 64 for a product of few rows), X and W staged k-major
// in workgroup memory in 16-deep blocks between two barriers, one FMA per
// (row, column, k), and guards only where the sizes are not whole tiles;
// products of at most 8 rows with W [N, K] take the skinny form (last).
// RUN: attn-opt %s --split-input-file --attn-set-target=target=vulkan --attn-to-gpu-kernels | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cuda-sm80 --attn-to-gpu-kernels | FileCheck %s --check-prefix=CUDA

// CHECK-LABEL: gpu.func @proj(
// CHECK-SAME: %[[X:.*]]: memref<40x96xf32>, %[[W:.*]]: memref<72x96xf32>, %[[Y:.*]]: memref<40x72xf32>) kernel
// CHECK-SAME: attn.bindings = [{access = "read", name = "arg0"}, {access = "read", name = "arg1"}, {access = "write", name = "result0"}]
// CHECK-SAME: attn.grid = array<i64: 2, 2, 1>
// CHECK-SAME: attn.tiling = array<i64: 32, 64, 16>
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: %[[XS:.*]] = memref.alloc() : memref<16x32xf32, 3>
// CHECK: %[[WS:.*]] = memref.alloc() : memref<16x64xf32, 3>
// CHECK: scf.for %{{.*}} = %{{.*}} to %c96 step %c16{{.*}} iter_args(
// 40 rows are not whole 32-row tiles: X's loads are guarded.
// CHECK: scf.if
// CHECK: memref.load %[[X]]
// CHECK: memref.store %{{.*}}, %[[XS]]
// CHECK: memref.load %[[W]]
// CHECK: memref.store %{{.*}}, %[[WS]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[XS]]
// CHECK: memref.load %[[WS]]
// CHECK: math.fma
// CHECK: gpu.barrier
// CHECK: scf.yield
// CHECK: memref.store %{{.*}}, %[[Y]]
// CHECK: gpu.return

// CUDA-LABEL: gpu.func @proj(
// CUDA-SAME: workgroup(%{{.*}} : memref<16x32xf32, #gpu.address_space<workgroup>>
// CUDA-NOT: math.fma
// CUDA: llvm.intr.fma
func.func @proj(%x: tensor<40x96xf32>, %w: tensor<72x96xf32>) -> tensor<40x72xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<40x72xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<40x72xf32>) -> tensor<40x72xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<40x96xf32>, tensor<72x96xf32>) outs(%f : tensor<40x72xf32>) -> tensor<40x72xf32>
  return %y : tensor<40x72xf32>
}

// -----

// W stored [K, N], bf16 inputs (i16 words on Vulkan) widened as they are
// loaded, the result rounded once; 3 rows take an 8-row tile. Every size
// is whole here but M: W's loads take no guard.
// CHECK-LABEL: gpu.func @decode(
// CHECK-SAME: memref<3x64xi16>, %[[W:.*]]: memref<64x128xi16>, %[[Y:.*]]: memref<3x128xi16>) kernel
// CHECK-SAME: attn.grid = array<i64: 2, 1, 1>
// CHECK-SAME: attn.tiling = array<i64: 8, 64, 16>
// CHECK: memref.alloc() : memref<16x8xf32, 3>
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK-NOT: scf.if
// CHECK: memref.load %[[W]]
// CHECK: gpu.barrier
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[Y]]
func.func @decode(%x: tensor<3x64xbf16>, %w: tensor<64x128xbf16>) -> tensor<3x128xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<3x128xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<3x128xbf16>) -> tensor<3x128xbf16>
  %y = linalg.matmul ins(%x, %w : tensor<3x64xbf16>, tensor<64x128xbf16>) outs(%f : tensor<3x128xbf16>) -> tensor<3x128xbf16>
  return %y : tensor<3x128xbf16>
}

// -----

// At most 8 rows with W [N, K] (a decoding step): the skinny form, a
// workgroup per 8 columns of Y, 16 invocations per column walking K in
// steps of 16 with a sum per row, the partial sums added in workgroup
// memory by M x 8 invocations. 20 columns: the last workgroup reads W's
// last row for its missing columns and does not store them.
// CHECK-LABEL: gpu.func @step(
// CHECK-SAME: %[[X:.*]]: memref<2x96xf32>, %[[W:.*]]: memref<20x96xf32>, %[[Y:.*]]: memref<2x20xf32>) kernel
// CHECK-SAME: attn.grid = array<i64: 3, 1, 1>
// CHECK-SAME: attn.tiling = array<i64: 2, 8, 16>
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %c16
// CHECK: %[[ROW:.*]] = arith.minui %{{.*}}, %c19
// CHECK: scf.for %[[K:.*]] = %[[LANE]] to %c96 step %c16{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32)
// CHECK: memref.load %[[W]][%[[ROW]], %[[K]]]
// CHECK: memref.load %[[X]][%c0{{.*}}, %[[K]]]
// CHECK: math.fma
// CHECK: memref.load %[[X]][%c1{{.*}}, %[[K]]]
// CHECK: math.fma
// CHECK: %[[PARTIALS:.*]] = memref.alloc() : memref<2x128xf32, 3>
// CHECK: gpu.barrier
// CHECK: arith.cmpi ult, %[[TID]], %c16
// CHECK: scf.if
// CHECK-COUNT-16: memref.load %[[PARTIALS]]
// CHECK: arith.cmpi ult, %{{.*}}, %c20
// CHECK: memref.store %{{.*}}, %[[Y]]
func.func @step(%x: tensor<2x96xf32>, %w: tensor<20x96xf32>) -> tensor<2x20xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x20xf32>) -> tensor<2x20xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<2x96xf32>, tensor<20x96xf32>) outs(%f : tensor<2x20xf32>) -> tensor<2x20xf32>
  return %y : tensor<2x20xf32>
}

// -----

// An epilogue (a layer's bias, activation and residual sum) is applied to
// each sum before it is stored: the bias read at the column, the residual
// at the element, within the store's guard; constants canonicalization
// hoisted out of the generic's body come with it.
// CHECK-LABEL: gpu.func @finished(
// CHECK-SAME: %[[X:.*]]: memref<2x96xf32>, %[[W:.*]]: memref<20x96xf32>, %[[BIAS:.*]]: memref<20xf32>, %[[RES:.*]]: memref<2x20xf32>, %[[Y:.*]]: memref<2x20xf32>) kernel
// CHECK-SAME: {access = "read", name = "arg2"}, {access = "read", name = "arg3"}, {access = "write", name = "result0"}
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[COL:.*]], %c20
// CHECK-NEXT: scf.if %[[IN]]
// CHECK-NEXT: %[[B:.*]] = memref.load %[[BIAS]][%[[COL]]]
// CHECK: %[[R:.*]] = memref.load %[[RES]][%{{.*}}, %[[COL]]]
// CHECK: %[[BIASED:.*]] = arith.addf %{{.*}}, %[[B]]
// CHECK: %[[RELU:.*]] = arith.maximumf %[[BIASED]], %{{.*}}
// CHECK: %[[SUM:.*]] = arith.addf %[[RELU]], %[[R]]
// CHECK: memref.store %[[SUM]], %[[Y]]
func.func @finished(%x: tensor<2x96xf32>, %w: tensor<20x96xf32>, %bias: tensor<20xf32>, %res: tensor<2x20xf32>) -> tensor<2x20xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x20xf32>) -> tensor<2x20xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<2x96xf32>, tensor<20x96xf32>) outs(%f : tensor<2x20xf32>) -> tensor<2x20xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(m, n) -> (n)>, affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]}
       ins(%bias, %res : tensor<20xf32>, tensor<2x20xf32>) outs(%y : tensor<2x20xf32>) {
  ^bb0(%b: f32, %r: f32, %c: f32):
    %biased = arith.addf %c, %b : f32
    %floor = arith.constant 0.0 : f32
    %relu = arith.maximumf %biased, %floor : f32
    %sum = arith.addf %relu, %r : f32
    linalg.yield %sum : f32
  } -> tensor<2x20xf32>
  return %z : tensor<2x20xf32>
}
