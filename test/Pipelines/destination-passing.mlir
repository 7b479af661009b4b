// Compiled entry points are destination-passing (docs/Runtime.md, "Calling
// convention"): after bufferization each result is a trailing output
// argument, the function returns nothing, and the buffer the result was
// computed in *is* that argument, static or dynamic sizes alike, so the
// kernel allocates no result.
// RUN: attn-opt %s --attn-cpu-pipeline="target=cpu-avx512" --mlir-print-ir-after=buffer-results-to-out-params 2>&1 >/dev/null | FileCheck %s
// RUN: attn-opt %s --attn-cpu-pipeline="cpu-kernels=false" --mlir-print-ir-after=buffer-results-to-out-params 2>&1 >/dev/null | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @static_shape(
// CHECK-SAME: %{{.*}}: memref<1x2x64x32xf32>, %{{.*}}: memref<1x2x64x32xf32>, %{{.*}}: memref<1x2x64x32xf32>, %[[OUT:.*]]: memref<1x2x64x32xf32>) {
// CHECK-NOT: memref.alloc(
// CHECK-NOT: memref.copy
// CHECK: func.call @static_shape__attn_cpu_flash_tile({{.*}}, %[[OUT]],
// CHECK-NOT: memref.copy
// CHECK: return{{$}}
func.func @static_shape(%q: tensor<1x2x64x32xf32>, %k: tensor<1x2x64x32xf32>, %v: tensor<1x2x64x32xf32>) -> tensor<1x2x64x32xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>, tensor<1x2x64x32xf32>) -> tensor<1x2x64x32xf32>
  return %o : tensor<1x2x64x32xf32>
}

// CHECK-LABEL: func.func @dynamic_shape(
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: memref<?x2x?x32xf32>) {
// CHECK-NOT: memref.alloc(
// CHECK: func.call @dynamic_shape__attn_cpu_flash_tile({{.*}}, %[[OUT]],
// CHECK-NOT: memref.copy
// CHECK: return{{$}}

// The generic lowering allocates its per-tile state, but still writes the
// finalized rows into the caller's output.
// GENERIC-LABEL: func.func @dynamic_shape(
// GENERIC-SAME: %[[OUT:[a-z0-9]+]]: memref<?x2x?x32xf32>) {
// GENERIC: memref.subview %[[OUT]]
// GENERIC: return{{$}}
func.func @dynamic_shape(%q: tensor<?x2x?x32xf32>, %k: tensor<?x2x?x32xf32>, %v: tensor<?x2x?x32xf32>) -> tensor<?x2x?x32xf32> {
  %o = attn.attention %q, %k, %v
      : (tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>) -> tensor<?x2x?x32xf32>
  return %o : tensor<?x2x?x32xf32>
}
