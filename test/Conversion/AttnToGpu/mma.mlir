// f16 / bf16 attention on CUDA takes the tensor-core kernel
// (GpuMmaFlashKernel.cpp): 4 warps per 64-row query tile, K and V staged as
// 16-bit pairs (V transposed), both products of a tile on nvvm.mma.sync
// m16n8k16 with f32 accumulators, row maxima and sums over the quad of
// lanes by shuffles. Vulkan keeps the scalar kernel unless asked to emulate
// the mma (tests).
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cuda-sm80 --attn-tile --attn-to-gpu-kernels | FileCheck %s --check-prefix=CUDA
// RUN: attn-opt %s --split-input-file --attn-set-target=target=vulkan --attn-tile --attn-to-gpu-kernels | FileCheck %s --check-prefix=VK
// RUN: attn-opt %s --split-input-file --attn-set-target=target=vulkan --attn-tile --attn-to-gpu-kernels="emulate-mma=true" | FileCheck %s --check-prefix=EMU

// CUDA-LABEL: gpu.func @f16_causal(
// Two stages of 32 keys: K as words along D (64 x 32 words), V transposed
// (64 columns x 2 x 16 words along the keys).
// CUDA-SAME: workgroup(%{{.*}} : memref<64x32xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<64x32xi32, #gpu.address_space<workgroup>>)
// CUDA-SAME: known_block_size = array<i32: 128, 1, 1>
// Q's fragments: pairs of f16 bits packed into words.
// CUDA: arith.bitcast %{{.*}} : f16 to i16
// CUDA: arith.shli
// CUDA: arith.ori
// S = Q K^T: D = 64 is 4 k-steps per 8 keys.
// CUDA: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CUDA: gpu.shuffle xor
// CUDA: llvm.call_intrinsic "llvm.nvvm.ex2.approx"
// P, rounded to f16, is the A operand of P V.
// CUDA: arith.truncf %{{.*}} : f32 to f16
// CUDA: nvvm.mma.sync
// CUDA-NOT: math.exp
// CUDA: gpu.return

// VK-LABEL: gpu.func @f16_causal(
// VK-SAME: known_block_size = array<i32: 64, 1, 1>
// VK-NOT: gpu.shuffle
// VK: gpu.return

// EMU-LABEL: gpu.func @f16_causal(
// EMU-SAME: known_block_size = array<i32: 128, 1, 1>
// EMU-NOT: nvvm.mma.sync
// EMU: memref.alloc() : memref<128x4xi32, 3>
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

// bf16 operands are i32 words; D = 40 pads to 3 k-steps (48 columns).
// CUDA-LABEL: gpu.func @bf16_dense(
// CUDA-SAME: workgroup(%{{.*}} : memref<64x24xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<40x32xi32, #gpu.address_space<workgroup>>)
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

// f32 stays on the scalar kernel on CUDA too.
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
