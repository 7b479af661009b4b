// Functions of row reductions become the row kernel of
// GpuRowReductionKernel.cpp: a workgroup of 128 invocations per row (a
// grid-stride loop past 8192 rows), per reduction a pass of the
// invocations over the row's columns, subgroup shuffles, one barrier
// between the subgroups' totals (two sets in workgroup memory, used in
// turn) and their sum, the row values then in registers, and a last pass
// that stores the result, recomputing the element-wise values it reads
// (x is loaded again: no row is kept). On Vulkan a loop with results that
// may run no iteration is guarded (LLVM 22's scf-to-spirv leaves its
// results undefined then); on CUDA rsqrt is a square root and a division.
// RUN: attn-opt %s --attn-set-target=target=vulkan --attn-to-gpu-kernels | FileCheck %s
// RUN: attn-opt %s --attn-set-target=target=cuda-sm80 --attn-to-gpu-kernels | FileCheck %s --check-prefix=CUDA

// CHECK-LABEL: gpu.func @rms_norm(
// CHECK-SAME: %[[X:.*]]: memref<10x300xf32>, %[[W:.*]]: memref<300xf32>, %[[Y:.*]]: memref<10x300xf32>) kernel
// CHECK-SAME: attn.bindings = [{access = "read", name = "arg0"}, {access = "read", name = "arg1"}, {access = "write", name = "result0"}]
// CHECK-SAME: attn.grid = array<i64: 10, 1, 1>
// CHECK: %[[TID:.*]] = gpu.thread_id x
// Two sets of the 16 subgroups' totals (lavapipe's subgroups: 8 lanes).
// CHECK: %[[PARTIALS:.*]] = memref.alloc() : memref<32xf32, 3>
// CHECK-NOT: memref.alloc
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %c10 step %c10
// The sum of squares: this invocation's columns, guarded on Vulkan.
// CHECK: %[[RUNS:.*]] = arith.cmpi slt, %[[TID]], %c300
// CHECK: scf.if %[[RUNS]] -> (f32)
// CHECK: scf.for %[[C:.*]] = %[[TID]] to %c300 step %c128 iter_args
// CHECK: memref.load %[[X]][%[[ROW]], %[[C]]]
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: } else {
// The subgroup's total: a butterfly of shuffles; lane 0 stores it.
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32, %c8_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32, %c8_i32{{.*}} : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32, %c8_i32{{.*}} : f32
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[PARTIALS]]
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// Every subgroup adds the 16 totals (two per lane) and shuffles again.
// CHECK: memref.load %[[PARTIALS]]
// CHECK: memref.load %[[PARTIALS]]
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32{{.*}}, %c8_i32{{.*}} : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32{{.*}}, %c8_i32{{.*}} : f32
// The row generic: rsqrt(sum / N + eps), once per row.
// CHECK: math.rsqrt
// The last pass, x read again, nothing carried.
// CHECK: scf.for %[[C2:.*]] = %[[TID]] to %c300{{.*}} step %c128{{.*}} {
// CHECK: memref.load %[[X]][%[[ROW]], %[[C2]]]
// CHECK: memref.load %[[W]][%[[C2]]]
// CHECK: memref.store %{{.*}}, %[[Y]][%[[ROW]], %[[C2]]]
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return

// With more rows than workgroups and an odd number of reductions, a
// barrier ends each row: the next row's reduction writes the set of
// totals this one read.
// CHECK-LABEL: gpu.func @rms_rows(
// CHECK-SAME: attn.grid = array<i64: 8192, 1, 1>
// CHECK: scf.for %{{.*}} = %{{.*}} to %c9000 step %c8192
// CHECK: gpu.barrier
// CHECK: memref.store
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return

// With two reductions, the second uses the other set (offset 16): no
// barrier after the last pass.
// CHECK-LABEL: gpu.func @softmax_rows(
// CHECK-SAME: attn.grid = array<i64: 8192, 1, 1>
// CHECK: scf.for %{{.*}} = %{{.*}} to %c9000 step %c8192
// The maximum's partial values start at -inf, its tree takes maxima.
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.maximumf
// CHECK: gpu.barrier
// CHECK: math.exp
// CHECK: arith.addi %c16
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return

// CUDA-LABEL: gpu.func @rms_norm(
// CUDA-NOT: arith.cmpi slt
// CUDA: scf.for
// 32-lane warps: 4 totals, lanes past them add 0.
// CUDA: gpu.shuffle xor %{{.*}}, %c16_i32, %c32_i32 : f32
// CUDA: gpu.barrier
// CUDA: arith.cmpi ult, %{{.*}}, %c4
// CUDA: arith.select
// CUDA: gpu.shuffle xor %{{.*}}, %c16_i32{{.*}}, %c32_i32{{.*}} : f32
// CUDA-NOT: math.rsqrt
// CUDA: llvm.call_intrinsic "llvm.sqrt"
// CUDA: arith.divf
// CUDA: gpu.return

#rows = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#id1 = affine_map<(i) -> (i)>
func.func @rms_norm(%x: tensor<10x300xf32>, %w: tensor<300xf32>) -> tensor<10x300xf32> {
  %e = tensor.empty() : tensor<10x300xf32>
  %er = tensor.empty() : tensor<10xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<10xf32>) -> tensor<10xf32>
  %squares = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<10x300xf32>) outs(%acc : tensor<10xf32>) {
  ^bb0(%a: f32, %s: f32):
    %a2 = arith.mulf %a, %a : f32
    %t = arith.addf %a2, %s : f32
    linalg.yield %t : f32
  } -> tensor<10xf32>
  %scale = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%squares : tensor<10xf32>) outs(%er : tensor<10xf32>) {
  ^bb0(%s: f32, %o: f32):
    %n = arith.constant 300.0 : f32
    %eps = arith.constant 1.0e-6 : f32
    %v = arith.divf %s, %n : f32
    %ve = arith.addf %v, %eps : f32
    %q = math.rsqrt %ve : f32
    linalg.yield %q : f32
  } -> tensor<10xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #col, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %scale, %w : tensor<10x300xf32>, tensor<10xf32>, tensor<300xf32>) outs(%e : tensor<10x300xf32>) {
  ^bb0(%a: f32, %q: f32, %g: f32, %o: f32):
    %n = arith.mulf %a, %q : f32
    %t = arith.mulf %n, %g : f32
    linalg.yield %t : f32
  } -> tensor<10x300xf32>
  return %y : tensor<10x300xf32>
}

func.func @rms_rows(%x: tensor<9000x7xf32>) -> tensor<9000x7xf32> {
  %e = tensor.empty() : tensor<9000x7xf32>
  %er = tensor.empty() : tensor<9000xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<9000xf32>) -> tensor<9000xf32>
  %squares = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<9000x7xf32>) outs(%acc : tensor<9000xf32>) {
  ^bb0(%a: f32, %s: f32):
    %a2 = arith.mulf %a, %a : f32
    %t = arith.addf %a2, %s : f32
    linalg.yield %t : f32
  } -> tensor<9000xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %squares : tensor<9000x7xf32>, tensor<9000xf32>) outs(%e : tensor<9000x7xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %q = math.rsqrt %s : f32
    %t = arith.mulf %a, %q : f32
    linalg.yield %t : f32
  } -> tensor<9000x7xf32>
  return %y : tensor<9000x7xf32>
}

func.func @softmax_rows(%x: tensor<9000x7xf32>) -> tensor<9000x7xf32> {
  %e = tensor.empty() : tensor<9000x7xf32>
  %er = tensor.empty() : tensor<9000xf32>
  %zero = arith.constant 0.0 : f32
  %low = arith.constant 0xFF800000 : f32
  %start = linalg.fill ins(%low : f32) outs(%er : tensor<9000xf32>) -> tensor<9000xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<9000xf32>) -> tensor<9000xf32>
  %max = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<9000x7xf32>) outs(%start : tensor<9000xf32>) {
  ^bb0(%a: f32, %m: f32):
    %t = arith.maximumf %a, %m : f32
    linalg.yield %t : f32
  } -> tensor<9000xf32>
  %sum = linalg.generic {indexing_maps = [#rows, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %max : tensor<9000x7xf32>, tensor<9000xf32>) outs(%acc : tensor<9000xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32):
    %d = arith.subf %a, %m : f32
    %p = math.exp %d : f32
    %t = arith.addf %p, %s : f32
    linalg.yield %t : f32
  } -> tensor<9000xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max, %sum : tensor<9000x7xf32>, tensor<9000xf32>, tensor<9000xf32>) outs(%e : tensor<9000x7xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %p = math.exp %d : f32
    %t = arith.divf %p, %s : f32
    linalg.yield %t : f32
  } -> tensor<9000x7xf32>
  return %y : tensor<9000x7xf32>
}
