// Changes of layout for test/e2e/gpu/vulkan-layout.test and
// ptxas-budgets.test (GpuLayoutKernel.cpp): a QKV product's rows split
// into heads at the end of a capacity (GQA: 4 query heads, 2 KV heads,
// D = 4, 2 sequences of 5 rows at a capacity of 8), heads merged back into
// rows (more elements than the kernel's workgroups cover: each invocation
// takes several), pads within pads, and bf16 elements.
func.func @split_q(%qkv: tensor<10x32xf32>) -> tensor<2x4x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %q = tensor.extract_slice %qkv[0, 0] [10, 16] [1, 1] : tensor<10x32xf32> to tensor<10x16xf32>
  %e = tensor.expand_shape %q [[0, 1], [2, 3]] output_shape [2, 5, 4, 4] : tensor<10x16xf32> into tensor<2x5x4x4xf32>
  %init = tensor.empty() : tensor<2x4x5x4xf32>
  %t = linalg.transpose ins(%e : tensor<2x5x4x4xf32>) outs(%init : tensor<2x4x5x4xf32>) permutation = [0, 2, 1, 3]
  %p = tensor.pad %t low[0, 0, 3, 0] high[0, 0, 0, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<2x4x5x4xf32> to tensor<2x4x8x4xf32>
  return %p : tensor<2x4x8x4xf32>
}
func.func @split_v(%qkv: tensor<10x32xf32>) -> tensor<2x2x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %v = tensor.extract_slice %qkv[0, 24] [10, 8] [1, 1] : tensor<10x32xf32> to tensor<10x8xf32>
  %e = tensor.expand_shape %v [[0, 1], [2, 3]] output_shape [2, 5, 2, 4] : tensor<10x8xf32> into tensor<2x5x2x4xf32>
  %init = tensor.empty() : tensor<2x2x5x4xf32>
  %t = linalg.transpose ins(%e : tensor<2x5x2x4xf32>) outs(%init : tensor<2x2x5x4xf32>) permutation = [0, 2, 1, 3]
  %p = tensor.pad %t low[0, 0, 3, 0] high[0, 0, 0, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<2x2x5x4xf32> to tensor<2x2x8x4xf32>
  return %p : tensor<2x2x8x4xf32>
}
func.func @merge_large(%heads: tensor<1x8x2304x64xf32>) -> tensor<2200x512xf32> {
  %s = tensor.extract_slice %heads[0, 0, 104, 0] [1, 8, 2200, 64] [1, 1, 1, 1] : tensor<1x8x2304x64xf32> to tensor<1x8x2200x64xf32>
  %init = tensor.empty() : tensor<1x2200x8x64xf32>
  %t = linalg.transpose ins(%s : tensor<1x8x2200x64xf32>) outs(%init : tensor<1x2200x8x64xf32>) permutation = [0, 2, 1, 3]
  %c = tensor.collapse_shape %t [[0, 1], [2, 3]] : tensor<1x2200x8x64xf32> into tensor<2200x512xf32>
  return %c : tensor<2200x512xf32>
}
func.func @pad_twice(%x: tensor<3x5xf32>) -> tensor<10x5xf32> {
  %seven = arith.constant 7.0 : f32
  %minus = arith.constant -1.0 : f32
  %a = tensor.pad %x low[1, 2] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %seven : f32
  } : tensor<3x5xf32> to tensor<4x8xf32>
  %init = tensor.empty() : tensor<8x4xf32>
  %t = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%init : tensor<8x4xf32>) permutation = [1, 0]
  %b = tensor.pad %t low[1, 0] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %minus : f32
  } : tensor<8x4xf32> to tensor<10x5xf32>
  return %b : tensor<10x5xf32>
}
func.func @split_q_bf16(%qkv: tensor<10x32xbf16>) -> tensor<2x4x8x4xbf16> {
  %zero = arith.constant 0.0 : bf16
  %q = tensor.extract_slice %qkv[0, 0] [10, 16] [1, 1] : tensor<10x32xbf16> to tensor<10x16xbf16>
  %e = tensor.expand_shape %q [[0, 1], [2, 3]] output_shape [2, 5, 4, 4] : tensor<10x16xbf16> into tensor<2x5x4x4xbf16>
  %init = tensor.empty() : tensor<2x4x5x4xbf16>
  %t = linalg.transpose ins(%e : tensor<2x5x4x4xbf16>) outs(%init : tensor<2x4x5x4xbf16>) permutation = [0, 2, 1, 3]
  %p = tensor.pad %t low[0, 0, 3, 0] high[0, 0, 0, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : bf16
  } : tensor<2x4x5x4xbf16> to tensor<2x4x8x4xbf16>
  return %p : tensor<2x4x8x4xbf16>
}
