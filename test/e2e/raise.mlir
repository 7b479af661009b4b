// attn-raise end to end: each function is attention as a front end writes
// it in linalg; run as written (upstream linalg lowering) and after
// attn-raise (the attention kernels), both give the same numbers
// (linalg.softmax as written is decomposed by attn-cpu-pipeline). L = 97,
// D = 40. Tolerance 1e-5 absolute (outputs are O(1) averages of N(0, 1)
// values): both evaluate the same f32 softmax, in different orders.
// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-opt %s --attn-raise -o %t/raised.mlir
// RUN: FileCheck %s --check-prefix=RAISED < %t/raised.mlir
// RAISED-COUNT-4: attn.attention
// RAISED-NOT: math.exp
// RUN: attn-run %s --entry=batch_matmul_decomposed --output %t/batch_matmul_decomposed-linalg.npy
// RUN: attn-run %t/raised.mlir --entry=batch_matmul_decomposed --output %t/batch_matmul_decomposed-raised.npy
// RUN: python3 %S/Inputs/compare-npy.py %t/batch_matmul_decomposed-linalg.npy %t/batch_matmul_decomposed-raised.npy 1e-5 | FileCheck %s
// RUN: attn-run %s --entry=additive_mask --output %t/additive_mask-linalg.npy
// RUN: attn-run %t/raised.mlir --entry=additive_mask --output %t/additive_mask-raised.npy
// RUN: python3 %S/Inputs/compare-npy.py %t/additive_mask-linalg.npy %t/additive_mask-raised.npy 1e-5 | FileCheck %s
// RUN: attn-run %s --entry=causal_iota --output %t/causal_iota-linalg.npy
// RUN: attn-run %t/raised.mlir --entry=causal_iota --output %t/causal_iota-raised.npy
// RUN: python3 %S/Inputs/compare-npy.py %t/causal_iota-linalg.npy %t/causal_iota-raised.npy 1e-5 | FileCheck %s
// RUN: attn-run %s --entry=generic_softmax --output %t/generic_softmax-linalg.npy
// RUN: attn-run %t/raised.mlir --entry=generic_softmax --output %t/generic_softmax-raised.npy
// RUN: python3 %S/Inputs/compare-npy.py %t/generic_softmax-linalg.npy %t/generic_softmax-raised.npy 1e-5 | FileCheck %s
// The raised 4-D function also matches attn's f64 reference.
// RUN: attn-run %t/raised.mlir --entry=causal_iota --check | FileCheck %s --check-prefix=CHECKED
// CHECKED: check: {{.*}}: PASS
// CHECK: max abs difference {{.*}}: SAME

#q4 = affine_map<(b, h, i, j, d) -> (b, h, i, d)>
#k4 = affine_map<(b, h, i, j, d) -> (b, h, j, d)>
#s4 = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p4 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v4 = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o4 = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
#id4 = affine_map<(b, h, i, j) -> (b, h, i, j)>
#mask4 = affine_map<(b, h, i, j) -> (i, j)>
#keep4 = affine_map<(b, h, i, j) -> (b, h, i, 0)>
#id3 = affine_map<(n, i, j) -> (n, i, j)>
#row3 = affine_map<(n, i, j) -> (n, i)>

func.func @batch_matmul_decomposed(%q: tensor<4x97x40xf32>, %k: tensor<4x97x40xf32>,
                                   %v: tensor<4x97x40xf32>) -> tensor<4x97x40xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %kt0 = tensor.empty() : tensor<4x40x97xf32>
  %kt = linalg.transpose ins(%k : tensor<4x97x40xf32>) outs(%kt0 : tensor<4x40x97xf32>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<4x97x97xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x97x97xf32>) -> tensor<4x97x97xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<4x97x40xf32>, tensor<4x40x97xf32>) outs(%f : tensor<4x97x97xf32>) -> tensor<4x97x97xf32>
  %sd = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<4x97x97xf32>) outs(%e : tensor<4x97x97xf32>) {
    ^bb0(%a: f32, %c: f32):
      %four = arith.constant 4.0 : f32
      %r = arith.divf %a, %four : f32
      linalg.yield %r : f32
  } -> tensor<4x97x97xf32>
  %er = tensor.empty() : tensor<4x97xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<4x97xf32>) -> tensor<4x97xf32>
  %mx = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%sd : tensor<4x97x97xf32>) outs(%mi : tensor<4x97xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = arith.maximumf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<4x97xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%sd, %mx : tensor<4x97x97xf32>, tensor<4x97xf32>) outs(%e : tensor<4x97x97xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.subf %a, %b : f32
      %r = math.exp %d : f32
      linalg.yield %r : f32
  } -> tensor<4x97x97xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<4x97xf32>) -> tensor<4x97xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<4x97x97xf32>) outs(%si : tensor<4x97xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<4x97xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %sum : tensor<4x97x97xf32>, tensor<4x97xf32>) outs(%e : tensor<4x97x97xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.divf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<4x97x97xf32>
  %eo = tensor.empty() : tensor<4x97x40xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<4x97x40xf32>) -> tensor<4x97x40xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<4x97x97xf32>, tensor<4x97x40xf32>) outs(%fo : tensor<4x97x40xf32>) -> tensor<4x97x40xf32>
  return %o : tensor<4x97x40xf32>
}

func.func @additive_mask(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                         %v: tensor<1x2x97x40xf32>, %mask: tensor<97x97xf32>)
    -> tensor<1x2x97x40xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x97x97xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x97x97xf32>) -> tensor<1x2x97x97xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>) outs(%f : tensor<1x2x97x97xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x97xf32>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x2x97x97xf32>) outs(%e : tensor<1x2x97x97xf32>) {
    ^bb0(%a: f32, %c: f32):
      %cst = arith.constant 8.0 : f32
      %r = arith.divf %a, %cst : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x97xf32>
  %masked = linalg.generic {indexing_maps = [#id4, #mask4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scaled, %mask : tensor<1x2x97x97xf32>, tensor<97x97xf32>) outs(%e : tensor<1x2x97x97xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x97xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %er = tensor.empty() : tensor<1x2x97x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x2x97x1xf32>) -> tensor<1x2x97x1xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #keep4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%masked : tensor<1x2x97x97xf32>) outs(%mi : tensor<1x2x97x1xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = arith.maximumf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x1xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #keep4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%masked, %mx : tensor<1x2x97x97xf32>, tensor<1x2x97x1xf32>) outs(%e : tensor<1x2x97x97xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.subf %a, %b : f32
      %r = math.exp %d : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x97xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x2x97x1xf32>) -> tensor<1x2x97x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #keep4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x2x97x97xf32>) outs(%si : tensor<1x2x97x1xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #keep4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %sum : tensor<1x2x97x97xf32>, tensor<1x2x97x1xf32>) outs(%e : tensor<1x2x97x97xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.divf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x97xf32>
  %eo = tensor.empty() : tensor<1x2x97x40xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x97x97xf32>, tensor<1x2x97x40xf32>) outs(%fo : tensor<1x2x97x40xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}

func.func @causal_iota(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                       %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x2x97x97xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x97x97xf32>) -> tensor<1x2x97x97xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>) outs(%f : tensor<1x2x97x97xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x97xf32>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x2x97x97xf32>) outs(%e : tensor<1x2x97x97xf32>) {
    ^bb0(%a: f32, %c: f32):
      %cst = arith.constant 0.25 : f32
      %r = arith.mulf %cst, %a : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x97xf32>
  %causal = linalg.generic {indexing_maps = [#id4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scaled : tensor<1x2x97x97xf32>) outs(%e : tensor<1x2x97x97xf32>) {
    ^bb0(%a: f32, %c: f32):
      %i = linalg.index 2 : index
      %j = linalg.index 3 : index
      %later = arith.cmpi ugt, %j, %i : index
      %r = arith.select %later, %ninf, %a : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x97xf32>
  %er = tensor.empty() : tensor<1x2x97x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x2x97x1xf32>) -> tensor<1x2x97x1xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #keep4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%causal : tensor<1x2x97x97xf32>) outs(%mi : tensor<1x2x97x1xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = arith.maxnumf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x1xf32>
  %sub = linalg.generic {indexing_maps = [#id4, #keep4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%causal, %mx : tensor<1x2x97x97xf32>, tensor<1x2x97x1xf32>) outs(%e : tensor<1x2x97x97xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.subf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x97xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sub : tensor<1x2x97x97xf32>) outs(%e : tensor<1x2x97x97xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = math.exp %a : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x97xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<1x2x97x1xf32>) -> tensor<1x2x97x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #keep4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex : tensor<1x2x97x97xf32>) outs(%si : tensor<1x2x97x1xf32>) {
    ^bb0(%a: f32, %c: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #keep4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex, %sum : tensor<1x2x97x97xf32>, tensor<1x2x97x1xf32>) outs(%e : tensor<1x2x97x97xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %r = arith.divf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x97xf32>
  %eo = tensor.empty() : tensor<1x2x97x40xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x97x97xf32>, tensor<1x2x97x40xf32>) outs(%fo : tensor<1x2x97x40xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}


// 4-D contraction generics with K read transposed by its map, a multiply,
// linalg.softmax (upstream's own op, not its decomposition).
func.func @generic_softmax(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                           %v: tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x97x97xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x97x97xf32>) -> tensor<1x2x97x97xf32>
  %s = linalg.generic {indexing_maps = [#q4, #k4, #s4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>) outs(%f : tensor<1x2x97x97xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x97xf32>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4],
                            iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x2x97x97xf32>) outs(%e : tensor<1x2x97x97xf32>) {
    ^bb0(%a: f32, %c: f32):
      %cst = arith.constant 0.158113882 : f32
      %r = arith.mulf %a, %cst : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x97xf32>
  %p = linalg.softmax dimension(3) ins(%scaled : tensor<1x2x97x97xf32>) outs(%e : tensor<1x2x97x97xf32>) -> tensor<1x2x97x97xf32>
  %eo = tensor.empty() : tensor<1x2x97x40xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x97x40xf32>) -> tensor<1x2x97x40xf32>
  %o = linalg.generic {indexing_maps = [#p4, #v4, #o4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x97x97xf32>, tensor<1x2x97x40xf32>) outs(%fo : tensor<1x2x97x40xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
  } -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
