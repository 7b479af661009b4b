// Patterns that read tables or run-time ids: BigBird random blocks (seeded),
// explicit block layouts, document / segment masks. Three ways, as in
// dense.mlir: the vectorized CPU kernels (tables looked up once per tile and
// query lane, ids compared lane-wise, id ranges skipping tiles), the same
// blocked for AVX-512, and the generic lowering of the tiled form (element masks from
// constant tables and the id operands). Checked against the f64 reference;
// tolerance 1e-5 of the output scale, as in dense.mlir.
// RUN: attn-run %s --entry=bigbird --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=bigbird --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=bigbird --check --generic | FileCheck %s
// RUN: attn-run %s --entry=block_layout_per_head --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=block_layout_per_head --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=block_layout_per_head --check --generic | FileCheck %s
// RUN: attn-run %s --entry=documents_causal --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=documents_causal --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=documents_causal --check --generic | FileCheck %s
// RUN: attn-run %s --entry=documents_cross --check --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=documents_cross --check --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=documents_cross --check --generic | FileCheck %s
// CHECK: check: {{.*}}: PASS

// Window + 2 global tokens + 2 random blocks of 16 (97 is not a multiple
// of the block).
func.func @bigbird(%q: tensor<1x4x97x64xf32>, %k: tensor<1x4x97x64xf32>,
                   %v: tensor<1x4x97x64xf32>) -> tensor<1x4x97x64xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.or<[#attn.window<left = 8, right = 8>, #attn.global<[0, 1]>,
                        #attn.random_blocks<block = 16, count = 2, seed = 7>]>)
      : (tensor<1x4x97x64xf32>, tensor<1x4x97x64xf32>, tensor<1x4x97x64xf32>)
      -> tensor<1x4x97x64xf32>
  return %o : tensor<1x4x97x64xf32>
}

// One layout per head; query block 1 of head 0 keeps nothing (its rows
// must be 0).
func.func @block_layout_per_head(%q: tensor<1x2x40x32xf32>,
                                 %k: tensor<1x2x40x32xf32>,
                                 %v: tensor<1x2x40x32xf32>)
    -> tensor<1x2x40x32xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.block_layout<block = 16, layout = dense<
        [[[1, 0, 0], [0, 0, 0], [1, 1, 1]],
         [[0, 1, 0], [1, 1, 0], [0, 0, 1]]]> : tensor<2x3x3xi1>>)
      : (tensor<1x2x40x32xf32>, tensor<1x2x40x32xf32>, tensor<1x2x40x32xf32>)
      -> tensor<1x2x40x32xf32>
  return %o : tensor<1x2x40x32xf32>
}

// Packed documents, causal within each (ids are seeded, increasing).
func.func @documents_causal(%q: tensor<2x2x97x40xf32>, %k: tensor<2x2x97x40xf32>,
                            %v: tensor<2x2x97x40xf32>, %ids: tensor<2x97xi32>)
    -> tensor<2x2x97x40xf32> {
  %o = attn.attention %q, %k, %v segments(%ids, %ids)
      pattern(#attn.and<[#attn.causal, #attn.segments]>)
      : (tensor<2x2x97x40xf32>, tensor<2x2x97x40xf32>, tensor<2x2x97x40xf32>,
         tensor<2x97xi32>, tensor<2x97xi32>) -> tensor<2x2x97x40xf32>
  return %o : tensor<2x2x97x40xf32>
}

// Query and key ids of different lengths and integer widths.
func.func @documents_cross(%q: tensor<1x2x37x40xf32>, %k: tensor<1x2x100x40xf32>,
                           %v: tensor<1x2x100x40xf32>, %qi: tensor<1x37xi64>,
                           %ki: tensor<1x100xi32>) -> tensor<1x2x37x40xf32> {
  %o = attn.attention %q, %k, %v segments(%qi, %ki) pattern(#attn.segments)
      : (tensor<1x2x37x40xf32>, tensor<1x2x100x40xf32>, tensor<1x2x100x40xf32>,
         tensor<1x37xi64>, tensor<1x100xi32>) -> tensor<1x2x37x40xf32>
  return %o : tensor<1x2x37x40xf32>
}
