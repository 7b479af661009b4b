//===- CpuFlashKernel.cpp - vectorized flash attention for CPUs ----------===//
//
// Per (batch b, query head h, tile of TQ queries starting at i0; TQ = 64 for
// AVX-512, 24 for AVX2):
//
//   qT[c][q]  = scale * Q[b, h, i0 + q, c]          (zero for padded q)
//   m = -inf, l = 0, accT = 0
//   for each key tile [j0, j0 + tk) the pattern keeps something of (listed
//   at compile time when sizes are static, see TileSchedule.h):
//     sT[r][q] = sum_c K[j0 + r][c] qT[c][q]        (register blocks)
//     sT = -inf where the pattern drops (only in partial tiles)
//     m' = max(m, max_r sT[r]); alpha = exp(m - m'); sT = exp(sT - m')
//     l = alpha l + sum_r sT[r]
//     accT[c] = alpha accT[c] + sum_r V[j0+r][c] sT[r]
//       (in tiles that may drop keys, lanes whose weight is 0 skip it:
//        0 * V would be NaN where V holds NaN or inf)
//   O[b, h, i0 + q, c] = accT[c][q] / l[q]          (0 when l[q] == 0)
//
// Every row-wise softmax quantity of the TQ queries is a few whole vectors,
// so max, exp and sums are vertical vector operations. The register blocks
// are sized to the vector register file (see Blocking).
//
//===----------------------------------------------------------------------===//
#include "CpuFlashKernel.h"
#include "LoopBuilder.h"
#include "VectorMath.h"
#include "VectorTranspose.h"
#include "attn/Transforms/PagedKv.h"

using namespace mlir;
using namespace mlir::attn;


scf::ForOp
CpuFlashKernel::loop(Value lb, Value ub, int64_t step, ValueRange init,
                     function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  return buildLoop(b, lb, ub, index(step), init, body);
}

void CpuFlashKernel::packQueries(Value qT, Value tq) {
  // Whole tiles of a head dim of whole vectors: blocks of kLanes x kLanes
  // transposed in registers. LLVM made the scalar loops below gathers,
  // 2.4 % of the kernel's time at N = 512.
  int64_t width = headDimStatic();
  if (!ShapedType::isDynamic(width) && width % kLanes == 0)
    return emitChoice(
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tq,
                              index(kQueryTile)),
        [&] { packQueryBlocks(qT, width); },
        [&] { packQueriesByElement(qT, tq); });
  packQueriesByElement(qT, tq);
}

void CpuFlashKernel::packQueryBlocks(Value qT, int64_t width) {
  Value scaleVec = vector::BroadcastOp::create(b, vec, scale);
  loop(index(0), index(width), kLanes, {}, [&](Value c0, ValueRange) {
    loop(index(0), index(kQueryTile), kLanes, {}, [&](Value q0, ValueRange) {
      SmallVector<Value> rows;
      for (int64_t r = 0; r < kLanes; ++r)
        rows.push_back(loadVecAsF32(
            query, {batchIv, headIv, add(i0, add(q0, index(r))), c0}));
      transposeInRegisters(b, rows);
      for (int64_t c = 0; c < kLanes; ++c)
        storeVec(arith::MulFOp::create(b, rows[c], scaleVec), qT,
                 {add(c0, index(c)), q0});
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
}

void CpuFlashKernel::packQueriesByElement(Value qT, Value tq) {
  Value zero = vecConst(0.0f);
  loop(index(0), headDim, 1, {}, [&](Value c, ValueRange) {
    for (int64_t t = 0; t < kQueryVectors; ++t)
      storeVec(zero, qT, {c, lane(t)});
    return SmallVector<Value>{};
  });
  loop(index(0), tq, 1, {}, [&](Value q, ValueRange) {
    Value row = add(i0, q);
    loop(index(0), headDim, 1, {}, [&](Value c, ValueRange) {
      Value x = loadAsF32(query, ValueRange{batchIv, headIv, row, c});
      memref::StoreOp::create(b, arith::MulFOp::create(b, x, scale), qT,
                              ValueRange{c, q});
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
}

SmallVector<Value>
CpuFlashKernel::blockedUpdates(Value ub, ArrayRef<Value> init, int64_t rows,
                               function_ref<Value(Value, int64_t)> vectorAt,
                               function_ref<Value(Value, int64_t)> scalarAt,
                               function_ref<Value(Value)> laneGuard) {
  scf::ForOp updates =
      loop(index(0), ub, 1, init, [&](Value iv, ValueRange acc) {
        SmallVector<Value> vectors, guards;
        for (int64_t t = 0; t < kQueryVectors; ++t) {
          vectors.push_back(vectorAt(iv, t));
          if (laneGuard)
            guards.push_back(laneGuard(vectors.back()));
        }
        SmallVector<Value> next(acc.begin(), acc.end());
        for (int64_t g = 0; g < rows; ++g) {
          Value scalar = vector::BroadcastOp::create(b, vec, scalarAt(iv, g));
          for (int64_t t = 0; t < kQueryVectors; ++t) {
            Value &sum = next[g * kQueryVectors + t];
            Value updated = vector::FMAOp::create(b, scalar, vectors[t], sum);
            sum = laneGuard
                      ? arith::SelectOp::create(b, guards[t], updated, sum)
                            .getResult()
                      : updated;
          }
        }
        return next;
      });
  return updates.getResults();
}

void CpuFlashKernel::forRowBlocks(Value total,
                                  function_ref<void(Value, int64_t)> body,
                                  int64_t block) {
  buildRowBlocks(b, total, block ? block : kRowBlock, body);
}

void CpuFlashKernel::computeScores(Value sT, Value qT, Value j0, Value tk) {
  if (scoresByRows)
    return computeScoresByRows(sT, j0, tk);
  if (usesAmx)
    return computeScoresAmx(sT, j0, tk);
  if (usesDot)
    return computeScoresDot(sT, j0, tk);
  // sT[r0 + g] = sum_c K[j0 + r0 + g][c] qT[c], rows of K in blocks.
  forRowBlocks(tk, [&](Value r0, int64_t rows) {
    SmallVector<Value> zeros(rows * kQueryVectors, vecConst(0.0f));
    SmallVector<std::pair<Value, Value>> keyRows;
    for (int64_t g = 0; g < rows; ++g)
      keyRows.push_back(kvRow(add(add(j0, r0), index(g))));
    SmallVector<Value> dots = blockedUpdates(
        headDim, zeros, rows,
        [&](Value c, int64_t t) { return loadVec(qT, {c, lane(t)}); },
        [&](Value c, int64_t g) -> Value {
          return loadAsF32(key, kvIndices(keyRows[g], c));
        });
    for (int64_t g = 0; g < rows; ++g)
      for (int64_t t = 0; t < kQueryVectors; ++t)
        storeVec(dots[g * kQueryVectors + t], sT, {add(r0, index(g)), lane(t)});
  });
}

void CpuFlashKernel::countTile(int64_t which) {
  if (!counters)
    return;
  Value n = memref::LoadOp::create(b, counters, ValueRange{index(which)});
  memref::StoreOp::create(b, add(n, index(1)), counters,
                          ValueRange{index(which)});
}

Value CpuFlashKernel::softmaxExp(Value x, Value shift) {
  // 2^y, y = (x - shift) log2 e (times the scale when scoresUnscaled).
  Value log2e = vector::BroadcastOp::create(b, vec, exponentScale);
  Value y = vector::FMAOp::create(
      b, x, log2e,
      arith::MulFOp::create(b, shift, arith::NegFOp::create(b, log2e)));
  return buildExp2(b, y);
}

void CpuFlashKernel::updateSoftmaxAndAccumulate(Value sT, Value m, Value l,
                                                Value accT, Value j0, Value tk,
                                                Value mayDropKeys) {
  Value negInf = vecConst(-INFINITY), zero = vecConst(0.0f);
  auto isNegInf = [&](Value x) {
    return arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x, negInf);
  };
  // Pair products pack P in pairs of whole key tiles: rows past tk become
  // dropped scores (exp gives exact zeros) so the loops below need no
  // bounds.
  Value rows = tk;
  if (usesPairs()) {
    loop(tk, index(keyTile), 1, {}, [&](Value r, ValueRange) {
      for (int64_t t = 0; t < kQueryVectors; ++t)
        storeVec(negInf, sT, {r, lane(t)});
      return SmallVector<Value>{};
    });
    rows = index(keyTile);
  }
  SmallVector<Value> mOld, mSafe, alpha;
  for (int64_t t = 0; t < kQueryVectors; ++t)
    mOld.push_back(loadVec(m, {lane(t)}));
  // The max skips NaN scores (x > max is false for them: one vmaxps); a NaN
  // still reaches its row through exp(NaN - m) in the sums.
  auto maxOfRows = [&](Value r, ValueRange mx) {
    SmallVector<Value> next;
    for (int64_t t = 0; t < kQueryVectors; ++t) {
      Value x = loadVec(sT, {r, lane(t)});
      Value greater =
          arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, x, mx[t]);
      next.push_back(arith::SelectOp::create(b, greater, x, mx[t]));
    }
    return next;
  };
  scf::ForOp maxLoop = loop(index(0), rows, 1, mOld, maxOfRows);
  for (int64_t t = 0; t < kQueryVectors; ++t) {
    Value mNew = maxLoop.getResult(t);
    // A max of -inf means nothing kept yet: subtract 0 instead.
    mSafe.push_back(arith::SelectOp::create(b, isNegInf(mNew), zero, mNew));
    alpha.push_back(softmaxExp(mOld[t], mSafe[t]));
    storeVec(mNew, m, {lane(t)});
  }

  SmallVector<Value> zeros(kQueryVectors, zero);
  // P in place of the scores; with pair products also as bf16 key pairs
  // (pPairs), two rows at a time.
  int64_t step = usesPairs() ? 2 : 1;
  auto half = VectorType::get({kLanes}, b.getBF16Type());
  auto expAndSum = [&](Value r, ValueRange s) {
    SmallVector<Value> next(s.begin(), s.end());
    for (int64_t t = 0; t < kQueryVectors; ++t) {
      SmallVector<Value, 2> pair;
      for (int64_t i = 0; i < step; ++i) {
        Value row = add(r, index(i));
        Value p = softmaxExp(loadVec(sT, {row, lane(t)}), mSafe[t]);
        storeVec(p, sT, {row, lane(t)});
        next[t] = arith::AddFOp::create(b, next[t], p);
        pair.push_back(p);
      }
      if (usesPairs()) {
        Value lo = arith::TruncFOp::create(b, half, pair[0]);
        Value hi = arith::TruncFOp::create(b, half, pair[1]);
        storeVec(vector::InterleaveOp::create(b, lo, hi), pPairs,
                 {arith::ShRUIOp::create(b, r, index(1)),
                  index(2 * t * kLanes)});
      }
    }
    return next;
  };
  scf::ForOp sumLoop = loop(index(0), rows, step, zeros, expAndSum);
  for (int64_t t = 0; t < kQueryVectors; ++t) {
    Value lOld = loadVec(l, {lane(t)});
    storeVec(vector::FMAOp::create(b, lOld, alpha[t], sumLoop.getResult(t)), l,
             {lane(t)});
  }

  // accT[c0 + g] = alpha accT[c0 + g] + sum_r V[j0 + r][c0 + g] P^T[r],
  // columns of V in blocks. Where keys were dropped, their zero weights must
  // not multiply V: a NaN or inf there (garbage in an unused KV-cache slot)
  // would make 0 * V = NaN; such tiles guard each lane's update.
  auto accumulate = [&](bool guarded) {
    if (usesAmx && !guarded)
      return accumulateAmx(accT, j0, alpha);
    if (usesDot && !guarded)
      return accumulateDot(accT, j0, tk, alpha);
    if (accByRows) {
      storeVec(alpha[0], alphaLanes, {index(0)});
      accumulateByRows(sT, accT, j0, tk, guarded);
      return;
    }
    forRowBlocks(valueDim, [&](Value c0, int64_t cols) {
      SmallVector<Value> scaled = loadScaledAccumulators(accT, c0, cols, alpha);
      auto keptLanes = [&](Value p) -> Value {
        return arith::CmpFOp::create(b, arith::CmpFPredicate::ONE, p, zero);
      };
      SmallVector<Value> products = blockedUpdates(
          tk, scaled, cols,
          [&](Value r, int64_t t) { return loadVec(sT, {r, lane(t)}); },
          [&](Value r, int64_t g) -> Value {
            return loadAsF32(value,
                             kvIndices(kvRow(add(j0, r)), add(c0, index(g))));
          },
          guarded ? function_ref<Value(Value)>(keptLanes)
                  : function_ref<Value(Value)>());
      storeAccumulators(products, accT, c0, cols);
    });
  };
  // With pair products, tiles whose values are all finite need no guard: a
  // dropped key's zero weight times a finite value adds exactly 0.
  Value guarded = mayDropKeys;
  if (usesPairs() && !matchPattern(mayDropKeys, m_Zero())) {
    Value flag = memref::LoadOp::create(
        b, finiteValueTiles,
        ValueRange{batchIv, kvHead,
                   arith::DivUIOp::create(b, j0, index(keyTile))});
    Value finite = arith::CmpIOp::create(
        b, arith::CmpIPredicate::ne, flag,
        arith::ConstantIntOp::create(b, b.getI8Type(), 0));
    guarded = arith::AndIOp::create(
        b, mayDropKeys,
        arith::XOrIOp::create(b, finite,
                              arith::ConstantIntOp::create(b, 1, 1)));
  }
  emitChoice(
      guarded, [&] { accumulate(true); }, [&] { accumulate(false); });
}

SmallVector<Value>
CpuFlashKernel::loadScaledAccumulators(Value accT, Value c0, int64_t cols,
                                       ArrayRef<Value> alpha) {
  SmallVector<Value> scaled;
  for (int64_t g = 0; g < cols; ++g)
    for (int64_t t = 0; t < kQueryVectors; ++t)
      scaled.push_back(arith::MulFOp::create(
          b, loadVec(accT, {add(c0, index(g)), lane(t)}), alpha[t]));
  return scaled;
}

void CpuFlashKernel::storeAccumulators(ArrayRef<Value> sums, Value accT,
                                       Value c0, int64_t cols) {
  for (int64_t g = 0; g < cols; ++g)
    for (int64_t t = 0; t < kQueryVectors; ++t)
      storeVec(sums[g * kQueryVectors + t], accT,
               {add(c0, index(g)), lane(t)});
}

void CpuFlashKernel::emitChoice(Value condition, function_ref<void()> then,
                                function_ref<void()> otherwise) {
  buildIfElse(b, condition, then, otherwise);
}

void CpuFlashKernel::storeRow(Value accT, Value l, Value column, Value head,
                              Value row) {
  Value zero = f32Const(0.0f), one = f32Const(1.0f);
  Value sum = memref::LoadOp::create(b, l, ValueRange{column});
  Value empty = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, sum, zero);
  // Rows that kept nothing are 0, never NaN.
  Value inv = arith::SelectOp::create(b, empty, zero,
                                      arith::DivFOp::create(b, one, sum));
  loop(index(0), valueDim, 1, {}, [&](Value c, ValueRange) {
    Value a = memref::LoadOp::create(
        b, accT, accByRows ? ValueRange{column, c} : ValueRange{c, column});
    Value o = arith::MulFOp::create(b, a, inv);
    // 16-bit outputs are rounded once, here (f32 state throughout).
    Type outType = cast<MemRefType>(out.getType()).getElementType();
    if (outType != f32)
      o = arith::TruncFOp::create(b, outType, o);
    memref::StoreOp::create(b, o, out, ValueRange{batchIv, head, row, c});
    return SmallVector<Value>{};
  });
}

void CpuFlashKernel::storeOutput(Value accT, Value m, Value l, Value tq) {
  // Whole tiles of a value dim of whole vectors and f32 outputs: blocks of
  // kLanes x kLanes transposed in registers (as packQueries).
  int64_t width = valueDimStatic();
  Type outType = cast<MemRefType>(out.getType()).getElementType();
  if (!accByRows && !ShapedType::isDynamic(width) && width % kLanes == 0 &&
      outType.isF32())
    emitChoice(
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tq,
                              index(kQueryTile)),
        [&] { storeOutputBlocks(accT, l, width); },
        [&] { storeOutputByRow(accT, l, tq); });
  else
    storeOutputByRow(accT, l, tq);
  if (!lseOut)
    return;
  loop(index(0), tq, 1, {}, [&](Value q, ValueRange) {
    // lse = m + log l; -inf for a row that kept nothing (l = 0).
    Value sum = memref::LoadOp::create(b, l, ValueRange{q});
    Value max = memref::LoadOp::create(b, m, ValueRange{q});
    if (scoresUnscaled)
      max = arith::MulFOp::create(b, max, scale);
    Value empty = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, sum,
                                        f32Const(0.0f));
    Value lse = arith::SelectOp::create(
        b, empty, f32Const(-INFINITY),
        arith::AddFOp::create(b, max, math::LogOp::create(b, sum)));
    memref::StoreOp::create(b, lse, lseOut,
                            ValueRange{batchIv, headIv, add(i0, q)});
    return SmallVector<Value>{};
  });
}

void CpuFlashKernel::storeOutputByRow(Value accT, Value l, Value tq) {
  loop(index(0), tq, 1, {}, [&](Value q, ValueRange) {
    storeRow(accT, l, q, headIv, add(i0, q));
    return SmallVector<Value>{};
  });
}

void CpuFlashKernel::storeOutputBlocks(Value accT, Value l, int64_t width) {
  Value zero = vecConst(0.0f), one = vecConst(1.0f);
  loop(index(0), index(kQueryTile), kLanes, {}, [&](Value q0, ValueRange) {
    // 1 / l per query lane; rows that kept nothing (l = 0) are 0.
    Value sum = loadVec(l, {q0});
    Value inv = arith::SelectOp::create(
        b, arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, sum, zero),
        zero, arith::DivFOp::create(b, one, sum));
    loop(index(0), index(width), kLanes, {}, [&](Value c0, ValueRange) {
      SmallVector<Value> columns;
      for (int64_t c = 0; c < kLanes; ++c)
        columns.push_back(arith::MulFOp::create(
            b, loadVec(accT, {add(c0, index(c)), q0}), inv));
      transposeInRegisters(b, columns);
      for (int64_t q = 0; q < kLanes; ++q)
        storeVec(columns[q], out,
                 {batchIv, headIv, add(i0, add(q0, index(q))), c0});
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
}

std::pair<Value, Value> CpuFlashKernel::kvRow(Value row) {
  if (!readsPages)
    return {batchIv, row};
  Value rows = index(pagedKeys.getPageRows());
  Value entry = memref::LoadOp::create(
      b, pageTable, ValueRange{batchIv, arith::DivUIOp::create(b, row, rows)});
  return {emitPageOfRow(b, b.getLoc(), entry, numPages),
          arith::RemUIOp::create(b, row, rows)};
}

void CpuFlashKernel::setUpSizes(Value queryBuf, Value keyBuf, Value valueBuf,
                                Value keyLength) {
  query = queryBuf;
  key = keyBuf;
  value = valueBuf;
  queryLen = dim(query, 2);
  headDim = dim(query, 3);
  keyLen = keyLength ? keyLength : dim(key, 2);
  valueDim = dim(value, 3);
  delta = op.getAlignment() == Alignment::bottom_right ? sub(keyLen, queryLen)
                                                       : index(0);
  if (int64_t shift = op.getPositionShift())
    delta = add(delta, index(shift));
}

void CpuFlashKernel::processKeyTile(Value j0, Value isEmpty, Value needsMask,
                                    Value qT, Value sT, Value m, Value l,
                                    Value accT) {
  Value tk = minIndex(index(keyTile), sub(keyEnd, j0));
  Value trueValue = arith::ConstantIntOp::create(b, 1, 1);
  auto negate = [&](Value x) -> Value {
    return arith::XOrIOp::create(b, x, trueValue);
  };
  if (plan.runtimeSegments) {
    auto [segmentsEmpty, segmentsFull] = segmentTileClass(j0, tk);
    isEmpty = arith::OrIOp::create(b, isEmpty, segmentsEmpty);
    needsMask = arith::OrIOp::create(b, needsMask, negate(segmentsFull));
  }
  // Conditions known here (e.g. no pattern) emit no branch.
  auto thenIf = [&](Value cond) {
    if (matchPattern(cond, m_One()))
      return;
    auto ifOp = scf::IfOp::create(b, cond, /*withElseRegion=*/false);
    b.setInsertionPointToStart(ifOp.thenBlock());
  };
  OpBuilder::InsertionGuard tileGuard(b);
  if (matchPattern(isEmpty, m_One()))
    return;
  thenIf(negate(isEmpty));
  countTile(0);
  if (packsHeads && !scoresByRows) // (which prefetches as it goes)
    prefetchNextKeyTile(j0);
  computeScores(sT, qT, j0, tk);
  Value biasDropsKeys;
  if (bias || maskOperand || (op.getModsAttr() && !op.getModsAttr().empty()))
    biasDropsKeys = applyMods(sT, j0, tk);
  // Only partial tiles evaluate the pattern per element.
  bool masks = pattern && !matchPattern(needsMask, m_Zero());
  if (masks) {
    OpBuilder::InsertionGuard maskGuard(b);
    thenIf(needsMask);
    countTile(1);
    applyMask(sT, j0, tk);
  }
  // Mods that can drop keys (a zero adaptive-span weight) may do so in any
  // tile; masks only in partial ones.
  bool modsDropKeys =
      op.getModsAttr() && llvm::any_of(op.getModsAttr(), [](Attribute mod) {
        return isa<AdaptiveSpanAttr>(mod);
      });
  Value mayDropKeys = modsDropKeys ? arith::ConstantIntOp::create(b, 1, 1)
                      : masks      ? needsMask
                                   : arith::ConstantIntOp::create(b, 0, 1);
  if (biasDropsKeys)
    mayDropKeys = arith::OrIOp::create(b, mayDropKeys, biasDropsKeys);
  updateSoftmaxAndAccumulate(sT, m, l, accT, j0, tk, mayDropKeys);
}

void CpuFlashKernel::emitKeyTileLoop(Value queryTileIndex, Value tq, Value qT,
                                     Value sT, Value m, Value l, Value accT) {
  Value falseValue = arith::ConstantIntOp::create(b, 0, 1);
  if (plan.schedules) {
    // The entries of this (head, query tile): key tile * 2 + partial.
    Value headRow = plan.schedules->sharedByHeads ? index(0) : headIv;
    int64_t numQueryTiles = plan.schedules->perHead.front().numQueryTiles;
    Value row = add(mul(headRow, index(numQueryTiles)), queryTileIndex);
    auto table = [&](memref::GlobalOp global) -> Value {
      return memref::GetGlobalOp::create(b, global.getType(),
                                         global.getSymName());
    };
    Value rowStart = table(rowStartTable), entries = table(entryTable);
    auto loadIndex = [&](Value memref, Value position) -> Value {
      return arith::IndexCastOp::create(
          b, b.getIndexType(),
          memref::LoadOp::create(b, memref, ValueRange{position}));
    };
    Value first = loadIndex(rowStart, row);
    Value last = loadIndex(rowStart, add(row, index(1)));
    loop(first, last, 1, {}, [&](Value entry, ValueRange) {
      Value code = loadIndex(entries, entry);
      Value j0 = mul(arith::ShRUIOp::create(b, code, index(1)), index(keyTile));
      Value partial = arith::CmpIOp::create(
          b, arith::CmpIPredicate::ne, arith::AndIOp::create(b, code, index(1)),
          index(0));
      processKeyTile(j0, falseValue, partial, qT, sT, m, l, accT);
      return SmallVector<Value>{};
    });
    return;
  }
  loop(keyBegin, keyEnd, keyTile, {}, [&](Value j0, ValueRange) {
    Value isEmpty = falseValue, needsMask = falseValue;
    if (plan.staticPattern) {
      Value tk = minIndex(index(keyTile), sub(keyEnd, j0));
      Value isFull;
      std::tie(isEmpty, isFull) =
          emitTileClass(b, b.getLoc(), plan.staticPattern, i0, queryEnd, j0,
                        add(j0, tk), delta);
      needsMask = arith::XOrIOp::create(b, isFull,
                                        arith::ConstantIntOp::create(b, 1, 1));
    }
    processKeyTile(j0, isEmpty, needsMask, qT, sT, m, l, accT);
    return SmallVector<Value>{};
  });
}

func::FuncOp CpuFlashKernel::buildTileFunction(ModuleOp module) {
  // One query tile per call: the scratch buffers are allocas of the call's
  // frame, so they are released on return (and hoisted once inlined).
  SmallVector<Type> argTypes = {
      bufferTypeOf(op.getQuery()),
      keyBufferType(),
      valueBufferType(),
      MemRefType::get(resultType.getShape(), resultType.getElementType()),
      b.getIndexType(),
      b.getIndexType(),
      b.getIndexType()};
  pattern = op.getPatternAttr();
  bool usesSegments = pattern && pattern.usesSegments();
  if (usesSegments) {
    argTypes.push_back(bufferTypeOf(op.getQSegments()));
    argTypes.push_back(bufferTypeOf(op.getKvSegments()));
  }
  if (op.getRelTable())
    argTypes.push_back(bufferTypeOf(op.getRelTable()));
  if (op.getBias())
    argTypes.push_back(bufferTypeOf(op.getBias()));
  if (op.getMask())
    argTypes.push_back(bufferTypeOf(op.getMask()));
  int64_t dyn = ShapedType::kDynamic;
  auto partialType = MemRefType::get({dyn, dyn, kLanes}, f32);
  if (splitsKeys)
    llvm::append_range(argTypes, TypeRange{partialType, b.getIndexType(),
                                           b.getIndexType()});
  if (lseType)
    argTypes.push_back(MemRefType::get(lseType.getShape(), f32));
  if (usesPairs()) {
    argTypes.push_back(MemRefType::get(
        {dyn, dyn, valueDimStatic(), dyn}, b.getBF16Type()));
    argTypes.push_back(MemRefType::get({dyn, dyn, dyn}, b.getI8Type()));
  }
  // A paged cache's table and length come last.
  if (readsPages)
    argTypes.append({bufferTypeOf(pagedKeys.getTable()), b.getIndexType()});
  OpBuilder::InsertionGuard guard(b);
  auto parent = op->getParentOfType<func::FuncOp>();
  b.setInsertionPoint(parent);
  if (plan.schedules) {
    // Concatenated CSR over heads: rowStart[head * tiles + t] indexes
    // entries, each key tile * 2 + (1 if partial).
    SmallVector<int32_t> rowStart = {0}, entries;
    for (const TileSchedule &s : plan.schedules->perHead) {
      int64_t base = entries.size();
      for (int64_t t = 0; t < s.numQueryTiles; ++t)
        rowStart.push_back(base + s.rowStart[t + 1]);
      for (auto [tile, cls] : llvm::zip(s.keyTiles, s.classes))
        entries.push_back(tile * 2 + (cls == TileClass::Partial ? 1 : 0));
    }
    if (entries.empty())
      entries.push_back(0); // a global needs an element; rows stay empty
    std::string prefix = (parent.getSymName() + "__attn_tiles").str();
    rowStartTable = createTable(module, prefix + "_rows", rowStart);
    entryTable = createTable(module, prefix + "_entries", entries);
  }
  if (plan.countTiles && !module.lookupSymbol("attn_record_tiles")) {
    Type i64 = b.getI64Type();
    auto record =
        func::FuncOp::create(b, "attn_record_tiles",
                             b.getFunctionType({i64, i64, i64, i64, i64}, {}));
    record.setPrivate();
  }
  // Named after the caller so that artifacts linked together do not clash.
  auto fn = func::FuncOp::create(
      b,
      (parent.getSymName() + (splitsKeys   ? "__attn_cpu_group_split_tile"
                               : packsHeads ? "__attn_cpu_group_tile"
                                            : "__attn_cpu_flash_tile"))
          .str(),
      b.getFunctionType(argTypes, {}));
  fn.setPrivate();
  SymbolTable(module).insert(fn); // uniquifies the name
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value keyLength;
  if (readsPages) {
    unsigned last = entry->getNumArguments();
    pageTable = entry->getArgument(last - 2);
    keyLength = entry->getArgument(last - 1);
    numPages = dim(entry->getArgument(1), 0);
  }
  setUpSizes(entry->getArgument(0), entry->getArgument(1),
             entry->getArgument(2), keyLength);
  out = entry->getArgument(3);
  batchIv = entry->getArgument(4);
  headIv = entry->getArgument(5);
  Value queryTileIndex = entry->getArgument(6);
  unsigned nextArg = 7;
  if (usesSegments) {
    qSegments = entry->getArgument(nextArg++);
    kvSegments = entry->getArgument(nextArg++);
  }
  if (op.getRelTable())
    relTable = entry->getArgument(nextArg++);
  if (op.getBias())
    bias = entry->getArgument(nextArg++);
  if (op.getMask())
    maskOperand = entry->getArgument(nextArg++);
  keyBegin = index(0);
  keyEnd = keyLen;
  if (splitsKeys) {
    partial = entry->getArgument(nextArg++);
    split = entry->getArgument(nextArg++);
    numSplits = entry->getArgument(nextArg++);
    // Whole key tiles per range, the last range clipped to the keys.
    Value keyTiles = arith::CeilDivUIOp::create(b, keyLen, index(keyTile));
    Value perSplit = mul(arith::CeilDivUIOp::create(b, keyTiles, numSplits),
                         index(keyTile));
    keyBegin = minIndex(mul(split, perSplit), keyLen);
    keyEnd = minIndex(add(keyBegin, perSplit), keyLen);
  }
  if (lseType)
    lseOut = entry->getArgument(nextArg++);
  if (usesPairs()) {
    valuesT = entry->getArgument(nextArg++);
    finiteValueTiles = entry->getArgument(nextArg++);
  }
  Value groups = arith::DivUIOp::create(b, dim(query, 1), dim(key, 1));
  // Packed heads: the call is per key/value head, its group in the lanes.
  kvHead = packsHeads ? headIv : arith::DivUIOp::create(b, headIv, groups);
  if (std::optional<APFloat> attr = op.getScale()) {
    scale = f32Const(attr->convertToFloat());
  } else {
    Value d = arith::IndexCastUIOp::create(b, b.getI64Type(), headDim);
    scale = math::RsqrtOp::create(b, arith::UIToFPOp::create(b, f32, d));
  }
  // Pair products (AMX, vdpbf16ps) read Q in bf16 as it is and fold the
  // scale into exp's multiplier instead: one rounding less, and the running
  // max of unscaled scores is the same key's (the scale is positive). Score
  // mods and a bias see scaled scores, so they keep the scale in Q.
  std::optional<APFloat> scaleAttr = op.getScale();
  bool hasMods = op.getModsAttr() && !op.getModsAttr().empty();
  scoresUnscaled = usesPairs() && !hasMods && !op.getBias() && !op.getMask() &&
                   (!scaleAttr || scaleAttr->convertToFloat() > 0);
  exponentScale = f32Const(float(M_LOG2E));
  if (scoresUnscaled)
    exponentScale = arith::MulFOp::create(b, scale, exponentScale);
  // Rows [i0, i0 + tq) of this query tile (QueryTiling::rows); packed
  // heads cover every row of the group.
  Value tileEnd;
  if (packsHeads) {
    i0 = index(0);
    tileEnd = queryLen;
  } else if (int64_t period = plan.queryTiling.period) {
    Value perPeriod = index(plan.queryTiling.tilesPerPeriod());
    Value periodStart = mul(
        arith::DivUIOp::create(b, queryTileIndex, perPeriod), index(period));
    i0 = add(periodStart,
             mul(arith::RemUIOp::create(b, queryTileIndex, perPeriod),
                 index(kQueryTile)));
    tileEnd =
        minIndex(add(i0, index(kQueryTile)), add(periodStart, index(period)));
  } else {
    i0 = mul(queryTileIndex, index(kQueryTile));
    tileEnd = add(i0, index(kQueryTile));
  }
  // Tiles past the end (the last period's) have no rows.
  Value tq = arith::MaxSIOp::create(
      b, sub(minIndex(tileEnd, queryLen), minIndex(i0, queryLen)), index(0));
  queryEnd = add(i0, tq);

  // Per-tile scratch, 64-byte aligned for full-width vector accesses.
  IntegerAttr align = b.getI64IntegerAttr(64);
  auto scratch = [&](ArrayRef<int64_t> shape, ValueRange sizes,
                     Type element = nullptr) {
    return memref::AllocaOp::create(
        b, MemRefType::get(shape, element ? element : f32), sizes, align);
  };
  Value qT;
  if (usesPairs()) {
    Type bf16 = b.getBF16Type();
    qPairs = scratch({headDimStatic() / 2, 2 * kQueryTile}, {}, bf16);
    pPairs = scratch({keyTile / 2, 2 * kQueryTile}, {}, bf16);
    if (usesAmx)
      keyTail = scratch({kLanes, headDimStatic()}, {}, bf16);
  } else {
    qT = scratch({dyn, kQueryTile}, {headDim});
  }
  Value sT = scratch({keyTile, kQueryTile}, {});
  // Packed heads with a head dim of whole vectors keep acc by query row
  // (accumulateByRows); otherwise acc^T, by column.
  int64_t staticValueDim = valueDimStatic();
  accByRows = packsHeads && !ShapedType::isDynamic(staticValueDim) &&
              staticValueDim % kLanes == 0;
  Value accT = accByRows ? scratch({kQueryTile, staticValueDim}, {})
                         : scratch({dyn, kQueryTile}, {valueDim});
  if (accByRows) {
    alphaLanes = scratch({kQueryTile}, {});
    packedRows = mul(groups, queryLen);
  }
  // Decoding's scores as dot products along the head dim when it is whole
  // vectors and row blocks of 4 fit the lanes.
  int64_t staticHeadDim = headDimStatic();
  scoresByRows = accByRows && !usesPairs() &&
                 !ShapedType::isDynamic(staticHeadDim) &&
                 staticHeadDim % kLanes == 0 && kLanes % 4 == 0;
  if (scoresByRows)
    qRows = scratch({kQueryTile, staticHeadDim}, {});
  Value m = scratch({kQueryTile}, {}), l = scratch({kQueryTile}, {});
  if (plan.countTiles) {
    counters =
        memref::AllocaOp::create(b, MemRefType::get({2}, b.getIndexType()));
    for (int64_t c = 0; c < 2; ++c)
      memref::StoreOp::create(b, index(0), counters, ValueRange{index(c)});
  }
  if (usesSegments)
    loadQueryIds();
  if (plan.runtimeSegments)
    std::tie(queryIdMin, queryIdMax) = idRange(qSegments, i0, tq);

  if (scoresByRows)
    packGroupQueryRows(sT, groups);
  else if (packsHeads)
    packGroupQueries(qT, groups);
  else if (usesPairs())
    packQueryPairs(tq);
  else
    packQueries(qT, tq);
  for (int64_t t = 0; t < kQueryVectors; ++t) {
    storeVec(vecConst(-INFINITY), m, {lane(t)});
    storeVec(vecConst(0.0f), l, {lane(t)});
  }
  if (accByRows) {
    for (int64_t row = 0; row < kQueryTile; ++row)
      for (int64_t c = 0; c < staticValueDim; c += kLanes)
        storeVec(vecConst(0.0f), accT, {index(row), index(c)});
  } else {
    loop(index(0), valueDim, 1, {}, [&](Value c, ValueRange) {
      for (int64_t t = 0; t < kQueryVectors; ++t)
        storeVec(vecConst(0.0f), accT, {c, lane(t)});
      return SmallVector<Value>{};
    });
  }

  emitKeyTileLoop(queryTileIndex, tq, qT, sT, m, l, accT);

  if (splitsKeys)
    storePartial(accT, m, l);
  else if (packsHeads)
    storeGroupOutput(accT, l, groups);
  else
    storeOutput(accT, m, l, tq);
  if (counters) {
    Type i64 = b.getI64Type();
    auto asI64 = [&](Value v) -> Value {
      return arith::IndexCastOp::create(b, i64, v);
    };
    func::CallOp::create(
        b, "attn_record_tiles", TypeRange{},
        ValueRange{
            asI64(index(kQueryTile)), asI64(index(plan.queryTiling.period)),
            asI64(index(keyTile)),
            asI64(memref::LoadOp::create(b, counters, ValueRange{index(0)})),
            asI64(memref::LoadOp::create(b, counters, ValueRange{index(1)}))});
  }
  func::ReturnOp::create(b);
  return fn;
}
