//===- CpuFlashKernelGroups.cpp - decoding: query heads packed per group --===//
//
// The parts of the CPU kernel that only its packed-heads variants emit
// (docs/Pipeline.md, "Decoding"): the query heads of a key/value group in
// the lanes of one query vector, the next key tile prefetched, and, when
// the keys of a group are split over threads, the partial states and their
// log-sum-exp merge.
//
//===----------------------------------------------------------------------===//
#include "CpuFlashKernel.h"
#include "LoopBuilder.h"

using namespace mlir;
using namespace mlir::attn;

void CpuFlashKernel::packGroupQueries(Value qT, Value groups) {
  Value zero = vecConst(0.0f);
  loop(index(0), headDim, 1, {}, [&](Value c, ValueRange) {
    storeVec(zero, qT, {c, lane(0)});
    return SmallVector<Value>{};
  });
  loop(index(0), groups, 1, {}, [&](Value g, ValueRange) {
    Value head = add(mul(kvHead, groups), g);
    loop(index(0), queryLen, 1, {}, [&](Value i, ValueRange) {
      Value column = add(mul(g, queryLen), i);
      loop(index(0), headDim, 1, {}, [&](Value c, ValueRange) {
        Value x = loadAsF32(query, ValueRange{batchIv, head, i, c});
        memref::StoreOp::create(b, arith::MulFOp::create(b, x, scale), qT,
                                ValueRange{c, column});
        return SmallVector<Value>{};
      });
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
}

void CpuFlashKernel::packGroupQueryRows(Value sT, Value groups) {
  Value zero = vecConst(0.0f);
  int64_t width = headDimStatic();
  // Zero rows score 0 in the lanes past the group; sT's lanes start at 0
  // too, as the rows it is not written for stay finite.
  loop(index(0), index(kQueryTile), 1, {}, [&](Value row, ValueRange) {
    for (int64_t c = 0; c < width; c += kLanes)
      storeVec(zero, qRows, {row, index(c)});
    return SmallVector<Value>{};
  });
  loop(index(0), index(keyTile), 1, {}, [&](Value r, ValueRange) {
    storeVec(zero, sT, {r, index(0)});
    return SmallVector<Value>{};
  });
  Value scaleVec = vector::BroadcastOp::create(b, vec, scale);
  loop(index(0), groups, 1, {}, [&](Value g, ValueRange) {
    Value head = add(mul(kvHead, groups), g);
    loop(index(0), queryLen, 1, {}, [&](Value i, ValueRange) {
      Value row = add(mul(g, queryLen), i);
      for (int64_t c = 0; c < width; c += kLanes) {
        Value x = loadVecAsF32(query, {batchIv, head, i, index(c)});
        storeVec(arith::MulFOp::create(b, x, scaleVec), qRows,
                 {row, index(c)});
      }
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
}

Value CpuFlashKernel::transposeSum(ArrayRef<Value> vectors) {
  int64_t n = kLanes, bits = llvm::Log2_64(n);
  auto reversed = [&](int64_t i) {
    int64_t r = 0;
    for (int64_t bit = 0; bit < bits; ++bit)
      r |= ((i >> bit) & 1) << (bits - 1 - bit);
    return r;
  };
  // Each level halves the vectors: x and y, whose segments of 2s lanes
  // hold one vector's partial sums each, become segments of s lanes (x's
  // half, then y's) summed from their low and high halves. Inputs in
  // bit-reversed order leave vector i's sum in lane i.
  SmallVector<Value> current;
  for (int64_t i = 0; i < n; ++i)
    current.push_back(vectors[reversed(i)]);
  for (int64_t s = n / 2; s >= 1; s /= 2) {
    SmallVector<int64_t> lo, hi;
    for (int64_t q = 0; q < n / (2 * s); ++q) {
      for (int64_t half : {int64_t(0), n})
        for (int64_t t = 0; t < s; ++t) {
          lo.push_back(half + q * 2 * s + t);
          hi.push_back(half + q * 2 * s + s + t);
        }
    }
    SmallVector<Value> next;
    for (size_t p = 0; p < current.size(); p += 2) {
      Value x = current[p], y = current[p + 1];
      next.push_back(arith::AddFOp::create(
          b, vector::ShuffleOp::create(b, x, y, lo),
          vector::ShuffleOp::create(b, x, y, hi)));
    }
    current = std::move(next);
  }
  return current.front();
}

void CpuFlashKernel::computeScoresByRows(Value sT, Value j0, Value tk) {
  constexpr int64_t kRows = 4;
  int64_t keysPerBlock = kLanes / kRows, width = headDimStatic();
  Value rowBlocks =
      arith::CeilDivUIOp::create(b, packedRows, index(kRows));
  auto keyBlock = [&](Value r0, int64_t keys) {
    // K's rows kPrefetchTiles key tiles ahead, a few per block: requests
    // spread over the tile keep the memory busy while it is computed (the
    // burst of prefetchNextKeyTile stalls on fill buffers and leaves the
    // memory idle during the compute: 11.65 -> 10.89 ms at 32768 keys).
    // V's rows are asked for by P V (accumulateByRows), so that requests
    // go out during both halves of the tile: 11.2-11.8 -> 9.6-10.3 ms.
    prefetchKeyRows(add(j0, index(kPrefetchTiles * keyTile)), r0,
                    index(keys), /*values=*/false);
    loop(index(0), rowBlocks, 1, {}, [&](Value rb, ValueRange) {
      Value g0 = mul(rb, index(kRows));
      SmallVector<Value> zeros(keys * kRows, vecConst(0.0f));
      // A block's rows lie in one page when blocks and pages are whole
      // multiples of it (j0 is a whole number of key tiles): one table
      // lookup per block.
      SmallVector<std::pair<Value, Value>> keyRows;
      bool onePage = readsPages && keyTile % keysPerBlock == 0 &&
                     pagedKeys.getPageRows() % keysPerBlock == 0;
      std::pair<Value, Value> first = kvRow(add(j0, r0));
      for (int64_t k = 0; k < keys; ++k)
        keyRows.push_back(
            k == 0    ? first
            : onePage ? std::pair(first.first, add(first.second, index(k)))
                      : kvRow(add(add(j0, r0), index(k))));
      scf::ForOp dots = loop(
          index(0), index(width), kLanes, zeros, [&](Value c, ValueRange acc) {
            SmallVector<Value> keyVectors, next(acc.begin(), acc.end());
            for (int64_t k = 0; k < keys; ++k)
              keyVectors.push_back(loadVecAsF32(key, kvIndices(keyRows[k], c)));
            for (int64_t g = 0; g < kRows; ++g) {
              Value q = loadVec(qRows, {add(g0, index(g)), c});
              for (int64_t k = 0; k < keys; ++k) {
                Value &sum = next[k * kRows + g];
                sum = vector::FMAOp::create(b, keyVectors[k], q, sum);
              }
            }
            return next;
          });
      if (keys == keysPerBlock) {
        // Lane k * 4 + g: key k's scores of rows g0 .. g0 + 3.
        SmallVector<Value> partials(dots.getResults());
        Value sums = transposeSum(partials);
        for (int64_t k = 0; k < keys; ++k)
          vector::StoreOp::create(
              b,
              vector::ExtractStridedSliceOp::create(b, sums, {k * kRows},
                                                    {kRows}, {1}),
              sT, ValueRange{add(r0, index(k)), g0});
        return SmallVector<Value>{};
      }
      for (int64_t g = 0; g < kRows; ++g) {
        Value sum = vector::ReductionOp::create(
            b, vector::CombiningKind::ADD, dots.getResult(g),
            arith::FastMathFlags::reassoc);
        memref::StoreOp::create(b, sum, sT,
                                ValueRange{r0, add(g0, index(g))});
      }
      return SmallVector<Value>{};
    });
  };
  Value whole = mul(arith::DivUIOp::create(b, tk, index(keysPerBlock)),
                    index(keysPerBlock));
  loop(index(0), whole, keysPerBlock, {}, [&](Value r0, ValueRange) {
    keyBlock(r0, keysPerBlock);
    return SmallVector<Value>{};
  });
  loop(whole, tk, 1, {}, [&](Value r0, ValueRange) {
    keyBlock(r0, 1);
    return SmallVector<Value>{};
  });
}

void CpuFlashKernel::storeGroupOutput(Value accT, Value l, Value groups) {
  loop(index(0), groups, 1, {}, [&](Value g, ValueRange) {
    Value head = add(mul(kvHead, groups), g);
    loop(index(0), queryLen, 1, {}, [&](Value i, ValueRange) {
      storeRow(accT, l, add(mul(g, queryLen), i), head, i);
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
}

void CpuFlashKernel::storePartial(Value accT, Value m, Value l) {
  Value slot =
      add(mul(add(mul(batchIv, dim(key, 1)), kvHead), numSplits), split);
  if (accByRows) {
    // The slot keeps the merge's layout, [Dv][lanes].
    for (int64_t row = 0; row < kQueryTile; ++row)
      loop(index(0), valueDim, 1, {}, [&](Value c, ValueRange) {
        memref::StoreOp::create(
            b, memref::LoadOp::create(b, accT, ValueRange{index(row), c}),
            partial, ValueRange{slot, c, index(row)});
        return SmallVector<Value>{};
      });
  } else {
    loop(index(0), valueDim, 1, {}, [&](Value c, ValueRange) {
      storeVec(loadVec(accT, {c, index(0)}), partial, {slot, c, index(0)});
      return SmallVector<Value>{};
    });
  }
  storeVec(loadVec(m, {index(0)}), partial, {slot, valueDim, index(0)});
  storeVec(loadVec(l, {index(0)}), partial,
           {slot, add(valueDim, index(1)), index(0)});
}

func::FuncOp CpuFlashKernel::buildMergeFunction(ModuleOp module) {
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<Type> argTypes = {
      bufferTypeOf(op.getQuery()),
      keyBufferType(),
      valueBufferType(),
      MemRefType::get(resultType.getShape(), resultType.getElementType()),
      MemRefType::get({dyn, dyn, kLanes}, f32),
      b.getIndexType(),
      b.getIndexType(),
      b.getIndexType()};
  if (readsPages)
    argTypes.append({bufferTypeOf(pagedKeys.getTable()), b.getIndexType()});
  OpBuilder::InsertionGuard guard(b);
  auto parent = op->getParentOfType<func::FuncOp>();
  b.setInsertionPoint(parent);
  auto fn = func::FuncOp::create(
      b, (parent.getSymName() + "__attn_cpu_group_merge").str(),
      b.getFunctionType(argTypes, {}));
  fn.setPrivate();
  SymbolTable(module).insert(fn);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  accByRows = false; // the merged acc below is [Dv][lanes]
  setUpSizes(
      entry->getArgument(0), entry->getArgument(1), entry->getArgument(2),
      readsPages ? entry->getArgument(entry->getNumArguments() - 1) : Value());
  out = entry->getArgument(3);
  partial = entry->getArgument(4);
  batchIv = entry->getArgument(5);
  kvHead = entry->getArgument(6);
  numSplits = entry->getArgument(7);
  Value groups = arith::DivUIOp::create(b, dim(query, 1), dim(key, 1));
  Value firstSlot = mul(add(mul(batchIv, dim(key, 1)), kvHead), numSplits);
  Value negInf = vecConst(-INFINITY), zero = vecConst(0.0f);
  auto isNegInf = [&](Value x) {
    return arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x, negInf);
  };
  auto slotRow = [&](Value s, Value row) {
    return loadVec(partial, {add(firstSlot, s), row, index(0)});
  };
  // Range s weighs exp(m_s - M), 0 where it kept nothing (m_s = -inf);
  // M = -inf (no range kept anything) leaves every weight 0.
  Value top = loop(index(0), numSplits, 1, {negInf},
                   [&](Value s, ValueRange acc) -> SmallVector<Value> {
                     return {arith::MaximumFOp::create(
                         b, acc[0], slotRow(s, valueDim))};
                   })
                  .getResult(0);
  Value shift = arith::SelectOp::create(b, isNegInf(top), zero, top);
  IntegerAttr align = b.getI64IntegerAttr(64);
  Value weights = memref::AllocaOp::create(
      b, MemRefType::get({dyn, kLanes}, f32), ValueRange{numSplits}, align);
  Value sum = loop(index(0), numSplits, 1, {zero},
                   [&](Value s, ValueRange acc) -> SmallVector<Value> {
                     Value ms = slotRow(s, valueDim);
                     Value w = arith::SelectOp::create(
                         b, isNegInf(ms), zero,
                         math::ExpOp::create(
                             b, arith::SubFOp::create(b, ms, shift)));
                     storeVec(w, weights, {s, index(0)});
                     Value ls = slotRow(s, add(valueDim, index(1)));
                     return {vector::FMAOp::create(b, w, ls, acc[0])};
                   })
                  .getResult(0);
  Value accT = memref::AllocaOp::create(
      b, MemRefType::get({dyn, kLanes}, f32), ValueRange{valueDim}, align);
  Value l = memref::AllocaOp::create(b, MemRefType::get({kLanes}, f32),
                                     ValueRange{}, align);
  storeVec(sum, l, {index(0)});
  loop(index(0), valueDim, 1, {}, [&](Value c, ValueRange) {
    Value merged =
        loop(index(0), numSplits, 1, {zero},
             [&](Value s, ValueRange acc) -> SmallVector<Value> {
               return {vector::FMAOp::create(
                   b, loadVec(weights, {s, index(0)}), slotRow(s, c), acc[0])};
             })
            .getResult(0);
    storeVec(merged, accT, {c, index(0)});
    return SmallVector<Value>{};
  });
  storeGroupOutput(accT, l, groups);
  func::ReturnOp::create(b);
  return fn;
}

Value CpuFlashKernel::numKeySplits(Value batch, Value keyHeads, Value keys,
                                   Value width) {
  // As many calls as the OpenMP runtime has threads (asked at run time:
  // the kernels link it anyway), each over at least 4 key tiles, with the
  // partial states (the caller's stack) within 256 KB.
  constexpr int64_t kMinKeyTiles = 4, kMaxPartialBytes = 256 << 10;
  auto ceilDiv = [&](Value x, Value y) {
    return b.createOrFold<arith::CeilDivUIOp>(x, y);
  };
  auto divide = [&](Value x, Value y) {
    return b.createOrFold<arith::DivUIOp>(x, y);
  };
  auto minimum = [&](Value x, Value y) {
    return b.createOrFold<arith::MinUIOp>(x, y);
  };
  Value calls = b.createOrFold<arith::MulIOp>(batch, keyHeads);
  Value byKeys = divide(ceilDiv(keys, index(keyTile)), index(kMinKeyTiles));
  Value slotBytes = b.createOrFold<arith::MulIOp>(
      b.createOrFold<arith::AddIOp>(width, index(2)), index(kLanes * 4));
  Value byStack = divide(index(kMaxPartialBytes),
                         b.createOrFold<arith::MulIOp>(calls, slotBytes));
  Value bound = minimum(byKeys, byStack);
  // Too few keys or too much state: no split, whatever the threads.
  if (matchPattern(bound, m_Zero()) || matchPattern(bound, m_One()))
    return index(1);
  Value threads = buildOmpMaxThreads(b, module);
  return arith::MaxUIOp::create(b, minimum(ceilDiv(threads, calls), bound),
                                index(1));
}

void CpuFlashKernel::prefetchNextKeyTile(Value j0) {
  prefetchKeyRows(add(j0, index(keyTile)), index(0), index(keyTile));
}

void CpuFlashKernel::prefetchKeyRows(Value j0, Value r0, Value rows,
                                     bool values) {
  loop(r0, add(r0, rows), 1, {}, [&](Value r, ValueRange) {
    prefetchRow(key, headDim, j0, r);
    if (values)
      prefetchRow(value, valueDim, j0, r);
    return SmallVector<Value>{};
  });
}

void CpuFlashKernel::prefetchRow(Value buffer, Value width, Value j0,
                                 Value r) {
  // Into L2 (prefetcht1), not L1: the rows asked for lie up to 3 key tiles
  // ahead (384 KiB with 128-key tiles at D = 128), more than any L1 holds,
  // and L2 tracks more misses at once. On Zen 4, decoding 32768 keys:
  // 13.8 -> 11.9 ms on two threads, 27.1 -> 20.3 on one (bench/RESULTS.md).
  constexpr unsigned kKeyRowLocality = 2;
  // Rows past the end repeat the last one: a prefetch cannot fault, but
  // the memref access must stay in bounds.
  std::pair<Value, Value> row =
      kvRow(minIndex(add(j0, r), sub(keyLen, index(1))));
  int64_t lineElements =
      512 / cast<MemRefType>(buffer.getType()).getElementTypeBitWidth();
  loop(index(0), width, lineElements, {}, [&](Value c, ValueRange) {
    memref::PrefetchOp::create(b, buffer, kvIndices(row, c),
                               /*isWrite=*/false, kKeyRowLocality,
                               /*isDataCache=*/true);
    return SmallVector<Value>{};
  });
}

void CpuFlashKernel::accumulateByRows(Value sT, Value accT, Value j0, Value tk,
                                      bool guarded) {
  constexpr int64_t kRows = 4;
  int64_t columnVectors = kLanes == 16 ? 4 : 3;
  int64_t width = cast<MemRefType>(accT.getType()).getDimSize(1);
  Value zero = f32Const(0.0f);
  auto rowBlock = [&](Value g0, int64_t rows) {
    for (int64_t c0 = 0; c0 < width; c0 += columnVectors * kLanes) {
      int64_t vectors = std::min(columnVectors, (width - c0) / kLanes);
      SmallVector<Value> init;
      for (int64_t g = 0; g < rows; ++g) {
        Value row = add(g0, index(g));
        Value a = vector::BroadcastOp::create(
            b, vec, memref::LoadOp::create(b, alphaLanes, ValueRange{row}));
        for (int64_t t = 0; t < vectors; ++t)
          init.push_back(arith::MulFOp::create(
              b, loadVec(accT, {row, index(c0 + t * kLanes)}), a));
      }
      // The first block of columns asks for V's row kPrefetchTiles key
      // tiles ahead, one row per key (see computeScoresByRows).
      bool prefetches = scoresByRows && c0 == 0;
      scf::ForOp keys = loop(
          index(0), tk, 1, init, [&](Value r, ValueRange acc) {
            if (prefetches)
              prefetchRow(value, valueDim,
                          add(j0, index(kPrefetchTiles * keyTile)), r);
            SmallVector<Value> values, next(acc.begin(), acc.end());
            for (int64_t t = 0; t < vectors; ++t)
              values.push_back(loadVecAsF32(
                  value, kvIndices(kvRow(add(j0, r)), index(c0 + t * kLanes))));
            for (int64_t g = 0; g < rows; ++g) {
              Value p = memref::LoadOp::create(
                  b, sT, ValueRange{r, add(g0, index(g))});
              Value weight = vector::BroadcastOp::create(b, vec, p);
              // A dropped key (p = 0) must not multiply V (NaN or inf in
              // an unused cache slot).
              Value kept =
                  guarded ? arith::CmpFOp::create(b, arith::CmpFPredicate::ONE,
                                                  p, zero)
                                .getResult()
                          : Value();
              for (int64_t t = 0; t < vectors; ++t) {
                Value &sum = next[g * vectors + t];
                Value updated =
                    vector::FMAOp::create(b, weight, values[t], sum);
                sum = kept ? arith::SelectOp::create(b, kept, updated, sum)
                                 .getResult()
                           : updated;
              }
            }
            return next;
          });
      for (int64_t g = 0; g < rows; ++g)
        for (int64_t t = 0; t < vectors; ++t)
          storeVec(keys.getResult(g * vectors + t), accT,
                   {add(g0, index(g)), index(c0 + t * kLanes)});
    }
  };
  forRowBlocks(packedRows, rowBlock, kRows);
}
