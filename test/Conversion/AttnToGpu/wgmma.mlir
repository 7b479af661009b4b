// f16 / bf16 attention on sm_90a (cuda-sm90a) takes the warpgroup kernel
// (GpuWgmmaFlashKernel.cpp): the mma.sync kernel's ring, softmax and stores
// with both products as wgmma.mma_async, emitted as inline PTX (P V takes
// A from registers, which nvvm.wgmma.mma_async cannot). A workgroup is two
// warpgroups over 128 query rows, each multiplying its own 64 (Q's
// descriptor starts at the warpgroup's first row). Tiles are rows of
// 64 columns (one 128-byte swizzle atom row), up to 64 keys, in dynamic
// shared memory (sm_90a gives a workgroup 112 KiB): views of one
// gpu.dynamic_shared_memory from its first 1024-byte boundary, the bytes
// the launch asks for in attn.shared_bytes (1 KiB of alignment slack
// included); the descriptors start from each view's shared address. sm_90
// without the `a` keeps the mma.sync kernel in static shared memory; head
// dims that are not whole atoms keep the mma.sync kernel.
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cuda-sm90a --attn-tile --attn-to-gpu-kernels | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cuda-sm90 --attn-tile --attn-to-gpu-kernels | FileCheck %s --check-prefix=SM90

// CHECK-LABEL: gpu.func @f16_causal(
// CHECK-NOT: workgroup(
// Q's 128 rows, two stages of 64 keys of K and of V: D = 64 is one block;
// 1024 + 16384 + 2 x 16384 bytes.
// CHECK-SAME: attn.shared_bytes = 50176 : i32
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: %[[ARENA:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[START:.*]] = memref.extract_aligned_pointer_as_index %[[ARENA]]
// CHECK: arith.remui %[[START]], %c1024
// CHECK: %[[Q:.*]] = memref.view %{{.*}} to memref<128x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[K:.*]] = memref.view %{{.*}} to memref<128x64xf16, #gpu.address_space<workgroup>>
// CHECK: %[[V:.*]] = memref.view %{{.*}} to memref<128x64xf16, #gpu.address_space<workgroup>>
// The ring's cp.async; after each wait a proxy fence (wgmma reads through
// the async proxy), then the barrier.
// CHECK: nvgpu.device_async_copy %arg1[{{.*}}], %[[K]][{{.*}}], 8, %{{.*}} {bypassL1}
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// S = Q K^T: descriptors of K and Q from their shared addresses (Q's from
// row 64 (warp / 4)), every operand pinned before the fence, then 4 wgmma
// (D / 16) on descriptors.
// CHECK: memref.extract_aligned_pointer_as_index %[[K]]
// CHECK: %[[WG:.*]] = arith.divui %{{.*}}, %c4 : index
// CHECK: arith.muli %[[WG]], %c64 : index
// CHECK: memref.extract_aligned_pointer_as_index %[[Q]]
// CHECK: llvm.inline_asm has_side_effects "", "=l,0"
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: llvm.inline_asm has_side_effects "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {$0, {{.*}}, $31}, $32, $33, 1, 1, 1, 0, 0;"
// CHECK-COUNT-3: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{.*}}, 0, 0;
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx"
// O += P V: P rounded to f16 as 4 A words, V N-major (trans-b 1), one
// wgmma per 16 keys (4).
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: memref.extract_aligned_pointer_as_index %[[V]]
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: llvm.inline_asm has_side_effects "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {$0, {{.*}}, $31}, {$32, $33, $34, $35}, $36, 1, 1, 1, 1;"
// CHECK-NEXT: llvm.extractvalue
// CHECK-COUNT-3: {$32, $33, $34, $35}, $36, 1, 1, 1, 1;
// CHECK-NOT: nvvm.mma.sync
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: gpu.return

// SM90-LABEL: gpu.func @f16_causal(
// SM90-SAME: {llvm.align = 16 : i64}
// SM90-NOT: attn.shared_bytes
// SM90-NOT: gpu.dynamic_shared_memory
// SM90-NOT: wgmma
// SM90: nvvm.mma.sync
// SM90: gpu.return
func.func @f16_causal(%q: tensor<1x2x128x64xf16>, %k: tensor<1x2x128x64xf16>,
                      %v: tensor<1x2x128x64xf16>) -> tensor<1x2x128x64xf16> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x128x64xf16>, tensor<1x2x128x64xf16>, tensor<1x2x128x64xf16>)
      -> tensor<1x2x128x64xf16>
  return %o : tensor<1x2x128x64xf16>
}

// -----

// D = 128, Dv = 64 (bf16): Q and K are two 64-column blocks, block 1 of
// all rows after block 0; V one block; S is 8 wgmma, P V m64n64 per 16 keys.
// CHECK-LABEL: gpu.func @bf16_d128_v64(
// CHECK-SAME: attn.shared_bytes = 82944 : i32
// CHECK: memref.view %{{.*}} to memref<256x64xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view %{{.*}} to memref<256x64xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view %{{.*}} to memref<128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, 0, 0;
// CHECK-NEXT: llvm.extractvalue
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, 1, 1, 1, 1;
func.func @bf16_d128_v64(%q: tensor<1x1x64x128xbf16>, %k: tensor<1x1x64x128xbf16>,
                         %v: tensor<1x1x64x64xbf16>) -> tensor<1x1x64x64xbf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x1x64x128xbf16>, tensor<1x1x64x128xbf16>, tensor<1x1x64x64xbf16>)
      -> tensor<1x1x64x64xbf16>
  return %o : tensor<1x1x64x64xbf16>
}

// -----

// D = 80 is not whole 64-column atoms: the mma.sync kernel, in dynamic
// shared memory too (its 64-key stages pass the static 48 KiB).
// CHECK-LABEL: gpu.func @f16_d80(
// CHECK-SAME: attn.shared_bytes = 62464 : i32
// CHECK-NOT: wgmma
// CHECK: nvvm.mma.sync
// CHECK: gpu.return
func.func @f16_d80(%q: tensor<1x1x64x80xf16>, %k: tensor<1x1x64x80xf16>,
                   %v: tensor<1x1x64x80xf16>) -> tensor<1x1x64x80xf16> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x1x64x80xf16>, tensor<1x1x64x80xf16>, tensor<1x1x64x80xf16>)
      -> tensor<1x1x64x80xf16>
  return %o : tensor<1x1x64x80xf16>
}
