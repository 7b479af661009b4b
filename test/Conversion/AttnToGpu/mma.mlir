// f16 / bf16 attention on CUDA takes the tensor-core kernel
// (GpuMmaFlashKernel.cpp): 4 warps per 64-row query tile; K and V rows
// copied as they lie in memory with cp.async into a two-stage ring (one
// commit group per tile, wait for all but the newest), B fragments read
// with ldmatrix (.trans for V), both products of a tile on nvvm.mma.sync
// m16n8k16 with f32 accumulators, row maxima and sums over the quad of
// lanes by shuffles, scores in log2 units (ex2 without a multiply by
// log2 e). Vulkan keeps the scalar kernel unless asked to emulate the mma
// (tests), which stages the same chunks as 32-bit words.
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cuda-sm80 --attn-tile --attn-to-gpu-kernels | FileCheck %s --check-prefix=CUDA
// RUN: attn-opt %s --split-input-file --attn-set-target=target=vulkan --attn-tile --attn-to-gpu-kernels | FileCheck %s --check-prefix=VK
// RUN: attn-opt %s --split-input-file --attn-set-target=target=vulkan --attn-tile --attn-to-gpu-kernels="emulate-mma=true" | FileCheck %s --check-prefix=EMU
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cuda-sm80 --attn-tile --attn-to-gpu-kernels="tf32=true" | FileCheck %s --check-prefix=TF32
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cuda-sm80 --attn-tile --attn-to-gpu-kernels="tf32x3=true" | FileCheck %s --check-prefix=X3

// CUDA-LABEL: gpu.func @f16_causal(
// Q's 64 rows, then two stages of 32 keys of K and of V, as f16 (D = 64),
// 16-byte aligned for cp.async and ldmatrix.
// CUDA-SAME: workgroup(%[[Q:.*]] : memref<64x64xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[K:.*]] : memref<64x64xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[V:.*]] : memref<64x64xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CUDA-SAME: known_block_size = array<i32: 128, 1, 1>
// CUDA-SAME: nvvm.minctasm = 1
// The scale 1/8 times log2 e, one multiply per score.
// CUDA-NOT: arith.constant 1.44269502
// CUDA: arith.constant 0.180336878 : f32
// Query tiles in reverse order of the grid: the causal tile with the
// most key tiles (the last of 2) runs first.
// CUDA: arith.subi %c1, %block_id_x : index
// Q's rows, copied once (a group of their own), then the ring's first
// stage: 16-byte copies of K and V rows, zero-filled past the ends.
// CUDA: nvgpu.device_async_copy %arg0[{{.*}}], %[[Q]][{{.*}}], 8, %{{.*}} {bypassL1}
// CUDA: nvvm.cp.async.commit.group
// CUDA: nvgpu.device_async_copy %arg1[{{.*}}], %[[K]][{{.*}}], 8, %{{.*}} {bypassL1}
// CUDA: nvgpu.device_async_copy %arg2[{{.*}}], %[[V]][{{.*}}], 8, %{{.*}} {bypassL1}
// CUDA: nvvm.cp.async.commit.group
// CUDA-NOT: nvvm.cp.async.wait.group
// CUDA: scf.for
// Per tile: the next tile's copies, then wait for this one's.
// CUDA: nvgpu.device_async_copy
// CUDA: nvvm.cp.async.commit.group
// CUDA-NEXT: nvvm.cp.async.wait.group 1
// CUDA-NEXT: gpu.barrier
// S = Q K^T: D = 64 is 4 k-steps per 8 keys: Q's A fragments and K's B
// fragments by ldmatrix.x4.
// CUDA: nvgpu.ldmatrix %[[Q]][{{.*}}] {numTiles = 4 : i32, transpose = false}
// CUDA: nvgpu.ldmatrix %[[K]][{{.*}}] {numTiles = 4 : i32, transpose = false}
// CUDA: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CUDA: gpu.shuffle xor
// CUDA: llvm.call_intrinsic "llvm.nvvm.ex2.approx"
// P, rounded to f16, is the A operand of P V; V's B fragments by
// ldmatrix.trans.
// CUDA: arith.truncf %{{.*}} : f32 to f16
// CUDA: nvgpu.ldmatrix %[[V]][{{.*}}] {numTiles = 4 : i32, transpose = true}
// CUDA: nvvm.mma.sync
// CUDA-NOT: math.exp
// CUDA: gpu.return

// VK-LABEL: gpu.func @f16_causal(
// VK-SAME: known_block_size = array<i32: 64, 1, 1>
// VK-NOT: gpu.shuffle
// VK: gpu.return

// Emulated: Q, K and V tiles as words (64 rows, 2 x 32 rows, of 64 / 2),
// the mma operands and the ldmatrix row addresses in workgroup memory.
// EMU-LABEL: gpu.func @f16_causal(
// EMU-SAME: known_block_size = array<i32: 128, 1, 1>
// EMU-NOT: nvvm.mma.sync
// EMU-NOT: nvgpu
// EMU: memref.alloc() : memref<64x32xi32, 3>
// EMU: memref.alloc() : memref<64x32xi32, 3>
// EMU: memref.alloc() : memref<64x32xi32, 3>
// EMU: memref.alloc() : memref<128x4xi32, 3>
// EMU: memref.alloc() : memref<128x2xi32, 3>
// EMU: memref.alloc() : memref<128x2xi32, 3>
// EMU: gpu.shuffle xor %{{.*}}, %{{.*}}, %{{.*}} : f32
func.func @f16_causal(%q: tensor<1x2x97x64xf16>, %k: tensor<1x2x97x64xf16>,
                      %v: tensor<1x2x97x64xf16>) -> tensor<1x2x97x64xf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x97x64xf16>, tensor<1x2x97x64xf16>, tensor<1x2x97x64xf16>)
      -> tensor<1x2x97x64xf16>
  return %o : tensor<1x2x97x64xf16>
}

// -----

// bf16 operands are i32 words; D = 40 pads to 3 k-steps (48 columns, the
// last ldmatrix an x2), Dv = 40 is 5 value tiles.
// CUDA-LABEL: gpu.func @bf16_dense(
// CUDA-SAME: workgroup(%{{.*}} : memref<64x48xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<64x48xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<64x40xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CUDA: nvgpu.device_async_copy
// CUDA: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CUDA: nvgpu.ldmatrix {{.*}} {numTiles = 2 : i32, transpose = false}
// CUDA: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// On Vulkan bf16 travels as i16 words.
// VK-LABEL: gpu.func @bf16_dense(
// VK-SAME: memref<1x2x97x40xi16>
// VK: arith.bitcast %{{.*}} : i16 to bf16
// VK: arith.extf %{{.*}} : bf16 to f32
func.func @bf16_dense(%q: tensor<1x2x97x40xbf16>, %k: tensor<1x2x97x40xbf16>,
                      %v: tensor<1x2x97x40xbf16>) -> tensor<1x2x97x40xbf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x97x40xbf16>, tensor<1x2x97x40xbf16>, tensor<1x2x97x40xbf16>)
      -> tensor<1x2x97x40xbf16>
  return %o : tensor<1x2x97x40xbf16>
}

// -----

// Dv = 20 is not whole 16-byte chunks: K and V are staged by plain loads
// and stores (same swizzled layout, V padded to 24 columns), no cp.async.
// A soft-cap keeps the scores in natural units: exp is ex2 of x log2 e.
// CUDA-LABEL: gpu.func @f16_softcap_dv20(
// CUDA-SAME: workgroup(%{{.*}} : memref<64x32xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[K:.*]] : memref<64x32xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[V:.*]] : memref<64x24xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CUDA-NOT: nvgpu.device_async_copy
// CUDA-NOT: nvvm.cp.async
// CUDA: %[[LOG2E:.*]] = arith.constant 1.44269502 : f32
// CUDA: memref.store %{{.*}}, %[[K]][{{.*}}] : memref<64x32xf16, #gpu.address_space<workgroup>>
// CUDA: memref.store %{{.*}}, %[[V]][{{.*}}] : memref<64x24xf16, #gpu.address_space<workgroup>>
// CUDA: arith.mulf %{{.*}}, %[[LOG2E]] : f32
// CUDA-NEXT: llvm.call_intrinsic "llvm.nvvm.ex2.approx"
// CUDA-NOT: nvgpu.device_async_copy
// CUDA: gpu.return
func.func @f16_softcap_dv20(%q: tensor<1x2x97x24xf16>, %k: tensor<1x2x97x24xf16>,
                            %v: tensor<1x2x97x20xf16>) -> tensor<1x2x97x20xf16> {
  %o = attn.attention %q, %k, %v mods = [#attn.softcap<cap = 30.0>]
      : (tensor<1x2x97x24xf16>, tensor<1x2x97x24xf16>, tensor<1x2x97x20xf16>)
      -> tensor<1x2x97x20xf16>
  return %o : tensor<1x2x97x20xf16>
}

// -----

// GQA decoding: the 4 query heads of each KV head are the rows of one
// workgroup (grid y = 2 KV heads, not 8 query heads); 4096 keys split over
// 32 workgroups per KV head, merged by the second kernel.
// CUDA-LABEL: gpu.func @f16_decode_gqa(
// CUDA-SAME: attn.grid = array<i64: 32, 2, 1>
// CUDA-SAME: attn.key_splits = 32
// CUDA-SAME: attn.packed_heads = 4
// CUDA: nvvm.mma.sync
// CUDA-LABEL: gpu.func @f16_decode_gqa_merge(
// CUDA-SAME: attn.grid = array<i64: 1, 2, 1>
func.func @f16_decode_gqa(%q: tensor<1x8x1x128xf16>, %k: tensor<1x2x4096x128xf16>,
                          %v: tensor<1x2x4096x128xf16>) -> tensor<1x8x1x128xf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x8x1x128xf16>, tensor<1x2x4096x128xf16>, tensor<1x2x4096x128xf16>)
      -> tensor<1x8x1x128xf16>
  return %o : tensor<1x8x1x128xf16>
}

// -----

// f32 stays on the scalar kernel on CUDA too, unless asked for TF32
// products: then m16n8k8 tf32 mma on rounded operands, f32 staged (D = 40
// is 5 k-steps of 8, 10 chunks of 4 per row).
// TF32-LABEL: gpu.func @f32_dense(
// TF32-SAME: memref<64x40xf32, #gpu.address_space<workgroup>>
// TF32-SAME: known_block_size = array<i32: 128, 1, 1>
// TF32: nvgpu.device_async_copy {{.*}}, 4, %{{.*}} {bypassL1} : memref<1x2x97x40xf32> to memref<64x40xf32, #gpu.address_space<workgroup>>
// TF32: nvgpu.ldmatrix {{.*}} : memref<64x40xf32, #gpu.address_space<workgroup>> -> vector<4x1xf32>
// TF32: llvm.call_intrinsic "llvm.nvvm.f2tf32.rna"
// TF32: nvvm.mma.sync {{.*}} multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// 3xTF32: each operand word w splits into hi = tf32(w) and lo = w - hi;
// the product is three mma, lo x hi, hi x lo, then hi x hi, each
// accumulating into the one before.
// X3-LABEL: gpu.func @f32_dense(
// X3: %[[W:.*]] = arith.bitcast %[[WORD:.*]] : i32 to f32
// X3-NEXT: %[[HI:.*]] = llvm.call_intrinsic "llvm.nvvm.f2tf32.rna"(%[[W]]) : (f32) -> i32
// X3-NEXT: %[[W2:.*]] = arith.bitcast %[[WORD]] : i32 to f32
// X3-NEXT: %[[HIF:.*]] = arith.bitcast %[[HI]] : i32 to f32
// X3-NEXT: arith.subf %[[W2]], %[[HIF]] : f32
// X3: %[[LOHI:.*]] = nvvm.mma.sync
// X3-NEXT: %[[C0:.*]] = llvm.extractvalue %[[LOHI]][0]
// X3: %[[HILO:.*]] = nvvm.mma.sync {{.*}} C[%[[C0]],
// X3-NEXT: %[[D0:.*]] = llvm.extractvalue %[[HILO]][0]
// X3: nvvm.mma.sync {{.*}} C[%[[D0]], {{.*}} shape = #nvvm.shape<m = 16, n = 8, k = 8>
// CUDA-LABEL: gpu.func @f32_dense(
// CUDA-SAME: known_block_size = array<i32: 64, 1, 1>
// CUDA-NOT: nvvm.mma.sync
// CUDA: gpu.return
func.func @f32_dense(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                     %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>)
      -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
