// attn-verify-target reads the module's own #attn.target (here one that
// takes no f32) when no pipeline step replaced it.
// RUN: attn-opt %s --attn-verify-target --verify-diagnostics -o /dev/null
module attributes {attn.target = #attn.target<name = "h100", api = "cuda", chip = "sm_90", subgroup_size = 32, workgroup_memory = 232448, workgroup_rows = 128, max_key_tile = 64, min_workgroups = 264, element_types = [f16, bf16]>} {
  func.func @f32(%q: tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32> {
    // expected-error @+1 {{element type 'f32' is not supported by target 'h100' yet (its lowerings take f16, bf16)}}
    %o = attn.attention %q, %q, %q
        : (tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32>
    return %o : tensor<1x1x16x8xf32>
  }
}
