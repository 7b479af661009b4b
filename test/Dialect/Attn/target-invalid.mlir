// Every parameter check of #attn.target, one per block.
// RUN: attn-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{#attn.target needs a name}}
module attributes {attn.target = #attn.target<name = "">} {
}

// -----

// expected-error @+1 {{#attn.target api must be cpu, vulkan or cuda, got 'tpu'}}
module attributes {attn.target = #attn.target<name = "t", api = "tpu">} {
}

// -----

// expected-error @+1 {{#attn.target element_types must be float types}}
module attributes {attn.target = #attn.target<name = "t", element_types = [i32]>} {
}

// -----

// expected-error @+1 {{#attn.target vector_bits must be 256 or 512, got 128}}
module attributes {attn.target = #attn.target<name = "t", vector_bits = 128>} {
}

// -----

// expected-error @+1 {{#attn.target vector_registers must be >= 16, got 8}}
module attributes {attn.target = #attn.target<name = "t", vector_registers = 8>} {
}

// -----

// expected-error @+1 {{#attn.target caches must be l1_bytes >= 4096 and l2_bytes >= l1_bytes}}
module attributes {attn.target = #attn.target<name = "t", l1_bytes = 65536, l2_bytes = 32768>} {
}

// -----

// expected-error @+1 {{#attn.target unknown CPU feature "avx10" (known: avx512bf16, amx-bf16, avxneconvert)}}
module attributes {attn.target = #attn.target<name = "t", features = ["avx10"]>} {
}

// -----

// expected-error @+1 {{#attn.target chip must be sm_XX for cuda, got 'gfx942'}}
module attributes {attn.target = #attn.target<name = "t", api = "cuda", chip = "gfx942", subgroup_size = 32, workgroup_memory = 49152, workgroup_rows = 64, max_key_tile = 32, min_workgroups = 1>} {
}

// -----

// expected-error @+1 {{#attn.target of a GPU needs subgroup_size, workgroup_rows, max_key_tile, min_workgroups and pipeline_depth >= 1 and workgroup_memory >= 1024}}
module attributes {attn.target = #attn.target<name = "t", api = "vulkan", subgroup_size = 32>} {
}

// -----

// expected-error @+1 {{#attn.target mma lists M, N, K triples, got 2 values}}
module attributes {attn.target = #attn.target<name = "t", api = "cuda", chip = "sm_80", subgroup_size = 32, workgroup_memory = 49152, workgroup_rows = 64, max_key_tile = 32, min_workgroups = 1, mma = [16, 8]>} {
}
