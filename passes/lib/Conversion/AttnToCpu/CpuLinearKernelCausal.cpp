//===- CpuLinearKernelCausal.cpp - causal feature-map attention -----------===//
//
// The causal function of CpuLinearKernel (CpuLinearKernel.h): chunks of
// kCausalChunk rows, masked scores inside a chunk, S and z carrying the
// chunks before.
//
//===----------------------------------------------------------------------===//
#include "CpuLinearKernel.h"
#include "VectorTranspose.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/SymbolTable.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

CpuLinearKernel::CausalScratch CpuLinearKernel::causalScratch() {
  constexpr int64_t chunk = kCausalChunk;
  CausalScratch s;
  s.phiK = scratch({chunk, featureDim});
  s.phiKT = scratch({featureDim, chunk});
  s.phiQ = scratch({chunk, featureDim});
  s.scores = scratch({chunk, chunk});
  s.denominators = scratch({chunk});
  VectorType indexVec = VectorType::get({lanes}, b.getI32Type());
  SmallVector<int32_t> iota;
  for (int64_t l = 0; l < lanes; ++l)
    iota.push_back(l);
  s.laneIds = arith::ConstantOp::create(
      b, DenseElementsAttr::get(indexVec, ArrayRef<int32_t>(iota)));
  return s;
}

void CpuLinearKernel::transposeKeyFeatures(const CausalScratch &s,
                                           Value count) {
  constexpr int64_t chunk = kCausalChunk;
  forEach(count, index(chunk), 1, [&](Value j) {
    for (int64_t t = 0; t < featureDim / lanes; ++t)
      storeVec(vecConst(0), s.phiK, {j, lane(t)});
  });
  forEach(index(0), index(chunk), lanes, [&](Value j0) {
    forEach(index(0), index(featureDim), lanes, [&](Value f0) {
      SmallVector<Value> rows;
      for (int64_t r = 0; r < lanes; ++r)
        rows.push_back(loadVec(s.phiK, {add(j0, index(r)), f0}));
      transposeInRegisters(b, rows);
      for (int64_t c = 0; c < lanes; ++c)
        storeVec(rows[c], s.phiKT, {add(f0, index(c)), j0});
    });
  });
}

void CpuLinearKernel::chunkOutputs(const CausalScratch &s, Value query,
                                   Value value, Value state, Value sums,
                                   Value slot, Value out, Value batch,
                                   Value head, Value groups, Value c0,
                                   Value chunkQueries, Value chunkKeys) {
  constexpr int64_t chunk = kCausalChunk;
  VectorType indexVec = VectorType::get({lanes}, b.getI32Type());
  forEach(index(0), groups, 1, [&](Value g) {
    Value queryHead = add(mul(head, groups), g);
    SmallVector<Value> z;
    for (int64_t t = 0; t < featureDim / lanes; ++t)
      z.push_back(loadVec(sums, {slot, head, lane(t)}));
    features(query, batch, queryHead, c0, chunkQueries, s.phiQ);
    forEach(index(0), chunkQueries, 1, [&](Value i) {
      memref::StoreOp::create(b, dotWithSums(s.phiQ, i, z), s.denominators,
                              ValueRange{i});
    });
    // scores[i][j] = phi(q_i) . phi(k_j) for j <= i, else 0; their row
    // sums join the denominators.
    for (auto [firstChunkVector, chunkVectors] : vectorChunks(chunk / lanes)) {
      int64_t firstVector = firstChunkVector, vectors = chunkVectors;
      forRowBlocks(chunkQueries, rowsFor(vectors), [&](Value r0,
                                                       int64_t rows) {
        SmallVector<Value> acc(rows * vectors, vecConst(0));
        acc = blockedUpdates(
            index(featureDim), acc, rows, vectors,
            [&](Value f, int64_t t) {
              return loadVec(s.phiKT, {f, lane(firstVector + t)});
            },
            [&](Value f, int64_t r) -> Value {
              return broadcastAt(s.phiQ, {add(r0, index(r)), f});
            });
        for (int64_t r = 0; r < rows; ++r) {
          Value row = add(r0, index(r));
          Value rowSum = vecConst(0);
          for (int64_t t = 0; t < vectors; ++t) {
            // Lane l is key firstKey + l: kept when firstKey + l <= row.
            Value firstKey = index((firstVector + t) * lanes);
            Value limit = arith::IndexCastOp::create(b, b.getI32Type(),
                                                     sub(row, firstKey));
            Value keep = arith::CmpIOp::create(
                b, arith::CmpIPredicate::sle, s.laneIds,
                vector::BroadcastOp::create(b, indexVec, limit));
            Value masked = arith::SelectOp::create(
                b, keep, acc[r * vectors + t], vecConst(0));
            storeVec(masked, s.scores, {row, firstKey});
            rowSum = arith::AddFOp::create(b, rowSum, masked);
          }
          Value den = memref::LoadOp::create(b, s.denominators, row);
          Value sum = vector::ReductionOp::create(
              b, vector::CombiningKind::ADD, rowSum,
              arith::FastMathFlags::reassoc);
          memref::StoreOp::create(b, arith::AddFOp::create(b, den, sum),
                                  s.denominators, ValueRange{row});
        }
      });
    }
    // O = phi(Q) S + scores V_chunk over the keys up to the block's last
    // row, divided by the denominators.
    for (auto [firstChunkVector, chunkVectors] : valueChunks()) {
      int64_t firstVector = firstChunkVector, vectors = chunkVectors;
      forRowBlocks(chunkQueries, rowsFor(vectors), [&](Value r0,
                                                       int64_t rows) {
        auto column = [&](int64_t t) { return lane(firstVector + t); };
        SmallVector<Value> acc(rows * vectors, vecConst(0));
        acc = blockedUpdates(
            index(featureDim), acc, rows, vectors,
            [&](Value f, int64_t t) {
              return loadVec(state, {slot, head, f, column(t)});
            },
            [&](Value f, int64_t r) -> Value {
              return broadcastAt(s.phiQ, {add(r0, index(r)), f});
            });
        Value seen = b.createOrFold<arith::MinUIOp>(add(r0, index(rows)),
                                                    chunkKeys);
        acc = blockedUpdates(
            seen, acc, rows, vectors,
            [&](Value j, int64_t t) {
              return loadVec(value, {batch, head, add(c0, j), column(t)});
            },
            [&](Value j, int64_t r) -> Value {
              return broadcastAt(s.scores, {add(r0, index(r)), j});
            });
        storeQuotients(acc, rows, vectors, s.denominators, r0, out, batch,
                       queryHead, c0, firstVector);
      });
    }
  });
}

std::pair<Value, Value> CpuLinearKernel::chunkRows(Value c0, Value queryLen,
                                                   Value keyLen) {
  Value chunkQueries = b.createOrFold<arith::MinUIOp>(index(kCausalChunk),
                                                      sub(queryLen, c0));
  Value keysLeft = b.createOrFold<arith::SelectOp>(
      b.createOrFold<arith::CmpIOp>(arith::CmpIPredicate::ult, c0, keyLen),
      sub(keyLen, c0), index(0));
  return {chunkQueries,
          b.createOrFold<arith::MinUIOp>(index(kCausalChunk), keysLeft)};
}

func::FuncOp CpuLinearKernel::buildCausalFunction(ModuleOp module,
                                                  StringRef prefix) {
  OpBuilder::InsertionGuard guard(b);
  Type indexType = b.getIndexType();
  func::FuncOp fn = createFunction(
      module, (prefix + "__attn_cpu_linear_causal").str(),
      {bufferType(op.getQuery()), bufferType(op.getKey()),
       bufferType(op.getValue()), stateType(), sumsType(),
       bufferType(op.getResult()), omegaTType(), indexType, indexType});
  Value query = fn.getArgument(0), key = fn.getArgument(1),
        value = fn.getArgument(2), state = fn.getArgument(3),
        sums = fn.getArgument(4), out = fn.getArgument(5),
        batch = fn.getArgument(7), head = fn.getArgument(8);
  omegaT = fn.getArgument(6);
  bool favor = op.getFeatureMap() == FeatureMap::favor;
  Value groups = b.createOrFold<arith::DivUIOp>(dim(query, 1), dim(key, 1));
  Value queryLen = dim(query, 2), keyLen = dim(key, 2);
  zeroState(state, sums, batch, head);
  CausalScratch s = causalScratch();

  // Chunks of rows c0 .. c0 + chunk: query i sees keys j <= i, the earlier
  // chunks through S and z, its own through the masked scores. FAVOR+
  // carries the largest key exponent so far, the scale of S and z.
  Value noMaximum = arith::ConstantOp::create(b, b.getF32FloatAttr(-INFINITY));
  loop(index(0), queryLen, kCausalChunk, {noMaximum}, [&](Value c0,
                                                          ValueRange carried) {
    auto [chunkQueries, chunkKeys] = chunkRows(c0, queryLen, keyLen);
    // phi of the chunk's keys (zero rows past the keys), and transposed
    // through registers for the scores' vector loads along the keys.
    SmallVector<Value> columnSums;
    Value keyMaximum = carried[0];
    if (favor) {
      keyMaximum = writeRandomFeatures(key, batch, head, c0, chunkKeys,
                                       s.phiK, carried[0], columnSums);
      // S and z to the new scale exp(-maximum) (the same one when it did
      // not grow, or no key came: -inf - -inf is NaN).
      Value same = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                         keyMaximum, carried[0]);
      Value factor = arith::SelectOp::create(
          b, same, arith::ConstantOp::create(b, b.getF32FloatAttr(1)),
          math::ExpOp::create(
              b, arith::SubFOp::create(b, carried[0], keyMaximum)));
      Value factorVec = vector::BroadcastOp::create(b, vec, factor);
      forEach(index(0), index(featureDim), 1, [&](Value f) {
        for (int64_t t = 0; t < valueDim / lanes; ++t) {
          Value x = loadVec(state, {batch, head, f, lane(t)});
          storeVec(arith::MulFOp::create(b, x, factorVec), state,
                   {batch, head, f, lane(t)});
        }
      });
      for (int64_t t = 0; t < featureDim / lanes; ++t) {
        Value x = loadVec(sums, {batch, head, lane(t)});
        storeVec(arith::MulFOp::create(b, x, factorVec), sums,
                 {batch, head, lane(t)});
      }
    } else {
      columnSums = features(key, batch, head, c0, chunkKeys, s.phiK);
    }
    transposeKeyFeatures(s, chunkKeys);
    chunkOutputs(s, query, value, state, sums, batch, out, batch, head,
                 groups, c0, chunkQueries, chunkKeys);
    // The later chunks see this one through S and z.
    addToSums(sums, batch, head, columnSums);
    accumulateState(state, batch, head, s.phiK, value, batch, c0, chunkKeys);
    return SmallVector<Value>{keyMaximum};
  });
  func::ReturnOp::create(b);
  return fn;
}

func::FuncOp CpuLinearKernel::buildCausalChunkFunction(ModuleOp module,
                                                       StringRef prefix) {
  OpBuilder::InsertionGuard guard(b);
  Type indexType = b.getIndexType();
  func::FuncOp fn = createFunction(
      module, (prefix + "__attn_cpu_linear_causal_chunk").str(),
      {bufferType(op.getQuery()), bufferType(op.getKey()),
       bufferType(op.getValue()), stateType(), sumsType(),
       bufferType(op.getResult()), omegaTType(), indexType, indexType,
       indexType});
  Value query = fn.getArgument(0), key = fn.getArgument(1),
        value = fn.getArgument(2), state = fn.getArgument(3),
        sums = fn.getArgument(4), out = fn.getArgument(5),
        batch = fn.getArgument(7), head = fn.getArgument(8),
        chunkIndex = fn.getArgument(9);
  omegaT = fn.getArgument(6);
  Value groups = b.createOrFold<arith::DivUIOp>(dim(query, 1), dim(key, 1));
  Value queryLen = dim(query, 2), keyLen = dim(key, 2);
  CausalScratch s = causalScratch();
  Value c0 = mul(chunkIndex, index(kCausalChunk));
  auto [chunkQueries, chunkKeys] = chunkRows(c0, queryLen, keyLen);
  // S and z of the chunks before: slot c * B + batch after the prefix
  // sums; chunks past the keys read the total, slot keyChunks * B + batch.
  Value keyChunks =
      b.createOrFold<arith::CeilDivUIOp>(keyLen, index(kCausalChunk));
  Value slot = add(mul(b.createOrFold<arith::MinUIOp>(chunkIndex, keyChunks),
                       dim(key, 0)),
                   batch);
  features(key, batch, head, c0, chunkKeys, s.phiK);
  transposeKeyFeatures(s, chunkKeys);
  chunkOutputs(s, query, value, state, sums, slot, out, batch, head, groups,
               c0, chunkQueries, chunkKeys);
  func::ReturnOp::create(b);
  return fn;
}
