//===- CpuGemm.h - the layout attn-matmul-to-cpu-gemm reads -----*- C++ -*-===//
//
// Producers of pre-packed B operands (the layer runtime's weights) pack
// into panels of this many columns: B[n floordiv W][k][n mod W].
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_CPUGEMM_H
#define ATTN_CONVERSION_CPUGEMM_H

#include <cstdint>

namespace mlir::attn {

struct TargetDescription;

/// Columns per B panel of the GEMM blocked for `target`.
int64_t cpuGemmPanelWidth(const TargetDescription &target);

} // namespace mlir::attn

#endif // ATTN_CONVERSION_CPUGEMM_H
