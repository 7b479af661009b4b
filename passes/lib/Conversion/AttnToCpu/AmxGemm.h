//===- AmxGemm.h - bf16 products with weights in pairs on AMX ---*- C++ -*-===//
//
// The form attn-matmul-to-cpu-gemm{amx} runs on AMX tiles: C[M, N] +=
// bf16(A) B with A f32 [M, K] (rounded to bf16 as it is copied) and B bf16
// weights packed in k pairs, 16 columns per panel:
//
//   B[n floordiv 16, k floordiv 2, (n mod 16) * 2 + k mod 2]
//
// (a panel's 16 pair rows of 64 bytes are one tdpbf16ps operand), f32 sums.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOCPU_AMXGEMM_H
#define ATTN_CONVERSION_ATTNTOCPU_AMXGEMM_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::attn {

/// Whether `op` is the pair-packed bf16 product above on buffers with
/// panels of `panelWidth` columns (16 for AMX; 2V for the vdpbf16ps GEMM,
/// MatmulToCpuGemm.cpp): B[n floordiv W, k floordiv 2, (n mod W) * 2 +
/// k mod 2], body C + extf(truncf(A)) * extf(B).
bool isPairPackedMatmul(linalg::GenericOp op, int64_t panelWidth);

/// Whether `op` is the pair-packed bf16 product above on buffers, with B's
/// panels and pair rows whole AMX blocks (an even panel count, pair rows a
/// multiple of 16: K padded with zeros to a multiple of 32).
bool isAmxPairPackedMatmul(linalg::GenericOp op);

/// Emits the product before `op` (which the caller erases): A copied to
/// bf16 rows padded to 32 rows and to B's k's, then a forall over blocks of
/// 32 rows x groups of 32 columns, each a 2 x 2 block of 16 x 16 f32 tiles
/// fed by two A and two B tiles per 32 k's. With `startsAtZero` C is not
/// read (it was zero-filled); an `epilogue` (GemmEpilogue.h, its body
/// self-contained) is applied as each block is copied back to C.
void emitAmxGemm(ImplicitLocOpBuilder &b, linalg::GenericOp op,
                 int64_t parallelTiles, bool startsAtZero = false,
                 linalg::GenericOp epilogue = {});

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOCPU_AMXGEMM_H
