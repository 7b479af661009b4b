//===- CpuFlashKernelAmx.cpp - bf16 tile products on AMX -----------------===//
//
// With bf16 Q, K and V on a CPU with AMX (attn-to-cpu-kernels{amx}), both
// products of a key tile run on the tile unit (tdpbf16ps: a 16 x 16 f32
// block += 16 x 32 bf16 times 32 x 16 bf16, the latter stored as pairs)
// while the online softmax stays as it is, on f32 vectors:
//
//   sT[r][q]   = sum_c K[j0 + r][c] qPairs[c / 2][q][c % 2]
//                  A = 16 key rows x 32 dims, read from K in place
//                  B = qPairs: Q^T as dim pairs (the scale is applied
//                      by exp, or folded in first when score mods need
//                      scaled scores)
//   accT[d][q] = alpha[q] accT[d][q]
//                + sum_r vT[d][j0 + r] pPairs[r / 2][q][r % 2]
//                  A = 16 dims x 32 keys of V^T (vT: V transposed once per
//                      call, keys padded to whole key tiles with zeros)
//                  B = pPairs: P^T rounded to bf16, as key pairs (the
//                      softmax writes them with P)
//
// These are the layouts the f32 kernel already keeps (keys or dims in
// rows, queries in lanes), so the softmax code is shared. Tiles that may
// drop keys and whose values are not all finite keep the f32 update of P V
// (a dropped key's V may be NaN, and 0 x NaN would reach the sum through a
// pair product).
//
//===----------------------------------------------------------------------===//
#include "CpuFlashKernel.h"
#include "LoopBuilder.h"
#include "mlir/Dialect/AMX/AMXDialect.h"

using namespace mlir;
using namespace mlir::attn;

namespace {
// One tdpbf16ps: C (16 x 16 f32) += A (16 x 32 bf16) B (16 pairs x 16).
constexpr int64_t kTileRows = 16, kTileDepth = 32;

/// C[i][j] = init(i, j) + sum_{s < steps} A(i, s) B(s, j) for i < rows,
/// j < cols, then store(i, j, C[i][j]). Each step loads rows + cols operand
/// tiles for rows x cols products: 2 x 2 blocks fill AMX's 8 tile
/// registers (4 accumulators, 4 operands) with one load per product.
void tileProducts(ImplicitLocOpBuilder &b, int64_t rows, int64_t cols,
                  int64_t steps, function_ref<Value(int64_t, int64_t)> init,
                  function_ref<Value(int64_t, int64_t)> loadA,
                  function_ref<Value(int64_t, int64_t)> loadB,
                  function_ref<void(int64_t, int64_t, Value)> store) {
  auto cType = amx::TileType::get({kTileRows, kTileRows}, b.getF32Type());
  SmallVector<Value> acc;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      acc.push_back(init(i, j));
  for (int64_t s = 0; s < steps; ++s) {
    SmallVector<Value> as, bs;
    for (int64_t i = 0; i < rows; ++i)
      as.push_back(loadA(i, s));
    for (int64_t j = 0; j < cols; ++j)
      bs.push_back(loadB(s, j));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        acc[i * cols + j] =
            amx::TileMulFOp::create(b, cType, as[i], bs[j], acc[i * cols + j]);
  }
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      store(i, j, acc[i * cols + j]);
}
} // namespace

bool CpuFlashKernel::amxCovers() {
  auto shapeOf = [](Value v) { return cast<ShapedType>(v.getType()); };
  ShapedType q = shapeOf(op.getQuery()), k = shapeOf(op.getKey()),
             v = shapeOf(op.getValue());
  int64_t headDim = q.getDimSize(3), valueDim = v.getDimSize(3);
  return !packsHeads && kLanes == kTileRows && q.getElementType().isBF16() &&
         k.getElementType().isBF16() && v.getElementType().isBF16() &&
         !ShapedType::isDynamic(headDim) && headDim % kTileDepth == 0 &&
         !ShapedType::isDynamic(valueDim) && valueDim % kTileRows == 0 &&
         keyTile % kTileDepth == 0 && kQueryTile % (2 * kTileRows) == 0;
}

std::pair<Value, Value> CpuFlashKernel::transposeValues(Value valueBuf) {
  // vT[b][h][d][j] = V[b][h][j][d], zeros past the keys up to whole key
  // tiles, so every A tile of the P V product lies inside it; and per key
  // tile whether all its values are finite (then a pair product with a
  // dropped key's zero weight adds exactly 0 and partial tiles may use the
  // tiles too). One (batch, head, key tile) per iteration.
  Value batch = dim(valueBuf, 0), heads = dim(valueBuf, 1),
        keys = dim(valueBuf, 2), dims = dim(valueBuf, 3);
  Value tiles = arith::CeilDivUIOp::create(b, keys, index(keyTile));
  Value padded = mul(tiles, index(keyTile));
  int64_t dyn = ShapedType::kDynamic;
  Type bf16 = b.getBF16Type(), i8 = b.getI8Type();
  Value vT = memref::AllocOp::create(
      b, MemRefType::get({dyn, dyn, valueDimStatic(), dyn}, bf16),
      ValueRange{batch, heads, padded}, b.getI64IntegerAttr(64));
  Value finite = memref::AllocOp::create(
      b, MemRefType::get({dyn, dyn, dyn}, i8), ValueRange{batch, heads, tiles},
      IntegerAttr());
  auto forall = scf::ForallOp::create(
      b, getAsOpFoldResult(ValueRange{batch, heads, tiles}), ValueRange{},
      std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value bi = forall.getInductionVars()[0], hi = forall.getInductionVars()[1],
        tile = forall.getInductionVars()[2];
  Value first = mul(tile, index(keyTile));
  Value end = add(first, index(keyTile));
  Value kept = minIndex(end, keys);
  // Whether the tile's values are finite, a vector of 16 at a time.
  VectorType lanes = VectorType::get({kLanes}, b.getI1Type());
  Value infinity = vecConst(INFINITY);
  Value allLanes = arith::ConstantOp::create(
      b, DenseElementsAttr::get(lanes, b.getBoolAttr(true)));
  Value finiteLanes =
      loop(first, kept, 1, {allLanes}, [&](Value j, ValueRange acc) {
        Value all = acc[0];
        for (int64_t d = 0; d < valueDimStatic(); d += kLanes) {
          Value x = vector::LoadOp::create(b, VectorType::get({kLanes}, bf16),
                                           valueBuf,
                                           ValueRange{bi, hi, j, index(d)});
          Value magnitude =
              math::AbsFOp::create(b, arith::ExtFOp::create(b, vec, x));
          all = arith::AndIOp::create(
              b, all,
              arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, magnitude,
                                    infinity));
        }
        return SmallVector<Value>{all};
      }).getResult(0);
  Value allFinite =
      vector::ReductionOp::create(b, vector::CombiningKind::AND, finiteLanes);
  memref::StoreOp::create(b, arith::ExtUIOp::create(b, i8, allFinite), finite,
                          ValueRange{bi, hi, tile});
  // The transpose: contiguous stores along the keys.
  Value zero = arith::ConstantOp::create(b, b.getZeroAttr(bf16));
  loop(index(0), dims, 1, {}, [&](Value d, ValueRange) {
    loop(first, kept, 1, {}, [&](Value j, ValueRange) {
      Value x = memref::LoadOp::create(b, valueBuf, ValueRange{bi, hi, j, d});
      memref::StoreOp::create(b, x, vT, ValueRange{bi, hi, d, j});
      return SmallVector<Value>{};
    });
    loop(kept, end, 1, {}, [&](Value j, ValueRange) {
      memref::StoreOp::create(b, zero, vT, ValueRange{bi, hi, d, j});
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
  return {vT, finite};
}

void CpuFlashKernel::packQueryPairs(Value tq) {
  // qPairs[c / 2][2 q + c % 2] = Q[i0 + q][c] (times the scale unless exp
  // applies it); zero for padded queries.
  Type bf16 = b.getBF16Type();
  auto pairVec = VectorType::get({2 * kLanes}, bf16);
  Value zero = arith::ConstantOp::create(
      b, DenseElementsAttr::get(pairVec, b.getZeroAttr(bf16)));
  int64_t pairRows = headDimStatic() / 2;
  for (int64_t c2 = 0; c2 < pairRows; ++c2)
    for (int64_t t = 0; t < kQueryVectors; ++t)
      storeVec(zero, qPairs, {index(c2), index(2 * t * kLanes)});
  if (scoresUnscaled) {
    // Pairs stay together: a copy of 32-bit words.
    auto pair = VectorType::get({2}, bf16);
    loop(index(0), tq, 1, {}, [&](Value q, ValueRange) {
      Value row = add(i0, q);
      loop(index(0), index(pairRows), 1, {}, [&](Value c2, ValueRange) {
        Value x = vector::LoadOp::create(
            b, pair, query,
            ValueRange{batchIv, headIv, row, mul(c2, index(2))});
        vector::StoreOp::create(b, x, qPairs,
                                ValueRange{c2, mul(q, index(2))});
        return SmallVector<Value>{};
      });
      return SmallVector<Value>{};
    });
    return;
  }
  loop(index(0), tq, 1, {}, [&](Value q, ValueRange) {
    Value row = add(i0, q);
    loop(index(0), headDim, 1, {}, [&](Value c, ValueRange) {
      Value x = loadAsF32(query, ValueRange{batchIv, headIv, row, c});
      Value scaled = arith::TruncFOp::create(
          b, bf16, arith::MulFOp::create(b, x, scale));
      Value pairRow = arith::ShRUIOp::create(b, c, index(1));
      Value column =
          add(mul(q, index(2)), arith::AndIOp::create(b, c, index(1)));
      memref::StoreOp::create(b, scaled, qPairs, ValueRange{pairRow, column});
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
}

Value CpuFlashKernel::loadPairTile(Value pairs, int64_t s, Value q0,
                                   int64_t j) {
  auto type = amx::TileType::get({kTileRows, kTileDepth}, b.getBF16Type());
  return amx::TileLoadOp::create(
      b, type, pairs,
      ValueRange{index(s * kTileRows),
                 mul(add(q0, index(j * kTileRows)), index(2))});
}

void CpuFlashKernel::computeScoresAmx(Value sT, Value j0, Value tk) {
  Type bf16 = b.getBF16Type();
  auto aType = amx::TileType::get({kTileRows, kTileDepth}, bf16);
  auto cType = amx::TileType::get({kTileRows, kTileRows}, f32);
  int64_t depthSteps = headDimStatic() / kTileDepth;
  // sT[r0 + 16 i][q0 + 16 j] blocks from `rows` x 16 rows of `keys` (a
  // [rows][D] memref read from `row0`) and 2 x 16 queries.
  auto scoreBlocks = [&](int64_t rows, Value keys, ValueRange row0, Value r0,
                         Value q0) {
    tileProducts(
        b, rows, 2, depthSteps,
        [&](int64_t, int64_t) { return amx::TileZeroOp::create(b, cType); },
        [&](int64_t i, int64_t s) -> Value {
          SmallVector<Value> at(row0);
          at.back() = add(at.back(), index(i * kTileRows));
          at.push_back(index(s * kTileDepth));
          return amx::TileLoadOp::create(b, aType, keys, at);
        },
        [&](int64_t s, int64_t j) { return loadPairTile(qPairs, s, q0, j); },
        [&](int64_t i, int64_t j, Value c) {
          amx::TileStoreOp::create(b, sT,
                                   ValueRange{add(r0, index(i * kTileRows)),
                                              add(q0, index(j * kTileRows))},
                                   c);
        });
  };
  auto overQueryPairs = [&](function_ref<void(Value)> body) {
    loop(index(0), index(kQueryTile), 2 * kTileRows, {},
         [&](Value q0, ValueRange) {
           body(q0);
           return SmallVector<Value>{};
         });
  };
  // The tile's rows lie inside K (tk = min(key tile, keys - j0)): pairs
  // of 16-row blocks, then a last block of 16, which, when it runs past
  // the keys, reads a copy padded with zero rows (the rows past tk are
  // never read).
  Value pairEnd = mul(arith::DivUIOp::create(b, tk, index(2 * kTileRows)),
                      index(2 * kTileRows));
  loop(index(0), pairEnd, 2 * kTileRows, {}, [&](Value r0, ValueRange) {
    overQueryPairs([&](Value q0) {
      scoreBlocks(2, key, ValueRange{batchIv, kvHead, add(j0, r0)}, r0, q0);
    });
    return SmallVector<Value>{};
  });
  loop(pairEnd, tk, kTileRows, {}, [&](Value r0, ValueRange) {
    Value row = add(j0, r0);
    Value inside = arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                                         add(row, index(kTileRows)), keyLen);
    emitChoice(
        inside,
        [&] {
          overQueryPairs([&](Value q0) {
            scoreBlocks(1, key, ValueRange{batchIv, kvHead, row}, r0, q0);
          });
        },
        [&] {
          // Rows past the keys read the last key (in bounds) and store 0.
          Value zero = arith::ConstantOp::create(b, b.getZeroAttr(bf16));
          Value last = sub(keyLen, index(1));
          loop(index(0), index(kTileRows), 1, {}, [&](Value r, ValueRange) {
            Value kept = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                               add(row, r), keyLen);
            Value from = minIndex(add(row, r), last);
            loop(index(0), headDim, 1, {}, [&](Value c, ValueRange) {
              Value x = memref::LoadOp::create(
                  b, key, ValueRange{batchIv, kvHead, from, c});
              memref::StoreOp::create(b,
                                      arith::SelectOp::create(b, kept, x, zero),
                                      keyTail, ValueRange{r, c});
              return SmallVector<Value>{};
            });
            return SmallVector<Value>{};
          });
          overQueryPairs([&](Value q0) {
            scoreBlocks(1, keyTail, ValueRange{index(0)}, r0, q0);
          });
        });
    return SmallVector<Value>{};
  });
}

void CpuFlashKernel::accumulateAmx(Value accT, Value j0,
                                   ArrayRef<Value> alpha) {
  // acc^T *= alpha, skipped when no lane's max moved (alpha = 1: the
  // common case once the first key tiles have set the rows' maxima).
  Value moved = arith::ConstantIntOp::create(b, 0, 1);
  Value one = vecConst(1.0f);
  for (int64_t t = 0; t < kQueryVectors; ++t) {
    Value lanes = arith::CmpFOp::create(b, arith::CmpFPredicate::UNE,
                                        alpha[t], one);
    moved = arith::OrIOp::create(
        b, moved,
        vector::ReductionOp::create(b, vector::CombiningKind::OR, lanes));
  }
  auto ifMoved = scf::IfOp::create(b, moved, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifMoved.thenBlock());
    loop(index(0), valueDim, 1, {}, [&](Value c, ValueRange) {
      for (int64_t t = 0; t < kQueryVectors; ++t)
        storeVec(
            arith::MulFOp::create(b, loadVec(accT, {c, lane(t)}), alpha[t]),
            accT, {c, lane(t)});
      return SmallVector<Value>{};
    });
  }
  // Blocks of 2 x 16 dims (1 x 16 when Dv is an odd number of 16s) by
  // 2 x 16 queries.
  Type bf16 = b.getBF16Type();
  auto aType = amx::TileType::get({kTileRows, kTileDepth}, bf16);
  auto cType = amx::TileType::get({kTileRows, kTileRows}, f32);
  int64_t dimBlocks = valueDimStatic() % (2 * kTileRows) == 0 ? 2 : 1;
  int64_t dimStep = dimBlocks * kTileRows;
  loop(index(0), valueDim, dimStep, {}, [&](Value d0, ValueRange) {
    loop(index(0), index(kQueryTile), 2 * kTileRows, {},
         [&](Value q0, ValueRange) {
           auto at = [&](int64_t i, int64_t j) -> SmallVector<Value> {
             return {add(d0, index(i * kTileRows)),
                     add(q0, index(j * kTileRows))};
           };
           tileProducts(
               b, dimBlocks, 2, keyTile / kTileDepth,
               [&](int64_t i, int64_t j) -> Value {
                 return amx::TileLoadOp::create(b, cType, accT, at(i, j));
               },
               [&](int64_t i, int64_t s) -> Value {
                 return amx::TileLoadOp::create(
                     b, aType, valuesT,
                     ValueRange{batchIv, kvHead, add(d0, index(i * kTileRows)),
                                add(j0, index(s * kTileDepth))});
               },
               [&](int64_t s, int64_t j) {
                 return loadPairTile(pPairs, s, q0, j);
               },
               [&](int64_t i, int64_t j, Value c) {
                 amx::TileStoreOp::create(b, accT, at(i, j), c);
               });
           return SmallVector<Value>{};
         });
    return SmallVector<Value>{};
  });
}
