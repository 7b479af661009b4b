// Insertions for test/e2e/gpu/vulkan-insert.test and ptxas-budgets.test
// (GpuInsertKernel.cpp): a decoding step's key rows appended to a KV cache
// [B, Hkv, rows, D] at a row read at run time (2 sequences, 2 KV heads,
// D = 8, 3 new rows into a cache of 16), the rows' offset and a static
// one together, and bf16 elements.
func.func @append_rows(%rows: tensor<2x2x3x8xf32>, %at: tensor<1xi32>, %cache: tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> {
  %c0 = arith.constant 0 : index
  %a = tensor.extract %at[%c0] : tensor<1xi32>
  %row = arith.index_cast %a : i32 to index
  %r = tensor.insert_slice %rows into %cache[0, 0, %row, 0] [2, 2, 3, 8] [1, 1, 1, 1] : tensor<2x2x3x8xf32> into tensor<2x2x16x8xf32>
  return %r : tensor<2x2x16x8xf32>
}
func.func @append_two_offsets(%rows: tensor<1x2x3x4xf32>, %at: tensor<2xi32>, %cache: tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = tensor.extract %at[%c0] : tensor<2xi32>
  %b = tensor.extract %at[%c1] : tensor<2xi32>
  %row = arith.index_cast %a : i32 to index
  %col = arith.index_cast %b : i32 to index
  %r = tensor.insert_slice %rows into %cache[1, 0, %row, %col] [1, 2, 3, 4] [1, 1, 1, 1] : tensor<1x2x3x4xf32> into tensor<2x2x16x8xf32>
  return %r : tensor<2x2x16x8xf32>
}
func.func @append_rows_bf16(%rows: tensor<2x2x3x8xbf16>, %at: tensor<1xi32>, %cache: tensor<2x2x16x8xbf16>) -> tensor<2x2x16x8xbf16> {
  %c0 = arith.constant 0 : index
  %a = tensor.extract %at[%c0] : tensor<1xi32>
  %row = arith.index_cast %a : i32 to index
  %r = tensor.insert_slice %rows into %cache[0, 0, %row, 0] [2, 2, 3, 8] [1, 1, 1, 1] : tensor<2x2x3x8xbf16> into tensor<2x2x16x8xbf16>
  return %r : tensor<2x2x16x8xbf16>
}
