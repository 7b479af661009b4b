// populateAttnToGpuKernelsPatterns from the stock mlir-opt-22 (through the
// plugin's test-attn-patterns): in a module whose #attn.target is a GPU,
// a function of one tiled attention becomes a kernel of the attn_kernels
// gpu.module, set up for the target's API, and the host function goes.
// A sanitized plugin cannot load into the stock (uninstrumented) mlir-opt-22.
// UNSUPPORTED: sanitize
// RUN: mlir-opt-22 --load-dialect-plugin=%attn_obj_root/lib/libAttnPlugin.so --load-pass-plugin=%attn_obj_root/lib/libAttnPlugin.so --pass-pipeline="builtin.module(attn-set-target{target=vulkan},attn-tile,test-attn-patterns)" %s | FileCheck %s --check-prefix=VK
// RUN: mlir-opt-22 --load-dialect-plugin=%attn_obj_root/lib/libAttnPlugin.so --load-pass-plugin=%attn_obj_root/lib/libAttnPlugin.so --pass-pipeline="builtin.module(attn-set-target{target=cuda-sm80},attn-tile,test-attn-patterns)" %s | FileCheck %s --check-prefix=CUDA

// VK: module attributes {attn.target = #attn.target<name = "vulkan-lavapipe"{{.*}}, gpu.container_module}
// VK: gpu.module @attn_kernels attributes {spirv.target_env
// VK: gpu.func @causal({{.*}}memref<1x2x64x16xf32>{{.*}}) kernel attributes {{{.*}}attn.grid = array<i64: 1, 2, 1>
// VK-SAME: spirv.entry_point_abi
// VK-NOT: func.func @causal
// CUDA: gpu.module @attn_kernels {
// CUDA: gpu.func @causal({{.*}}) workgroup({{.*}}memref<{{.*}}, #gpu.address_space<workgroup>>
// CUDA-NOT: spirv.entry_point_abi
// CUDA-NOT: func.func @causal
func.func @causal(%q: tensor<1x2x64x16xf32>, %k: tensor<1x2x64x16xf32>,
                  %v: tensor<1x2x64x16xf32>) -> tensor<1x2x64x16xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>)
      -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}
