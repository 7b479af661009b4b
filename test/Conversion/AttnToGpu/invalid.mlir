// What GPU targets do not take yet is an error at its location.
// RUN: attn-opt %s --split-input-file --attn-set-target=target=vulkan --attn-tile --attn-to-gpu-kernels --verify-diagnostics
// RUN: not attn-opt %s --attn-set-target=target=tpu --attn-to-gpu-kernels 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: attn-set-target: unknown target 'tpu' (cpu, cpu-avx2, cpu-avx512, cpu-avx512-bf16, cpu-amx, host, vulkan,
// RUN: not attn-opt %s --attn-set-target=target=cpu --attn-to-gpu-kernels 2>&1 | FileCheck %s --check-prefix=CPU
// CPU: error: attn-to-gpu-kernels: the module's target 'cpu-avx2' is not a GPU

func.func @dynamic(%q: tensor<1x2x?x40xf32>, %k: tensor<1x2x?x40xf32>,
                   %v: tensor<1x2x?x40xf32>) -> tensor<1x2x?x40xf32> {
  // expected-error @below {{attn-to-gpu-kernels: GPU kernels take tensors of static shape (not supported by target 'vulkan-lavapipe' yet)}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x?x40xf32>, tensor<1x2x?x40xf32>, tensor<1x2x?x40xf32>)
      -> tensor<1x2x?x40xf32>
  return %o : tensor<1x2x?x40xf32>
}

// -----

// expected-error @below {{attn-to-gpu-kernels: 'two_ops' is not one attention, one linalg.matmul, one change of layout, one element-wise generic, row reductions or one insertion of its arguments; target 'vulkan-lavapipe' runs such functions only}}
func.func @two_ops(%q: tensor<1x2x16x40xf32>, %k: tensor<1x2x16x40xf32>,
                   %v: tensor<1x2x16x40xf32>) -> tensor<1x2x16x40xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x16x40xf32>, tensor<1x2x16x40xf32>, tensor<1x2x16x40xf32>)
      -> tensor<1x2x16x40xf32>
  %p = attn.attention %o, %k, %v
      : (tensor<1x2x16x40xf32>, tensor<1x2x16x40xf32>, tensor<1x2x16x40xf32>)
      -> tensor<1x2x16x40xf32>
  return %p : tensor<1x2x16x40xf32>
}

// -----

func.func @computed_key(%q: tensor<1x2x16x40xf32>, %k: tensor<1x2x16x40xf32>,
                        %v: tensor<1x2x16x40xf32>) -> tensor<1x2x16x40xf32> {
  %k2 = arith.addf %k, %k : tensor<1x2x16x40xf32>
  // expected-error @+1 {{attn-to-gpu-kernels: Q, K, V, segment ids, mask, bias and rel_table must be arguments of the function (not supported by target 'vulkan-lavapipe' yet)}}
  %o = attn.attention %q, %k2, %v
      : (tensor<1x2x16x40xf32>, tensor<1x2x16x40xf32>, tensor<1x2x16x40xf32>)
      -> tensor<1x2x16x40xf32>
  return %o : tensor<1x2x16x40xf32>
}

// -----

func.func @f64(%q: tensor<1x2x16x40xf64>, %k: tensor<1x2x16x40xf64>,
               %v: tensor<1x2x16x40xf64>) -> tensor<1x2x16x40xf64> {
  // expected-error @below {{attn-to-gpu-kernels: element type f64 (not supported by target 'vulkan-lavapipe' yet)}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x2x16x40xf64>, tensor<1x2x16x40xf64>, tensor<1x2x16x40xf64>)
      -> tensor<1x2x16x40xf64>
  return %o : tensor<1x2x16x40xf64>
}

// -----

// One key row of 4100 + 4100 floats is more than 32 KiB of workgroup memory.
func.func @huge_rows(%q: tensor<1x1x4x4100xf32>, %k: tensor<1x1x4x4100xf32>,
                     %v: tensor<1x1x4x4100xf32>) -> tensor<1x1x4x4100xf32> {
  // expected-error @below {{attn-tile: one key row of this attention does not fit the workgroup memory of target 'vulkan-lavapipe'}}
  %o = attn.attention %q, %k, %v
      : (tensor<1x1x4x4100xf32>, tensor<1x1x4x4100xf32>, tensor<1x1x4x4100xf32>)
      -> tensor<1x1x4x4100xf32>
  return %o : tensor<1x1x4x4100xf32>
}

// -----

// The backward's GPU kernels: static shapes, no score region, no operand
// gradients, no distance_weight (whose backward no lowering has).
func.func @grad_dynamic(%q: tensor<1x2x?x8xf32>, %lse: tensor<1x2x?xf32>)
    -> (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) {
  // expected-error @below {{attn-to-gpu-kernels: the backward's GPU kernels take tensors of static shape (not supported by target 'vulkan-lavapipe' yet; the CPU computes it)}}
  %dq, %dk, %dv = attn.attention_grad %q, %q, %q, %q, %q, %lse
      : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?xf32>)
      -> (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>)
  return %dq, %dk, %dv : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>
}

// -----

func.func @grad_region(%q: tensor<1x2x16x8xf32>, %lse: tensor<1x2x16xf32>)
    -> (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) {
  // expected-error @below {{attn-to-gpu-kernels: the backward of a score region (not supported by target 'vulkan-lavapipe' yet; the CPU computes it)}}
  %dq, %dk, %dv = attn.attention_grad %q, %q, %q, %q, %q, %lse score {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = math.tanh %s : f32
    attn.yield %t : f32
  } : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16xf32>)
      -> (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  return %dq, %dk, %dv : tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>
}

// -----

func.func @grad_bias_grad(%q: tensor<1x2x16x8xf32>, %lse: tensor<1x2x16xf32>, %bias: tensor<1x1x16x16xf32>)
    -> (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x1x16x16xf32>) {
  // expected-error @below {{attn-to-gpu-kernels: gradients of the bias, rel_table or captured operands (not supported by target 'vulkan-lavapipe' yet; the CPU computes it)}}
  %dq, %dk, %dv, %db = attn.attention_grad %q, %q, %q, %q, %q, %lse bias(%bias)
      : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16xf32>, tensor<1x1x16x16xf32>)
      -> (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x1x16x16xf32>)
  return %dq, %dk, %dv, %db : tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x1x16x16xf32>
}

// -----

func.func @grad_distance_weight(%q: tensor<1x2x16x8xf32>, %lse: tensor<1x2x16xf32>)
    -> (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) {
  // expected-error @below {{attn-to-gpu-kernels: the backward of distance_weight (not supported by target 'vulkan-lavapipe' yet; the CPU computes it)}}
  %dq, %dk, %dv = attn.attention_grad %q, %q, %q, %q, %q, %lse mods = [#attn.distance_weight<weights = [1.0, 0.5], threshold = 1.0>]
      : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16xf32>)
      -> (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  return %dq, %dk, %dv : tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>
}

// -----

// Paged K and V are read in place only through one table and length.
func.func @paged_values_dense(%q: tensor<1x4x1x64xf32>, %kp: tensor<4x2x16x64xf32>,
                              %v: tensor<1x2x48x64xf32>, %table: tensor<1x3xi32>) -> tensor<1x4x1x64xf32> {
  %n = arith.constant 48 : index
  %k = attn.paged_kv %kp[%table] length %n : tensor<4x2x16x64xf32>, tensor<1x3xi32> -> tensor<1x2x?x64xf32>
  %vd = tensor.cast %v : tensor<1x2x48x64xf32> to tensor<1x2x?x64xf32>
  // expected-error @below {{attn-to-gpu-kernels: K and V read through a page table must both come from attn.paged_kv with one table and length (not supported by target 'vulkan-lavapipe' yet)}}
  %o = attn.attention %q, %k, %vd align = bottom_right
      : (tensor<1x4x1x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>) -> tensor<1x4x1x64xf32>
  return %o : tensor<1x4x1x64xf32>
}

// -----

func.func @paged_i64_table(%q: tensor<1x4x1x64xf32>, %kp: tensor<4x2x16x64xf32>,
                           %vp: tensor<4x2x16x64xf32>, %table: tensor<1x3xi64>) -> tensor<1x4x1x64xf32> {
  %n = arith.constant 48 : index
  %k = attn.paged_kv %kp[%table] length %n : tensor<4x2x16x64xf32>, tensor<1x3xi64> -> tensor<1x2x?x64xf32>
  %v = attn.paged_kv %vp[%table] length %n : tensor<4x2x16x64xf32>, tensor<1x3xi64> -> tensor<1x2x?x64xf32>
  // expected-error @below {{attn-to-gpu-kernels: a page table of i64 (the kernels read i32 tables) (not supported by target 'vulkan-lavapipe' yet)}}
  %o = attn.attention %q, %k, %v align = bottom_right
      : (tensor<1x4x1x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>) -> tensor<1x4x1x64xf32>
  return %o : tensor<1x4x1x64xf32>
}

// -----

func.func @paged_computed_length(%q: tensor<1x4x1x64xf32>, %kp: tensor<4x2x16x64xf32>,
                                 %vp: tensor<4x2x16x64xf32>, %table: tensor<1x3xi32>,
                                 %length: tensor<1xi32>) -> tensor<1x4x1x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = tensor.extract %length[%c0] : tensor<1xi32>
  %m = arith.index_cast %e : i32 to index
  %n = arith.addi %m, %c1 : index
  %k = attn.paged_kv %kp[%table] length %n : tensor<4x2x16x64xf32>, tensor<1x3xi32> -> tensor<1x2x?x64xf32>
  %v = attn.paged_kv %vp[%table] length %n : tensor<4x2x16x64xf32>, tensor<1x3xi32> -> tensor<1x2x?x64xf32>
  // expected-error @below {{attn-to-gpu-kernels: a paged cache's length must be a constant or element 0 of a [1] i32 argument (not supported by target 'vulkan-lavapipe' yet)}}
  %o = attn.attention %q, %k, %v align = bottom_right
      : (tensor<1x4x1x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>) -> tensor<1x4x1x64xf32>
  return %o : tensor<1x4x1x64xf32>
}

// -----

func.func @paged_with_bias(%q: tensor<1x4x1x64xf32>, %kp: tensor<4x2x16x64xf32>,
                           %vp: tensor<4x2x16x64xf32>, %table: tensor<1x3xi32>,
                           %bias: tensor<1x1x1x48xf32>) -> tensor<1x4x1x64xf32> {
  %n = arith.constant 48 : index
  %k = attn.paged_kv %kp[%table] length %n : tensor<4x2x16x64xf32>, tensor<1x3xi32> -> tensor<1x2x?x64xf32>
  %v = attn.paged_kv %vp[%table] length %n : tensor<4x2x16x64xf32>, tensor<1x3xi32> -> tensor<1x2x?x64xf32>
  // expected-error @below {{attn-to-gpu-kernels: a paged K and V with key segment ids, a mask or a bias operand (not supported by target 'vulkan-lavapipe' yet)}}
  %o = attn.attention %q, %k, %v bias(%bias) align = bottom_right
      : (tensor<1x4x1x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x1x1x48xf32>) -> tensor<1x4x1x64xf32>
  return %o : tensor<1x4x1x64xf32>
}

// -----

// Products (GpuLinearKernel.h): static sizes, float elements, X [M, K] with
// W [K, N] or [N, K], started from zeros.
func.func @product_dynamic(%x: tensor<?x64xf32>, %w: tensor<64x32xf32>, %n: index) -> tensor<?x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  // expected-error @below {{attn-to-gpu-kernels: this product has no GPU kernel on target 'vulkan-lavapipe': it takes static sizes (compile one kernel per size)}}
  %y = linalg.matmul ins(%x, %w : tensor<?x64xf32>, tensor<64x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @product_integers(%x: tensor<8x64xi32>, %w: tensor<64x32xi32>) -> tensor<8x32xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<8x32xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<8x32xi32>) -> tensor<8x32xi32>
  // expected-error @below {{it takes f32, f16 and bf16 elements}}
  %y = linalg.matmul ins(%x, %w : tensor<8x64xi32>, tensor<64x32xi32>) outs(%f : tensor<8x32xi32>) -> tensor<8x32xi32>
  return %y : tensor<8x32xi32>
}

// -----

func.func @product_transposed_x(%x: tensor<64x8xf32>, %w: tensor<64x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  // expected-error @below {{it takes X [M, K] and W [K, N] or [N, K] (indexing maps (m, k), (k, n) or (n, k), (m, n))}}
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<64x8xf32>, tensor<64x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

func.func @product_accumulating(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @below {{it starts from zeros (a linalg.fill of 0): an accumulating product is not lowered}}
  %y = linalg.matmul ins(%x, %w : tensor<8x64xf32>, tensor<64x32xf32>) outs(%c : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

func.func @product_of_a_product(%x: tensor<8x64xf32>, %w: tensor<64x64xf32>) -> tensor<8x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x64xf32>) -> tensor<8x64xf32>
  %a = tensor.empty() : tensor<8x64xf32>
  %x2 = linalg.fill ins(%zero : f32) outs(%a : tensor<8x64xf32>) -> tensor<8x64xf32>
  // expected-error @below {{its operands must be the function's arguments}}
  %y = linalg.matmul ins(%x2, %w : tensor<8x64xf32>, tensor<64x64xf32>) outs(%f : tensor<8x64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

func.func @epilogue_transposed(%x: tensor<8x64xf32>, %w: tensor<8x64xf32>, %o: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  // expected-error @below {{its epilogue reads f32 arguments of the function per column ([N]) or per element ([M, N])}}
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<8x64xf32>, tensor<8x64xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(m, n) -> (n, m)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]}
       ins(%o : tensor<8x8xf32>) outs(%y : tensor<8x8xf32>) {
  ^bb0(%a: f32, %c: f32):
    %s = arith.addf %c, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %z : tensor<8x8xf32>
}

// -----

func.func @epilogue_outside_value(%x: tensor<8x64xf32>, %w: tensor<8x64xf32>, %s: f32) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  // expected-error @below {{its epilogue reads values from outside it}}
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<8x64xf32>, tensor<8x64xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]}
       outs(%y : tensor<8x8xf32>) {
  ^bb0(%c: f32):
    %t = arith.mulf %c, %s : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  return %z : tensor<8x8xf32>
}

// -----

func.func @epilogue_other_ops(%x: tensor<8x64xf32>, %w: tensor<8x64xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  // expected-error @below {{its epilogue computes with arith and math ops only}}
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<8x64xf32>, tensor<8x64xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]}
       outs(%y : tensor<8x8xf32>) {
  ^bb0(%c: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %t = arith.addf %c, %fi : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  return %z : tensor<8x8xf32>
}

// -----

// A product on buffers is not a function of its arguments' values.
// expected-error @below {{attn-to-gpu-kernels: 'product_on_buffers' is not one attention, one linalg.matmul, one change of layout, one element-wise generic, row reductions or one insertion of its arguments}}
func.func @product_on_buffers(%x: memref<8x64xf32>, %w: memref<64x32xf32>, %y: memref<8x32xf32>) {
  linalg.matmul ins(%x, %w : memref<8x64xf32>, memref<64x32xf32>) outs(%y : memref<8x32xf32>)
  return
}

// -----

// expected-error @below {{attn-to-gpu-kernels: 'product_on_buffers_then_generic' is not one attention, one linalg.matmul, one change of layout, one element-wise generic, row reductions or one insertion of its arguments}}
func.func @product_on_buffers_then_generic(%x: memref<8x64xf32>, %w: memref<64x32xf32>, %y: memref<8x32xf32>) {
  linalg.matmul ins(%x, %w : memref<8x64xf32>, memref<64x32xf32>) outs(%y : memref<8x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} outs(%y : memref<8x32xf32>) {
  ^bb0(%c: f32):
    linalg.yield %c : f32
  }
  return
}

// -----

// Changes of layout (GpuLayoutKernel.h): static sizes, float elements,
// slices of unit strides and the source's rank, pads by a constant.
func.func @layout_dynamic(%x: tensor<?x8xf32>) -> tensor<8x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %init = tensor.empty(%n) : tensor<8x?xf32>
  // expected-error @below {{attn-to-gpu-kernels: this change of layout has no GPU kernel on target 'vulkan-lavapipe': it takes static sizes (compile one kernel per size)}}
  %t = linalg.transpose ins(%x : tensor<?x8xf32>) outs(%init : tensor<8x?xf32>) permutation = [1, 0]
  return %t : tensor<8x?xf32>
}

// -----

func.func @layout_integers(%x: tensor<4x8xi32>) -> tensor<8x4xi32> {
  %init = tensor.empty() : tensor<8x4xi32>
  // expected-error @below {{it takes f32, f16 and bf16 elements}}
  %t = linalg.transpose ins(%x : tensor<4x8xi32>) outs(%init : tensor<8x4xi32>) permutation = [1, 0]
  return %t : tensor<8x4xi32>
}

// -----

func.func @layout_strided_slice(%x: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{it takes slices of static offsets, unit strides and the source's rank}}
  %s = tensor.extract_slice %x[0, 0] [4, 8] [2, 1] : tensor<8x8xf32> to tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

func.func @layout_rank_reducing_slice(%x: tensor<8x8xf32>) -> tensor<8xf32> {
  // expected-error @below {{it takes slices of static offsets, unit strides and the source's rank}}
  %s = tensor.extract_slice %x[2, 0] [1, 8] [1, 1] : tensor<8x8xf32> to tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

func.func @layout_pad_by_index(%x: tensor<4x8xf32>) -> tensor<6x8xf32> {
  // expected-error @below {{it pads by a constant, with static sizes}}
  %p = tensor.pad %x low[2, 0] high[0, 0] {
  ^bb0(%i: index, %j: index):
    %v = arith.index_cast %i : index to i32
    %f = arith.sitofp %v : i32 to f32
    tensor.yield %f : f32
  } : tensor<4x8xf32> to tensor<6x8xf32>
  return %p : tensor<6x8xf32>
}

// -----

// A chain that does not start at the argument is not a change of its layout.
// expected-error @below {{attn-to-gpu-kernels: 'layout_of_a_constant' is not one attention, one linalg.matmul, one change of layout, one element-wise generic, row reductions or one insertion of its arguments}}
func.func @layout_of_a_constant(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %c = arith.constant dense<1.0> : tensor<4x8xf32>
  %init = tensor.empty() : tensor<8x4xf32>
  %t = linalg.transpose ins(%c : tensor<4x8xf32>) outs(%init : tensor<8x4xf32>) permutation = [1, 0]
  return %t : tensor<8x4xf32>
}

// -----

// Element-wise generics (GpuElementwiseKernel.h): parallel loops, the
// result at the loops' indices from a tensor.empty, inputs read within
// their bounds (linalg checks the loops' ends; (j mod 5) * 2 reaches 8
// at j = 4, inside them), f32, arith / math / linalg.index bodies.
func.func @elementwise_reads_past_its_input(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @below {{attn-to-gpu-kernels: this element-wise generic has no GPU kernel on target 'vulkan-lavapipe': input 0's map reads outside it}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, (j mod 5) * 2)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @elementwise_reduction(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @below {{attn-to-gpu-kernels: this row reduction has no GPU kernel on target 'vulkan-lavapipe': the function must return an element-wise result (all loops parallel, the rows' and their last dimension's)}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @elementwise_transposed_result(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @below {{its result must be written at the loops' indices}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (j, i)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @elementwise_f16(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %e = tensor.empty() : tensor<4x8xf16>
  // expected-error @below {{it takes f32 elements, fewer than 2^31 per operand}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf16>) outs(%e : tensor<4x8xf16>) {
  ^bb0(%a: f16, %out: f16):
    linalg.yield %a : f16
  } -> tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}

// -----

func.func @elementwise_reads_its_init(%x: tensor<4x8xf32>, %init: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{its result must start from a tensor.empty (the kernel does not read it)}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @elementwise_other_ops(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  // expected-error @below {{its body computes with arith and math ops and linalg.index only}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %t = tensor.from_elements %a : tensor<1xf32>
    %c0 = arith.constant 0 : index
    %v = tensor.extract %t[%c0] : tensor<1xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @insert_dynamic_sizes(%rows: tensor<2x?xf32>, %cache: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %rows, %c1 : tensor<2x?xf32>
  // expected-error @below {{attn-to-gpu-kernels: this insertion has no GPU kernel on target 'vulkan-lavapipe': it takes static sizes (compile one kernel per size)}}
  %r = tensor.insert_slice %rows into %cache[0, 0] [2, %n] [1, 1] : tensor<2x?xf32> into tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

func.func @insert_integers(%rows: tensor<2x8xi32>, %cache: tensor<16x8xi32>) -> tensor<16x8xi32> {
  // expected-error @below {{attn-to-gpu-kernels: this insertion has no GPU kernel on target 'vulkan-lavapipe': it takes f32, f16 and bf16 elements}}
  %r = tensor.insert_slice %rows into %cache[3, 0] [2, 8] [1, 1] : tensor<2x8xi32> into tensor<16x8xi32>
  return %r : tensor<16x8xi32>
}

// -----

func.func @insert_strided(%rows: tensor<2x8xf32>, %cache: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // expected-error @below {{attn-to-gpu-kernels: this insertion has no GPU kernel on target 'vulkan-lavapipe': it takes unit strides and a source of the destination's rank}}
  %r = tensor.insert_slice %rows into %cache[0, 0] [2, 8] [2, 1] : tensor<2x8xf32> into tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

func.func @insert_rank_reducing(%row: tensor<8xf32>, %cache: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // expected-error @below {{attn-to-gpu-kernels: this insertion has no GPU kernel on target 'vulkan-lavapipe': it takes unit strides and a source of the destination's rank}}
  %r = tensor.insert_slice %row into %cache[4, 0] [1, 8] [1, 1] : tensor<8xf32> into tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

// An offset computed from the argument's value, not read as it is.
func.func @insert_offset_computed(%rows: tensor<2x8xf32>, %at: tensor<1xi32>, %cache: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = tensor.extract %at[%c0] : tensor<1xi32>
  %i = arith.index_cast %a : i32 to index
  %j = arith.addi %i, %c1 : index
  // expected-error @below {{attn-to-gpu-kernels: this insertion has no GPU kernel on target 'vulkan-lavapipe': its run-time offsets are i32 elements of an argument at constant indices inside it, cast to index}}
  %r = tensor.insert_slice %rows into %cache[%j, 0] [2, 8] [1, 1] : tensor<2x8xf32> into tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

func.func @insert_offset_i64(%rows: tensor<2x8xf32>, %at: tensor<1xi64>, %cache: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %c0 = arith.constant 0 : index
  %a = tensor.extract %at[%c0] : tensor<1xi64>
  %i = arith.index_cast %a : i64 to index
  // expected-error @below {{attn-to-gpu-kernels: this insertion has no GPU kernel on target 'vulkan-lavapipe': its run-time offsets are i32 elements of an argument at constant indices inside it, cast to index}}
  %r = tensor.insert_slice %rows into %cache[%i, 0] [2, 8] [1, 1] : tensor<2x8xf32> into tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}


// -----

// Past the offsets' argument: the kernel would load outside it.
func.func @insert_offset_past_its_argument(%rows: tensor<2x8xf32>, %at: tensor<1xi32>, %cache: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %c1 = arith.constant 1 : index
  %a = tensor.extract %at[%c1] : tensor<1xi32>
  %i = arith.index_cast %a : i32 to index
  // expected-error @below {{attn-to-gpu-kernels: this insertion has no GPU kernel on target 'vulkan-lavapipe': its run-time offsets are i32 elements of an argument at constant indices inside it, cast to index}}
  %r = tensor.insert_slice %rows into %cache[%i, 0] [2, 8] [1, 1] : tensor<2x8xf32> into tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

// Row reductions (GpuRowReductionKernel.cpp): what the row kernel refuses.
func.func @row_reduction_not_last(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<8xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  // expected-error @below {{attn-to-gpu-kernels: this row reduction has no GPU kernel on target 'vulkan-lavapipe': its loops must be the returned result's ([rows..., N]: all parallel, or the last one a reduction) or its rows' (all parallel)}}
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%acc : tensor<8xf32>) {
  ^bb0(%a: f32, %s: f32):
    %t = arith.addf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %t = arith.divf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @row_reduction_subtracts(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  // expected-error @below {{a reduction's body must end in one addf, mulf, maximumf, minimumf, maxnumf or minnumf of its accumulator, which it reads nowhere else}}
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %s: f32):
    %t = arith.subf %s, %a : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %t = arith.divf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @row_reduction_reads_accumulator_twice(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  // expected-error @below {{a reduction's body must end in one addf}}
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %s: f32):
    %p = arith.mulf %a, %s : f32
    %t = arith.addf %p, %s : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %t = arith.divf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @row_reduction_from_empty(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<4xf32>
  // expected-error @below {{a reduction must start from a linalg.fill of a constant}}
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%er : tensor<4xf32>) {
  ^bb0(%a: f32, %s: f32):
    %t = arith.addf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %t = arith.divf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @row_reduction_reads_another_element(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.mulf %a, %a : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  // expected-error @below {{input 1, a result of a generic before it, must be read at its own element (element-wise results) or row (row and reduction results)}}
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, (j + 1) mod 8)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %sq : tensor<4x8xf32>, tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%b: f32, %a: f32, %s: f32):
    %t = arith.addf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %t = arith.divf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @row_reduction_reads_a_fill(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %s: f32):
    %t = arith.addf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  // expected-error @below {{input 2 must be an argument of the function or a result of a generic before it}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum, %acc : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %z: f32, %o: f32):
    %t = arith.divf %a, %s : f32
    %u = arith.addf %t, %z : f32
    linalg.yield %u : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @row_reduction_reads_its_output(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %s: f32):
    %t = arith.addf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  // expected-error @below {{an element-wise result must be written at the loops' indices, from a tensor.empty its body does not read}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %t = arith.divf %a, %s : f32
    %u = arith.addf %t, %o : f32
    linalg.yield %u : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @row_reduction_dynamic(%x: tensor<?x8xf32>, %e: tensor<?x8xf32>, %acc: tensor<?xf32>) -> tensor<?x8xf32> {
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x8xf32>) outs(%acc : tensor<?xf32>) {
  ^bb0(%a: f32, %s: f32):
    %t = arith.addf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<?xf32>
  // expected-error @below {{this row reduction has no GPU kernel on target 'vulkan-lavapipe': it returns a result of static sizes and rank 1 or more (compile one kernel per size)}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<?x8xf32>, tensor<?xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %t = arith.divf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @row_reduction_huge(%x: tensor<65536x32768xf32>) -> tensor<65536x32768xf32> {
  %e = tensor.empty() : tensor<65536x32768xf32>
  %er = tensor.empty() : tensor<65536xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<65536xf32>) -> tensor<65536xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<65536x32768xf32>) outs(%acc : tensor<65536xf32>) {
  ^bb0(%a: f32, %s: f32):
    %t = arith.addf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<65536xf32>
  // expected-error @below {{its result has 2^31 elements or more}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<65536x32768xf32>, tensor<65536xf32>) outs(%e : tensor<65536x32768xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %t = arith.divf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<65536x32768xf32>
  return %y : tensor<65536x32768xf32>
}

// -----

func.func @row_reduction_integers(%x: tensor<4x8xi32>) -> tensor<4x8xi32> {
  %e = tensor.empty() : tensor<4x8xi32>
  %er = tensor.empty() : tensor<4xi32>
  %zero = arith.constant 0 : i32
  %acc = linalg.fill ins(%zero : i32) outs(%er : tensor<4xi32>) -> tensor<4xi32>
  // expected-error @below {{its results are f32 (arguments may be f16 or bf16)}}
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xi32>) outs(%acc : tensor<4xi32>) {
  ^bb0(%a: i32, %s: i32):
    %t = arith.addi %a, %s : i32
    linalg.yield %t : i32
  } -> tensor<4xi32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x8xi32>, tensor<4xi32>) outs(%e : tensor<4x8xi32>) {
  ^bb0(%a: i32, %s: i32, %o: i32):
    %t = arith.subi %a, %s : i32
    linalg.yield %t : i32
  } -> tensor<4x8xi32>
  return %y : tensor<4x8xi32>
}

// -----

func.func @row_reduction_f64_argument(%x: tensor<4x8xf64>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  // expected-error @below {{input 0 must have static sizes and f32, f16 or bf16 elements, fewer than 2^31}}
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf64>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f64, %s: f32):
    %f = arith.truncf %a : f64 to f32
    %t = arith.addf %f, %s : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%s: f32, %o: f32):
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @row_reduction_reads_past_an_argument(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %s: f32):
    %t = arith.addf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  // expected-error @below {{input 2's map reads outside it (checked over every value of the loops each expression uses, at most 2^20)}}
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> ((j mod 5) * 2)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum, %w : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %g: f32, %o: f32):
    %t = arith.divf %a, %s : f32
    %u = arith.mulf %t, %g : f32
    linalg.yield %u : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @row_reduction_multiple_results(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  // expected-error @below {{each generic has one result}}
  %sum:2 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%acc, %acc : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: f32, %s: f32, %m: f32):
    %t = arith.addf %a, %s : f32
    %u = arith.maximumf %a, %m : f32
    linalg.yield %t, %u : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum#0 : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %t = arith.divf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
