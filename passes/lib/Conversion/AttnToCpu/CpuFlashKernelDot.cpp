//===- CpuFlashKernelDot.cpp - bf16 products with vdpbf16ps ---------------===//
//
// With bf16 Q, K and V on a CPU with AVX-512 BF16 but no AMX (Zen 4 / 5;
// attn-to-cpu-kernels{bf16-dot}), both products keep the f32 kernel's
// register blocks, with each FMA replaced by `vdpbf16ps` (x86vector.avx512
// .dot): 16 f32 lanes += the sums of 16 bf16 pairs times a broadcast pair,
// twice the multiply-adds of an FMA per instruction:
//
//   sT[r][q]   += qPairs[c / 2][q] . (K[j0 + r][c], K[j0 + r][c + 1])
//   accT[d][q] += pPairs[r / 2][q] . (vT[d][j0 + r], vT[d][j0 + r + 1])
//
// qPairs, pPairs and vT are the AMX path's operands (CpuFlashKernelAmx.cpp)
// and the softmax is shared. On Sapphire Rapids vdpbf16ps issues once per
// two cycles, half f32's multiply-add rate, so attn-run prefers AMX there.
//
//===----------------------------------------------------------------------===//
#include "CpuFlashKernel.h"
#include "LoopBuilder.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

using namespace mlir;
using namespace mlir::attn;

Value CpuFlashKernel::broadcastPair(Value memref, ValueRange indices) {
  Type bf16 = b.getBF16Type(), i32 = b.getI32Type();
  Value pair = vector::LoadOp::create(b, VectorType::get({2}, bf16), memref,
                                      indices);
  Value word = vector::ExtractOp::create(
      b, vector::BitCastOp::create(b, VectorType::get({1}, i32), pair),
      ArrayRef<int64_t>{0});
  Value words =
      vector::BroadcastOp::create(b, VectorType::get({kLanes}, i32), word);
  return vector::BitCastOp::create(b, VectorType::get({2 * kLanes}, bf16),
                                   words);
}

SmallVector<Value>
CpuFlashKernel::blockedDots(Value ub, ArrayRef<Value> init, int64_t rows,
                            function_ref<Value(Value, int64_t)> pairsAt,
                            function_ref<Value(Value, int64_t)> pairAt) {
  scf::ForOp updates =
      loop(index(0), ub, 1, init, [&](Value iv, ValueRange acc) {
        SmallVector<Value> vectors;
        for (int64_t t = 0; t < kQueryVectors; ++t)
          vectors.push_back(pairsAt(iv, t));
        SmallVector<Value> next(acc.begin(), acc.end());
        for (int64_t g = 0; g < rows; ++g) {
          Value pair = pairAt(iv, g);
          for (int64_t t = 0; t < kQueryVectors; ++t) {
            Value &sum = next[g * kQueryVectors + t];
            sum = x86vector::DotBF16Op::create(b, vec, sum, vectors[t], pair);
          }
        }
        return next;
      });
  return updates.getResults();
}

void CpuFlashKernel::computeScoresDot(Value sT, Value j0, Value tk) {
  auto pairVec = VectorType::get({2 * kLanes}, b.getBF16Type());
  forRowBlocks(tk, [&](Value r0, int64_t rows) {
    SmallVector<Value> zeros(rows * kQueryVectors, vecConst(0.0f));
    SmallVector<Value> dots = blockedDots(
        index(headDimStatic() / 2), zeros, rows,
        [&](Value c2, int64_t t) -> Value {
          return vector::LoadOp::create(b, pairVec, qPairs,
                                        ValueRange{c2, index(2 * t * kLanes)});
        },
        [&](Value c2, int64_t g) {
          Value row = add(add(j0, r0), index(g));
          return broadcastPair(key, {batchIv, kvHead, row, mul(c2, index(2))});
        });
    for (int64_t g = 0; g < rows; ++g)
      for (int64_t t = 0; t < kQueryVectors; ++t)
        storeVec(dots[g * kQueryVectors + t], sT, {add(r0, index(g)), lane(t)});
  });
}

void CpuFlashKernel::accumulateDot(Value accT, Value j0, Value tk,
                                   ArrayRef<Value> alpha) {
  // Key pairs up to the tile's last key; tk is odd only in the last tile,
  // where the last pair's second key weighs 0 and reads vT's zero padding.
  auto pairVec = VectorType::get({2 * kLanes}, b.getBF16Type());
  Value pairs = arith::CeilDivUIOp::create(b, tk, index(2));
  forRowBlocks(valueDim, [&](Value c0, int64_t cols) {
    SmallVector<Value> scaled = loadScaledAccumulators(accT, c0, cols, alpha);
    SmallVector<Value> sums = blockedDots(
        pairs, scaled, cols,
        [&](Value r2, int64_t t) -> Value {
          return vector::LoadOp::create(b, pairVec, pPairs,
                                        ValueRange{r2, index(2 * t * kLanes)});
        },
        [&](Value r2, int64_t g) {
          return broadcastPair(valuesT, {batchIv, kvHead, add(c0, index(g)),
                                         add(j0, mul(r2, index(2)))});
        });
    storeAccumulators(sums, accT, c0, cols);
  });
}
