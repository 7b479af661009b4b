// Work is really skipped: for every mask kind and composition, at odd sizes
// (L = 97, 1000, 1025; windows and strides that divide no tile size), the
// vectorized kernels count the key tiles they visit (--stats) and the count
// must equal the number of tiles where the pattern keeps some element,
// counted independently by the reference's per-element test. The output is
// checked against the f64 reference too (tolerance 1e-5 of the output
// scale, as in dense.mlir). Both blockings run: AVX2's and AVX-512's
// (query tiles of 24 and 64). Documents use key tiles of 32 so that a key
// tile can fall between documents.
// RUN: attn-run %s --entry=window --check --stats --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=window --check --stats --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=dilated --check --stats --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=dilated --check --stats --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=strided --check --stats --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=strided --check --stats --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=fixed --check --stats --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=fixed --check --stats --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=window_and_strided --check --stats --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=window_and_strided --check --stats --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=longformer --check --stats --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=longformer --check --stats --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=bigbird --check --stats --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=bigbird --check --stats --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=block_layout --check --stats --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=block_layout --check --stats --target=cpu-avx512 | FileCheck %s
// RUN: attn-run %s --entry=documents --check --stats --cpu-kv-tile=32 --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=documents --check --stats --target=cpu-avx512 --cpu-kv-tile=32 | FileCheck %s
// RUN: attn-run %s --entry=window_bottom_right --check --stats --target=cpu-avx2 | FileCheck %s
// RUN: attn-run %s --entry=window_bottom_right --check --stats --target=cpu-avx512 | FileCheck %s
// CHECK: stats: query tile {{[0-9]+( \(restarting every [0-9]+ rows\))?}}, key tile {{[0-9]+}}: visited [[#VISITED:]] of [[#TOTAL:]] key tiles ({{.*}}), {{[1-9][0-9]*\.[0-9]}}% skipped
// CHECK-NEXT: stats: key tiles the pattern keeps something of (reference): [[#VISITED]]
// CHECK: check: {{.*}}: PASS

// Sliding window; 100 and 37 divide no tile size.
func.func @window(%q: tensor<1x2x1000x64xf32>, %k: tensor<1x2x1000x64xf32>, %v: tensor<1x2x1000x64xf32>)
    -> tensor<1x2x1000x64xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.window<left = 100, right = 37>)
      : (tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>) -> tensor<1x2x1000x64xf32>
  return %o : tensor<1x2x1000x64xf32>
}

// Dilated window.
func.func @dilated(%q: tensor<1x2x1025x40xf32>, %k: tensor<1x2x1025x40xf32>, %v: tensor<1x2x1025x40xf32>)
    -> tensor<1x2x1025x40xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.dilated<left = 90, right = 90, dilation = 3>)
      : (tensor<1x2x1025x40xf32>, tensor<1x2x1025x40xf32>, tensor<1x2x1025x40xf32>) -> tensor<1x2x1025x40xf32>
  return %o : tensor<1x2x1025x40xf32>
}

// Sparse Transformer, strided: causal and (local or every 300th).
func.func @strided(%q: tensor<1x2x1025x64xf32>, %k: tensor<1x2x1025x64xf32>, %v: tensor<1x2x1025x64xf32>)
    -> tensor<1x2x1025x64xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.and<[#attn.causal, #attn.or<[#attn.window<left = 31, right = 0>,
                                           #attn.strided<stride = 300>]>]>)
      : (tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>) -> tensor<1x2x1025x64xf32>
  return %o : tensor<1x2x1025x64xf32>
}

// Sparse Transformer, fixed: causal and (same block of 50 or its last 5 columns).
func.func @fixed(%q: tensor<1x2x1000x64xf32>, %k: tensor<1x2x1000x64xf32>, %v: tensor<1x2x1000x64xf32>)
    -> tensor<1x2x1000x64xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.and<[#attn.causal, #attn.fixed<stride = 50, summary = 5>]>)
      : (tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>) -> tensor<1x2x1000x64xf32>
  return %o : tensor<1x2x1000x64xf32>
}

// An intersection the algebra cannot decide per tile (a window corner
// may hold no multiple of 150): such tiles are checked element-wise at
// compile time, so none is visited for nothing.
func.func @window_and_strided(%q: tensor<1x2x1025x40xf32>, %k: tensor<1x2x1025x40xf32>, %v: tensor<1x2x1025x40xf32>)
    -> tensor<1x2x1025x40xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.and<[#attn.window<left = 200, right = 200>, #attn.strided<stride = 150>]>)
      : (tensor<1x2x1025x40xf32>, tensor<1x2x1025x40xf32>, tensor<1x2x1025x40xf32>) -> tensor<1x2x1025x40xf32>
  return %o : tensor<1x2x1025x40xf32>
}

// Longformer / ETC: window and global rows and columns.
func.func @longformer(%q: tensor<1x2x1025x64xf32>, %k: tensor<1x2x1025x64xf32>, %v: tensor<1x2x1025x64xf32>)
    -> tensor<1x2x1025x64xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.or<[#attn.window<left = 64, right = 64>, #attn.global<[0, 1, 500]>]>)
      : (tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>) -> tensor<1x2x1025x64xf32>
  return %o : tensor<1x2x1025x64xf32>
}

// BigBird: window, global and 3 random blocks of 64 per query block.
func.func @bigbird(%q: tensor<1x2x1000x64xf32>, %k: tensor<1x2x1000x64xf32>, %v: tensor<1x2x1000x64xf32>)
    -> tensor<1x2x1000x64xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.or<[#attn.window<left = 96, right = 96>, #attn.global<[0, 1, 2, 3]>,
                        #attn.random_blocks<block = 64, count = 3, seed = 11>]>)
      : (tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>) -> tensor<1x2x1000x64xf32>
  return %o : tensor<1x2x1000x64xf32>
}

// Per-head block layout (DeepSpeed / xFormers style); query block 3 of
// head 1 keeps nothing.
func.func @block_layout(%q: tensor<1x2x1000x64xf32>, %k: tensor<1x2x1000x64xf32>, %v: tensor<1x2x1000x64xf32>)
    -> tensor<1x2x1000x64xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.block_layout<block = 64, layout = dense<
        [[[1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0],
          [1, 1, 0, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1, 1, 0, 0],
          [0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0],
          [1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 0],
          [0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0],
          [0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1],
          [0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0],
          [0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0],
          [0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0],
          [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0],
          [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0],
          [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0],
          [0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0, 1, 1, 1, 1, 1],
          [0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0],
          [0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0],
          [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 1, 1]],
         [[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0],
          [0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0],
          [0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0],
          [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
          [0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0],
          [0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0],
          [0, 1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 0],
          [0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0],
          [0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1],
          [0, 1, 0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 0],
          [0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0],
          [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0],
          [0, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 0, 1, 0, 1, 0],
          [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1],
          [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1],
          [1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1]]]> : tensor<2x16x16xi1>>)
      : (tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>, tensor<1x2x1000x64xf32>) -> tensor<1x2x1000x64xf32>
  return %o : tensor<1x2x1000x64xf32>
}

// Packed documents (seeded, increasing ids): tiles between documents are
// skipped at run time from the ids.
func.func @documents(%q: tensor<2x2x1025x40xf32>, %k: tensor<2x2x1025x40xf32>, %v: tensor<2x2x1025x40xf32>, %ids: tensor<2x1025xi32>)
    -> tensor<2x2x1025x40xf32> {
  %o = attn.attention %q, %k, %v segments(%ids, %ids)
      pattern(#attn.segments)
      : (tensor<2x2x1025x40xf32>, tensor<2x2x1025x40xf32>, tensor<2x2x1025x40xf32>, tensor<2x1025xi32>, tensor<2x1025xi32>) -> tensor<2x2x1025x40xf32>
  return %o : tensor<2x2x1025x40xf32>
}

// Decoding-style: 97 queries at the end of 1025 keys, GQA 2:1.
func.func @window_bottom_right(%q: tensor<1x4x97x64xf32>, %k: tensor<1x2x1025x64xf32>, %v: tensor<1x2x1025x64xf32>)
    -> tensor<1x4x97x64xf32> {
  %o = attn.attention %q, %k, %v
      pattern(#attn.and<[#attn.causal, #attn.window<left = 200, right = 0>]>) align = bottom_right
      : (tensor<1x4x97x64xf32>, tensor<1x2x1025x64xf32>, tensor<1x2x1025x64xf32>) -> tensor<1x4x97x64xf32>
  return %o : tensor<1x4x97x64xf32>
}
