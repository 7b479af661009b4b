// The GPU kernels of the tiled form (attn-to-gpu-kernels): one gpu.func per
// function of one attention, its launch recorded on it, K / V tiles staged
// in workgroup memory between barriers, the key tiles of the compile-time
// schedule (a constant buffer), and the target's spelling of workgroup
// memory and exp.
// Key splits (decoding shapes) are pinned in the last case only.
// RUN: attn-opt %s --split-input-file --attn-set-target=target=vulkan --attn-tile --attn-to-gpu-kernels="max-key-splits=1" | FileCheck %s --check-prefix=VK
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cuda-sm90 --attn-tile --attn-to-gpu-kernels="max-key-splits=1" | FileCheck %s --check-prefix=CUDA
// RUN: attn-opt %s --split-input-file --attn-set-target=target=vulkan --attn-tile --attn-to-gpu-kernels="count-tiles=true max-key-splits=1" | FileCheck %s --check-prefix=COUNT
// RUN: attn-opt %s --split-input-file --attn-set-target=target=vulkan --attn-tile --attn-to-gpu-kernels | FileCheck %s --check-prefix=SPLIT

// VK: module attributes {attn.target = #attn.target<name = "vulkan-lavapipe", api = "vulkan"{{.*}}>, gpu.container_module}
// VK: gpu.module @attn_kernels attributes {spirv.target_env = #spirv.target_env<
// VK-NOT: func.func @causal
// VK: gpu.func @causal(%{{.*}}: memref<1x2x97x40xf32>, %{{.*}}: memref<1x1x97x40xf32>, %{{.*}}: memref<1x1x97x40xf32>, %{{.*}}: memref<10xi32>, %{{.*}}: memref<1x2x97x40xf32>) kernel
// VK-SAME: attn.bindings = [{access = "read", name = "arg0"}, {access = "read", name = "arg1"}, {access = "read", name = "arg2"}, {access = "constant", name = "schedule"}, {access = "write", name = "result0"}]
// Per query tile: the CSR offset, then rows [0, 2), [2, 6); entries are
// key tile * 2 + full.
// VK-SAME: attn.constants = {schedule = dense<[1, 0, 2, 6, 0, 2, 1, 3, 4, 6]> : tensor<10xi32>}
// VK-SAME: attn.grid = array<i64: 2, 2, 1>
// VK-SAME: attn.tiling = array<i64: 64, 0, 32>
// VK-SAME: known_block_size = array<i32: 64, 1, 1>
// VK-SAME: spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>
// VK-DAG: gpu.block_id x
// VK-DAG: gpu.block_id y
// VK-DAG: gpu.block_id z
// VK-DAG: gpu.thread_id x
// Two stages of 32 key rows (the next tile is staged while this one is
// computed).
// VK: memref.alloc() : memref<64x40xf32, 3>
// VK: memref.alloc() : memref<64x40xf32, 3>
// The first tile of the schedule's entries of this query tile, staged
// between barriers; then per entry: stage the next (if any), compute,
// one barrier.
// VK: gpu.barrier
// VK: memref.store %{{.*}} : memref<64x40xf32, 3>
// VK: gpu.barrier
// VK: scf.for
// VK: scf.if
// VK: memref.load %{{.*}} : memref<10xi32>
// VK: arith.remui %{{.*}}, %c2
// VK: memref.store %{{.*}} : memref<64x40xf32, 3>
// Full tiles take the key loop without mask code.
// VK: scf.if
// VK: scf.for
// VK: math.fma
// VK: math.exp
// VK: } else {
// VK: arith.cmpi
// VK: math.exp
// VK: gpu.return

// CUDA: gpu.func @causal
// CUDA-SAME: workgroup(%{{.*}} : memref<64x40xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<64x40xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CUDA-SAME: kernel
// CUDA-NOT: spirv.entry_point_abi
// CUDA-NOT: memref.alloc
// CUDA-NOT: math.exp {{.*}}: f32
// CUDA-NOT: math.fma
// CUDA: llvm.intr.fma
// CUDA: llvm.call_intrinsic "llvm.nvvm.ex2.approx"
// CUDA: gpu.return

// COUNT: gpu.func @causal({{.*}}, %{{.*}}: memref<8xi32>, %{{.*}}: memref<1x2x97x40xf32>) kernel
// COUNT-SAME: {access = "write", name = "tile_counts"}, {access = "write", name = "result0"}
func.func @causal(%q: tensor<1x2x97x40xf32>, %k: tensor<1x1x97x40xf32>,
                  %v: tensor<1x1x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x97x40xf32>, tensor<1x1x97x40xf32>, tensor<1x1x97x40xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

// -----

// Dense: every key tile, no schedule and no mask code.
// VK: gpu.func @dense(%{{.*}}: memref<1x2x50x64xf32>, %{{.*}}: memref<1x2x70x64xf32>, %{{.*}}: memref<1x2x70x64xf32>, %{{.*}}: memref<1x2x50x64xf32>) kernel
// VK-NOT: attn.constants
// VK-SAME: attn.grid = array<i64: 1, 2, 1>
// VK-NOT: arith.cmpi {{.*}} : i64
// VK: gpu.return
func.func @dense(%q: tensor<1x2x50x64xf32>, %k: tensor<1x2x70x64xf32>,
                 %v: tensor<1x2x70x64xf32>) -> tensor<1x2x50x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x50x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>)
      -> tensor<1x2x50x64xf32>
  return %o : tensor<1x2x50x64xf32>
}

// -----

// Segment ids are read from their buffers in the kernel; a random-block
// table too large for selects becomes a constant buffer.
// VK: gpu.func @documents_bigbird(%{{.*}}: memref<1x1x200x32xf32>, %{{.*}}: memref<1x1x200x32xf32>, %{{.*}}: memref<1x1x200x32xf32>, %{{.*}}: memref<1x200xi32>, %{{.*}}: memref<{{[0-9]+}}xi32>, %{{.*}}: memref<1x1x200x32xf32>, %{{.*}}: memref<{{[0-9]+}}xi32>) kernel
// VK-SAME: {access = "constant", name = "table1"}
// VK: memref.load %{{.*}} : memref<1x200xi32>
func.func @documents_bigbird(%q: tensor<1x1x200x32xf32>, %k: tensor<1x1x200x32xf32>,
                             %v: tensor<1x1x200x32xf32>, %ids: tensor<1x200xi32>)
    -> tensor<1x1x200x32xf32> {
  %o = attn.attention %q, %k, %v segments(%ids, %ids)
      pattern(#attn.and<[#attn.segments, #attn.or<[#attn.window<left = 8, right = 8>,
              #attn.random_blocks<block = 8, count = 3, seed = 1>]>]>)
      : (tensor<1x1x200x32xf32>, tensor<1x1x200x32xf32>, tensor<1x1x200x32xf32>,
         tensor<1x200xi32>, tensor<1x200xi32>) -> tensor<1x1x200x32xf32>
  return %o : tensor<1x1x200x32xf32>
}

// -----

// D = Dv = 128 in f32: two invocations per query row, each with half of q
// and of the accumulator; a shuffle adds the two halves of each score.
// VK-LABEL: gpu.func @d128(
// VK-SAME: known_block_size = array<i32: 128, 1, 1>
// VK: gpu.shuffle xor %{{.*}}, %{{.*}}, %{{.*}} : f32
// CUDA-LABEL: gpu.func @d128(
// CUDA-SAME: known_block_size = array<i32: 128, 1, 1>
// CUDA: gpu.shuffle xor
func.func @d128(%q: tensor<1x2x64x128xf32>, %k: tensor<1x2x64x128xf32>,
                %v: tensor<1x2x64x128xf32>) -> tensor<1x2x64x128xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x64x128xf32>, tensor<1x2x64x128xf32>, tensor<1x2x64x128xf32>)
      -> tensor<1x2x64x128xf32>
  return %o : tensor<1x2x64x128xf32>
}

// -----

// Decoding: 2 workgroups (fewer than lavapipe's 32) over 40 key tiles. The
// key tiles are split over 10 workgroups per query tile (4 tiles each)
// that write unnormalized O, m and l; @decode_merge combines them by
// log-sum-exp into the output.
// SPLIT-LABEL: gpu.func @decode(
// SPLIT-SAME: %{{.*}}: memref<20x64x66xf32>) kernel
// SPLIT-SAME: {access = "write", name = "partials"}
// SPLIT-SAME: attn.grid = array<i64: 10, 2, 1>
// SPLIT-SAME: attn.key_splits = 10
// SPLIT: arith.remui
// SPLIT: arith.divui
// SPLIT: memref.store %{{.*}} : memref<20x64x66xf32>
// SPLIT-LABEL: gpu.func @decode_merge(
// SPLIT-SAME: %{{.*}}: memref<20x64x66xf32>, %{{.*}}: memref<1x2x1x64xf32>) kernel
// SPLIT-SAME: attn.bindings = [{access = "read", name = "partials"}, {access = "write", name = "result0"}]
// SPLIT-SAME: attn.grid = array<i64: 1, 2, 1>
// SPLIT: arith.maximumf
// SPLIT: math.exp
// SPLIT: memref.store %{{.*}} : memref<1x2x1x64xf32>
func.func @decode(%q: tensor<1x2x1x64xf32>, %k: tensor<1x2x1280x64xf32>,
                  %v: tensor<1x2x1280x64xf32>) -> tensor<1x2x1x64xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x1x64xf32>, tensor<1x2x1280x64xf32>, tensor<1x2x1280x64xf32>)
      -> tensor<1x2x1x64xf32>
  return %o : tensor<1x2x1x64xf32>
}
