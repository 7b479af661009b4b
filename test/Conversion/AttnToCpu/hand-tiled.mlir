// The CPU kernels consume the tiled form as it stands (docs/Design.md, "The
// tiled form"): a form written by hand, or by another compiler's tiling,
// with a key tile other than attn-tile's (48 rows here, where the plan
// would pick 128) runs on the vectorized kernel, which honours it; query
// tiles that are not the kernel's register blocks go the generic way with
// a remark that says why.
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx512 --attn-to-cpu-kernels --canonicalize 2>/dev/null | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-set-target=target=cpu-avx512 --attn-to-cpu-kernels 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// REMARK-NOT: remark
// REMARK: hand-tiled.mlir:{{[0-9]+}}:{{[0-9]+}}: remark: attn-to-cpu-kernels: left for the generic lowering: the kernel for target 'cpu-avx512' takes query tiles of 64 rows, not 32
// REMARK-NOT: remark

// CHECK-LABEL: func.func private @by_hand__attn_cpu_flash_tile
// CHECK-SAME: (%{{.*}}: memref<1x4x97x64xf32>, %{{.*}}: memref<1x2x100x64xf32>, %{{.*}}: memref<1x2x100x64xf32>, %[[O:.*]]: memref<1x4x97x64xf32>, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index)
// The key loop steps by the form's 48 rows; S^T holds 48 key rows.
// CHECK: scf.for %{{.*}} = %c0 to %c100 step %c48
// CHECK: memref<48x64xf32>
// CHECK: vector.store %{{.*}}, %[[O]]
// CHECK-LABEL: func.func @by_hand
// CHECK: scf.forall (%[[H:.*]], %[[T:.*]]) in (4, 2)
// CHECK: func.call @by_hand__attn_cpu_flash_tile
// CHECK-NOT: attn.online_attention
func.func @by_hand(%q: tensor<1x4x97x64xf32>, %k: tensor<1x2x100x64xf32>,
                   %v: tensor<1x2x100x64xf32>) -> tensor<1x4x97x64xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.000000e+00 : f32
  %minus_inf = arith.constant 0xFF800000 : f32
  %c97 = arith.constant 97 : index
  %c64 = arith.constant 64 : index
  %init = tensor.empty() : tensor<1x4x97x64xf32>
  // (batch, query head, query tile of 64 rows).
  %o = scf.forall (%b, %h, %t) in (1, 4, 2) shared_outs(%out = %init) -> (tensor<1x4x97x64xf32>) {
    %first = arith.muli %t, %c64 : index
    %end = arith.addi %first, %c64 : index
    %start = arith.minui %first, %c97 : index
    %stop = arith.minui %end, %c97 : index
    %rows = arith.subi %stop, %start : index
    %m0 = tensor.empty(%rows) : tensor<?xf32>
    %m = linalg.fill ins(%minus_inf : f32) outs(%m0 : tensor<?xf32>) -> tensor<?xf32>
    %l0 = tensor.empty(%rows) : tensor<?xf32>
    %l = linalg.fill ins(%zero : f32) outs(%l0 : tensor<?xf32>) -> tensor<?xf32>
    %a0 = tensor.empty(%rows) : tensor<?x64xf32>
    %a = linalg.fill ins(%zero : f32) outs(%a0 : tensor<?x64xf32>) -> tensor<?x64xf32>
    %new_max, %new_sum, %new_acc = attn.online_attention %q, %k, %v tile(%b, %h, %t) state(%m, %l, %a : tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>) query_tile = 64 key_tile = 48 : tensor<1x4x97x64xf32>, tensor<1x2x100x64xf32>, tensor<1x2x100x64xf32>
    %rows_out = attn.finalize_tile %new_acc, %new_sum : tensor<?x64xf32>, tensor<?xf32> -> tensor<?x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %rows_out into %out[%b, %h, %start, 0] [1, 1, %rows, 64] [1, 1, 1, 1] : tensor<?x64xf32> into tensor<1x4x97x64xf32>
    }
  }
  return %o : tensor<1x4x97x64xf32>
}

// -----

// Query tiles of 32 rows: the AVX-512 kernel's register blocks are 64.
// CHECK-LABEL: func.func @other_query_tiles
// CHECK: attn.online_attention {{.*}} query_tile = 32 key_tile = 48
func.func @other_query_tiles(%q: tensor<1x1x40x64xf32>, %k: tensor<1x1x100x64xf32>,
                             %v: tensor<1x1x100x64xf32>) -> tensor<1x1x40x64xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.000000e+00 : f32
  %minus_inf = arith.constant 0xFF800000 : f32
  %c40 = arith.constant 40 : index
  %c32 = arith.constant 32 : index
  %init = tensor.empty() : tensor<1x1x40x64xf32>
  %o = scf.forall (%b, %h, %t) in (1, 1, 2) shared_outs(%out = %init) -> (tensor<1x1x40x64xf32>) {
    %first = arith.muli %t, %c32 : index
    %end = arith.addi %first, %c32 : index
    %start = arith.minui %first, %c40 : index
    %stop = arith.minui %end, %c40 : index
    %rows = arith.subi %stop, %start : index
    %m0 = tensor.empty(%rows) : tensor<?xf32>
    %m = linalg.fill ins(%minus_inf : f32) outs(%m0 : tensor<?xf32>) -> tensor<?xf32>
    %l0 = tensor.empty(%rows) : tensor<?xf32>
    %l = linalg.fill ins(%zero : f32) outs(%l0 : tensor<?xf32>) -> tensor<?xf32>
    %a0 = tensor.empty(%rows) : tensor<?x64xf32>
    %a = linalg.fill ins(%zero : f32) outs(%a0 : tensor<?x64xf32>) -> tensor<?x64xf32>
    %new_max, %new_sum, %new_acc = attn.online_attention %q, %k, %v tile(%b, %h, %t) state(%m, %l, %a : tensor<?xf32>, tensor<?xf32>, tensor<?x64xf32>) query_tile = 32 key_tile = 48 : tensor<1x1x40x64xf32>, tensor<1x1x100x64xf32>, tensor<1x1x100x64xf32>
    %rows_out = attn.finalize_tile %new_acc, %new_sum : tensor<?x64xf32>, tensor<?xf32> -> tensor<?x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %rows_out into %out[%b, %h, %start, 0] [1, 1, %rows, 64] [1, 1, 1, 1] : tensor<?x64xf32> into tensor<1x1x40x64xf32>
    }
  }
  return %o : tensor<1x1x40x64xf32>
}
