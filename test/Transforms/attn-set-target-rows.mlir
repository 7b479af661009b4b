// attn-set-target's workgroup-rows replaces a GPU target's query rows per
// workgroup (a module's own target too); it is refused on CPU targets and
// where the tensor-core kernels could not split it into warps of 16 rows.
// RUN: attn-opt %s --attn-set-target="target=vulkan workgroup-rows=128" | FileCheck %s
// RUN: attn-opt %s --attn-set-target="target=cuda-sm90a" | FileCheck %s --check-prefix=SM90A
// RUN: attn-opt %s --attn-set-target="target=cuda-sm90a" | attn-opt --attn-set-target="workgroup-rows=64" | FileCheck %s --check-prefix=KEPT
// RUN: not attn-opt %s --attn-set-target="target=cpu workgroup-rows=64" 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: not attn-opt %s --attn-set-target="target=vulkan workgroup-rows=24" 2>&1 | FileCheck %s --check-prefix=ODD
// RUN: not attn-opt %s --attn-set-target="target=cuda workgroup-rows=512" 2>&1 | FileCheck %s --check-prefix=BIG
// RUN: not attn-opt %s --attn-set-target="target=cuda workgroup-rows=-16" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// CHECK: #attn.target<name = "vulkan-lavapipe", api = "vulkan"{{.*}} workgroup_rows = 128,
// sm_90a: two warpgroups of query rows, 64-key tiles in 112 KiB of dynamic
// shared memory, the warpgroup mma shape.
// SM90A: #attn.target<name = "cuda-sm90a", api = "cuda", chip = "sm_90a", subgroup_size = 32, workgroup_memory = 114688, workgroup_rows = 128, max_key_tile = 64, {{.*}}mma = [16, 8, 16, 64, 256, 16]
// KEPT: #attn.target<name = "cuda-sm90a", api = "cuda", chip = "sm_90a"{{.*}} workgroup_rows = 64,
// CPU: error: attn-set-target: workgroup-rows must be a multiple of 16 up to 256 on a GPU target, got 64 for 'cpu-avx2'
// ODD: error: attn-set-target: workgroup-rows must be a multiple of 16 up to 256 on a GPU target, got 24 for 'vulkan-lavapipe'
// BIG: error: attn-set-target: workgroup-rows must be a multiple of 16 up to 256 on a GPU target, got 512 for 'cuda-sm80'
// NEGATIVE: error: attn-set-target: workgroup-rows must be a multiple of 16 up to 256 on a GPU target, got -16 for 'cuda-sm80'
module {
}
