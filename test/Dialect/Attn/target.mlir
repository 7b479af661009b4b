// #attn.target: the one description of the machine a module is lowered for
// (TargetDescription.h). It round-trips with parameters equal to their
// defaults left out (l1_bytes, l2_bytes below); every parameter check has
// a case in target-invalid.mlir; passes read it back
// (Transforms/attn-verify-target-attr.mlir).
// RUN: attn-opt %s --split-input-file | attn-opt --split-input-file | FileCheck %s

// CHECK: module attributes {attn.target = #attn.target<name = "zen4", vector_bits = 512, vector_registers = 32, features = ["avx512bf16"]>}
module attributes {attn.target = #attn.target<name = "zen4", vector_bits = 512, vector_registers = 32, l1_bytes = 32768, l2_bytes = 1048576, features = ["avx512bf16"]>} {
}

// -----

// CHECK: #attn.target<name = "h100", api = "cuda", chip = "sm_90", subgroup_size = 32, workgroup_memory = 232448, workgroup_rows = 128, max_key_tile = 64, min_workgroups = 264, pipeline_depth = 3, mma = [16, 8, 16, 64, 128, 16], element_types = [f16, bf16]>
module attributes {attn.target = #attn.target<name = "h100", api = "cuda", chip = "sm_90", subgroup_size = 32, workgroup_memory = 232448, workgroup_rows = 128, max_key_tile = 64, min_workgroups = 264, pipeline_depth = 3, mma = [16, 8, 16, 64, 128, 16], element_types = [f16, bf16]>} {
}
