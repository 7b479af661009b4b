//===- CpuGemmPacking.cpp - the GEMM's packing copies ---------------------===//
//
// GemmEmitter's copies of A and B into the panels its micro-kernel reads
// (CpuGemmEmitter.h): B into [panel][k][2V], A into [row block][k][R] (or
// bf16 k pairs), transposing lanes x lanes through registers where whole
// vectors fit.
//
//===----------------------------------------------------------------------===//
#include "CpuGemmEmitter.h"
#include "VectorTranspose.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::attn;

/// Whether `memref`'s last dim is contiguous (vector loads along it).
static bool hasUnitInnerStride(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         !strides.empty() && strides.back() == 1;
}

void GemmEmitter::packB(Value packedB, Value p) {
  Value n0 = mul(p, index(blk.panelWidth()));
  if (layout == BLayout::KN) {
    // Rows of B are contiguous in n: masked vector loads.
    Value zero = arith::ConstantOp::create(b, vec, b.getZeroAttr(vec));
    SmallVector<Value> masks = columnMasks(n0);
    forEach(k, [&](Value kk) {
      for (int64_t v = 0; v < blk.panelVectors; ++v) {
        Value col = index(v * blk.lanes);
        Value x = vector::MaskedLoadOp::create(
            b, vec, bMat, ValueRange{kk, add(n0, col)}, masks[v], zero);
        vector::StoreOp::create(b, x, packedB, ValueRange{p, kk, col});
      }
    });
    return;
  }
  // B is [N, K]: a transposing copy, contiguous reads along k. A whole
  // panel goes lanes x lanes at a time through registers; the k's past
  // whole vectors, and panels past N, element by element.
  Value zero = arith::ConstantOp::create(b, f32, b.getF32FloatAttr(0));
  Value kStart = index(0);
  if (hasUnitInnerStride(bMat)) {
    int64_t lanes = blk.lanes;
    Value wholePanel = arith::CmpIOp::create(
        b, arith::CmpIPredicate::ule, add(n0, index(blk.panelWidth())), n);
    Value whole = mul(arith::DivUIOp::create(b, k, index(lanes)), index(lanes));
    kStart = arith::SelectOp::create(b, wholePanel, whole, index(0));
    loop(index(0), kStart, index(lanes), {}, [&](Value kk, ValueRange) {
      for (int64_t half = 0; half < blk.panelVectors; ++half) {
        SmallVector<Value> v;
        for (int64_t j = 0; j < lanes; ++j)
          v.push_back(vector::LoadOp::create(
              b, vec, bMat, ValueRange{add(n0, index(half * lanes + j)), kk}));
        transposeInRegisters(b, v);
        for (int64_t c = 0; c < lanes; ++c)
          vector::StoreOp::create(
              b, v[c], packedB,
              ValueRange{p, add(kk, index(c)), index(half * lanes)});
      }
      return SmallVector<Value>{};
    });
  }
  forEach(index(blk.panelWidth()), [&](Value col) {
    Value nIndex = add(n0, col);
    ifElse(
        less(nIndex, n),
        [&] {
          forEach(kStart, k, index(1), [&](Value kk) {
            Value x = memref::LoadOp::create(b, bMat, ValueRange{nIndex, kk});
            memref::StoreOp::create(b, x, packedB, ValueRange{p, kk, col});
          });
        },
        [&] {
          forEach(k, [&](Value kk) {
            memref::StoreOp::create(b, zero, packedB, ValueRange{p, kk, col});
          });
        });
  });
}

void GemmEmitter::packA(Value packedA, Value rb, Value k0, Value kLen) {
  if (pairs())
    return packAPairs(packedA, rb, k0, kLen);
  Value row0 = mul(rb, index(blk.rows));
  Value wholeBlock = arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                                           add(row0, index(blk.rows)), m);
  if (!aTransposed && hasUnitInnerStride(a)) {
    // Row by row, LLVM vectorizes the copy with scatters (stride R): 15 %
    // of a GEMM with N = 768.
    ifElse(
        wholeBlock, [&] { packATransposing(packedA, rb, k0, kLen); },
        [&] { packARows(packedA, rb, k0, kLen); });
    return;
  }
  if (aTransposed && hasUnitInnerStride(a)) {
    // A^T is [K, M]: a whole row block is R contiguous floats per k, copied
    // as one vector; the row-by-row copy below would read and write with
    // strides (gathers and scatters).
    auto rowVector = VectorType::get({blk.rows}, f32);
    ifElse(
        wholeBlock,
        [&] {
          forEach(kLen, [&](Value kk) {
            Value x = vector::LoadOp::create(b, rowVector, a,
                                             ValueRange{add(k0, kk), row0});
            vector::StoreOp::create(b, x, packedA,
                                    ValueRange{rb, kk, index(0)});
          });
        },
        [&] { packARows(packedA, rb, k0, kLen); });
    return;
  }
  packARows(packedA, rb, k0, kLen);
}

void GemmEmitter::packATransposing(Value packedA, Value rb, Value k0,
                                   Value kLen) {
  int64_t lanes = blk.lanes, rows = blk.rows;
  Value row0 = mul(rb, index(rows));
  Value zero = arith::ConstantOp::create(b, vec, b.getZeroAttr(vec));
  Value whole =
      mul(arith::DivUIOp::create(b, kLen, index(lanes)), index(lanes));
  loop(index(0), whole, index(lanes), {}, [&](Value kk, ValueRange) {
    // v[r] = A[row0 + r, k0 + kk : + lanes] (zeros past R rows), then
    // v[c] = column kk + c of the R rows.
    SmallVector<Value> v;
    for (int64_t r = 0; r < lanes; ++r)
      v.push_back(r < rows ? vector::LoadOp::create(
                                 b, vec, a,
                                 ValueRange{add(row0, index(r)), add(k0, kk)})
                                 .getResult()
                           : zero);
    transposeInRegisters(b, v);
    for (int64_t c = 0; c < lanes; ++c)
      vector::StoreOp::create(
          b, vector::ExtractStridedSliceOp::create(b, v[c], {0}, {rows}, {1}),
          packedA, ValueRange{rb, add(kk, index(c)), index(0)});
    return SmallVector<Value>{};
  });
  // The k's past whole vectors one by one.
  forEach(whole, kLen, index(1), [&](Value kk) {
    for (int64_t r = 0; r < rows; ++r) {
      Value x = memref::LoadOp::create(
          b, a, ValueRange{add(row0, index(r)), add(k0, kk)});
      memref::StoreOp::create(b, x, packedA, ValueRange{rb, kk, index(r)});
    }
  });
}

void GemmEmitter::packARows(Value packedA, Value rb, Value k0, Value kLen) {
  Value zero = arith::ConstantOp::create(b, f32, b.getF32FloatAttr(0));
  forEach(index(blk.rows), [&](Value r) {
    Value row = add(mul(rb, index(blk.rows)), r);
    ifElse(
        less(row, m),
        [&] {
          forEach(kLen, [&](Value kk) {
            Value kIndex = add(k0, kk);
            Value x =
                memref::LoadOp::create(b, a,
                                       aTransposed ? ValueRange{kIndex, row}
                                                   : ValueRange{row, kIndex});
            memref::StoreOp::create(b, x, packedA, ValueRange{rb, kk, r});
          });
        },
        [&] {
          forEach(kLen, [&](Value kk) {
            memref::StoreOp::create(b, zero, packedA, ValueRange{rb, kk, r});
          });
        });
  });
}

Value GemmEmitter::pairWord(Value row, Value kIndex) {
  Value zero = arith::ConstantOp::create(b, f32, b.getF32FloatAttr(0));
  Value next = add(kIndex, index(1));
  Value hasNext = less(next, k);
  Value first = memref::LoadOp::create(b, a, ValueRange{row, kIndex});
  Value second = memref::LoadOp::create(
      b, a, ValueRange{row, arith::SelectOp::create(b, hasNext, next, kIndex)});
  second = arith::SelectOp::create(b, hasNext, second, zero);
  Value pair = vector::FromElementsOp::create(b, VectorType::get({2}, f32),
                                              ValueRange{first, second});
  Value narrow =
      arith::TruncFOp::create(b, VectorType::get({2}, b.getBF16Type()), pair);
  Value word = vector::BitCastOp::create(
      b, VectorType::get({1}, b.getI32Type()), narrow);
  return vector::ExtractOp::create(b, word, ArrayRef<int64_t>{0});
}

void GemmEmitter::packAPairs(Value packedA, Value rb, Value k0, Value kLen) {
  int64_t lanes = blk.lanes, rows = blk.rows;
  Value row0 = mul(rb, index(rows));
  Value pairsLen = ceilDiv(kLen, index(2));
  Value zeroWord =
      arith::ConstantOp::create(b, b.getI32Type(), b.getI32IntegerAttr(0));
  // Row by row: the last row block (rows past M as zeros) and A without
  // unit stride along k. (A comes as [M, K] here: pair-packed products are
  // the layer's x W.)
  auto byRows = [&] {
    forEach(index(rows), [&](Value r) {
      Value row = add(row0, r);
      ifElse(
          less(row, m),
          [&] {
            forEach(pairsLen, [&](Value kk) {
              memref::StoreOp::create(b,
                                      pairWord(row, add(k0, mul(kk, index(2)))),
                                      packedA, ValueRange{rb, kk, r});
            });
          },
          [&] {
            forEach(pairsLen, [&](Value kk) {
              memref::StoreOp::create(b, zeroWord, packedA,
                                      ValueRange{rb, kk, r});
            });
          });
    });
  };
  Value wholeBlock = arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                                           add(row0, index(rows)), m);
  if (!hasUnitInnerStride(a))
    return byRows();
  ifElse(
      wholeBlock,
      [&] {
        // 2 lanes k's of each row rounded to 32 bf16 (vcvtne2ps2bf16) are
        // lanes pair words; R rows of them transposed in registers give
        // the R words of each pair.
        auto words = VectorType::get({lanes}, b.getI32Type());
        auto wideF32 = VectorType::get({2 * lanes}, f32);
        Value zero = arith::ConstantOp::create(b, words, b.getZeroAttr(words));
        Value whole = mul(arith::DivUIOp::create(b, kLen, index(2 * lanes)),
                          index(2 * lanes));
        loop(index(0), whole, index(2 * lanes), {}, [&](Value kk, ValueRange) {
          SmallVector<Value> v;
          for (int64_t r = 0; r < lanes; ++r) {
            if (r >= rows) {
              v.push_back(zero);
              continue;
            }
            Value x = vector::LoadOp::create(
                b, wideF32, a, ValueRange{add(row0, index(r)), add(k0, kk)});
            Value narrow = arith::TruncFOp::create(
                b, VectorType::get({2 * lanes}, b.getBF16Type()), x);
            v.push_back(vector::BitCastOp::create(b, words, narrow));
          }
          transposeInRegisters(b, v);
          Value pair0 = arith::DivUIOp::create(b, kk, index(2));
          for (int64_t j = 0; j < lanes; ++j)
            vector::StoreOp::create(
                b,
                vector::ExtractStridedSliceOp::create(b, v[j], {0}, {rows},
                                                      {1}),
                packedA, ValueRange{rb, add(pair0, index(j)), index(0)});
          return SmallVector<Value>{};
        });
        // The pairs past whole vectors one by one.
        forEach(
            arith::DivUIOp::create(b, whole, index(2)), pairsLen, index(1),
            [&](Value kk) {
              for (int64_t r = 0; r < rows; ++r)
                memref::StoreOp::create(
                    b,
                    pairWord(add(row0, index(r)), add(k0, mul(kk, index(2)))),
                    packedA, ValueRange{rb, kk, index(r)});
            });
      },
      byRows);
}
