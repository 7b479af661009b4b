//===- CpuLinearKernel.cpp - feature maps, state, output, the calls -------===//
//
// The feature maps, the non-causal state and output functions and the
// calls that run them (CpuLinearKernel.h); the causal function is in
// CpuLinearKernelCausal.cpp.
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

bool CpuLinearKernel::covers(KernelizedOp op, int64_t lanes) {
  FeatureMap map = op.getFeatureMap();
  // Non-causal FAVOR+ runs as two softmax attentions (the decomposition).
  if (map == FeatureMap::favor && !op.getCausal())
    return false;
  if (map == FeatureMap::favor || map == FeatureMap::rfa) {
    int64_t m = cast<ShapedType>(op.getOmega().getType()).getDimSize(0);
    int64_t width = map == FeatureMap::rfa ? 2 * m : m;
    if (ShapedType::isDynamic(m) || m <= 0 || m % lanes != 0 ||
        width > kMaxHeadDim)
      return false;
  }
  for (Value operand : op->getOperands())
    if (!cast<ShapedType>(operand.getType()).getElementType().isF32())
      return false;
  int64_t d = cast<ShapedType>(op.getQuery().getType()).getDimSize(3);
  int64_t dv = cast<ShapedType>(op.getValue().getType()).getDimSize(3);
  return !ShapedType::isDynamic(d) && !ShapedType::isDynamic(dv) && d > 0 &&
         dv > 0 && d % lanes == 0 && dv % lanes == 0 && d <= kMaxHeadDim;
}

Value CpuLinearKernel::featureMap(Value x) {
  Value zero = vecConst(0);
  if (op.getFeatureMap() == FeatureMap::relu)
    return arith::MaximumFOp::create(b, x, zero);
  // elu(x) + 1: x + 1 above 0, exp(x) at or below.
  Value positive = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, x, zero);
  return arith::SelectOp::create(b, positive,
                                 arith::AddFOp::create(b, x, vecConst(1)),
                                 math::ExpOp::create(b, x));
}

SmallVector<std::pair<int64_t, int64_t>>
CpuLinearKernel::vectorChunks(int64_t total) const {
  int64_t widest = lanes >= 16 ? 4 : 2;
  SmallVector<std::pair<int64_t, int64_t>> chunks;
  for (int64_t first = 0; first < total; first += widest)
    chunks.push_back({first, std::min(widest, total - first)});
  return chunks;
}

SmallVector<Value> CpuLinearKernel::blockedUpdates(
    Value ub, ArrayRef<Value> init, int64_t rows, int64_t vectors,
    function_ref<Value(Value, int64_t)> vectorAt,
    function_ref<Value(Value, int64_t)> scalarAt) {
  return loop(index(0), ub, 1, init,
              [&](Value iv, ValueRange acc) {
                SmallVector<Value> operands, next(acc.begin(), acc.end());
                for (int64_t t = 0; t < vectors; ++t)
                  operands.push_back(vectorAt(iv, t));
                for (int64_t r = 0; r < rows; ++r) {
                  Value scalar = scalarAt(iv, r);
                  for (int64_t t = 0; t < vectors; ++t) {
                    Value &sum = next[r * vectors + t];
                    sum = vector::FMAOp::create(b, scalar, operands[t], sum);
                  }
                }
                return next;
              })
      .getResults();
}

void CpuLinearKernel::forRowBlocks(Value total, int64_t block,
                                     function_ref<void(Value, int64_t)> body) {
  Value start = index(0);
  Value whole = mul(b.createOrFold<arith::DivUIOp>(total, index(block)),
                    index(block));
  forEach(start, whole, block, [&](Value r0) { body(r0, block); });
  start = whole;
  // What is left is under `block` rows: at most one block of 4 and one of
  // 2 (when smaller than `block`), then single rows.
  for (int64_t size : {4, 2}) {
    if (size >= block)
      continue;
    Value fits = b.createOrFold<arith::CmpIOp>(arith::CmpIPredicate::uge,
                                               sub(total, start), index(size));
    buildIfElse(b, fits, [&] { body(start, size); }, [] {});
    start = b.createOrFold<arith::SelectOp>(fits, add(start, index(size)),
                                            start);
  }
  forEach(start, total, 1, [&](Value r) { body(r, 1); });
}

SmallVector<Value> CpuLinearKernel::writeFeatures(
    Value source, Value batch, Value head, Value r0, Value count, Value phi,
    function_ref<void(Value)> eachRow) {
  SmallVector<Value> zeros(featureDim / lanes, vecConst(0));
  return loop(index(0), count, 1, zeros,
              [&](Value j, ValueRange acc) {
                if (eachRow)
                  eachRow(j);
                SmallVector<Value> next;
                for (int64_t t = 0; t < headDim / lanes; ++t) {
                  Value features = featureMap(
                      loadVec(source, {batch, head, add(r0, j), lane(t)}));
                  storeVec(features, phi, {j, lane(t)});
                  next.push_back(arith::AddFOp::create(b, acc[t], features));
                }
                return next;
              })
      .getResults();
}

Value CpuLinearKernel::writeRandomFeatures(Value source, Value batch,
                                             Value head, Value r0, Value count,
                                             Value phi, Value runningMax,
                                             SmallVector<Value> &columnSums) {
  int64_t featureVectors = featureDim / lanes;
  double s = std::pow(double(headDim), -0.25);
  Value minusInf = vecConst(-INFINITY);
  // phi[i][f] = x_i . (s w_f), f < m: register blocks over rows and
  // features, a broadcast of x per row and dim (omegaT holds s W^T).
  for (auto [firstChunkVector, chunkVectors] :
       vectorChunks(projections / lanes)) {
    int64_t firstVector = firstChunkVector, vectors = chunkVectors;
    forRowBlocks(count, rowsFor(vectors), [&](Value i0, int64_t rows) {
      SmallVector<Value> acc(rows * vectors, vecConst(0));
      acc = blockedUpdates(
          index(headDim), acc, rows, vectors,
          [&](Value d, int64_t t) {
            return loadVec(omegaT, {d, lane(firstVector + t)});
          },
          [&](Value d, int64_t r) -> Value {
            return broadcastAt(source,
                               {batch, head, add(r0, add(i0, index(r))), d});
          });
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t t = 0; t < vectors; ++t)
          storeVec(acc[r * vectors + t], phi,
                   {add(i0, index(r)), lane(firstVector + t)});
    });
  }
  Value norm = vecConst(float(1.0 / std::sqrt(double(projections))));
  SmallVector<Value> zeros(featureVectors, vecConst(0));
  if (op.getFeatureMap() == FeatureMap::rfa) {
    // [sin(p), cos(p)] / sqrt(m): the sines over p, the cosines after.
    int64_t half = projections / lanes;
    scf::ForOp rowsLoop =
        loop(index(0), count, 1, zeros, [&](Value i, ValueRange sums) {
          SmallVector<Value> next(sums.begin(), sums.end());
          for (int64_t t = 0; t < half; ++t) {
            Value p = loadVec(phi, {i, lane(t)});
            Value sine =
                arith::MulFOp::create(b, math::SinOp::create(b, p), norm);
            Value cosine =
                arith::MulFOp::create(b, math::CosOp::create(b, p), norm);
            storeVec(sine, phi, {i, lane(t)});
            storeVec(cosine, phi, {i, lane(half + t)});
            next[t] = arith::AddFOp::create(b, next[t], sine);
            next[half + t] = arith::AddFOp::create(b, next[half + t], cosine);
          }
          return next;
        });
    columnSums.assign(rowsLoop.getResults().begin(),
                      rowsLoop.getResults().end());
    return Value();
  }
  // FAVOR+: t = phi - s^2 |x|^2 / 2 per row, and the maxima: per row for
  // queries (their factor cancels in the quotient), over all keys seen so
  // far for keys (S and z are kept at that scale).
  bool isKey = bool(runningMax);
  auto exponentiate = [&](Value i, Value maximum, ValueRange sums) {
    SmallVector<Value> next;
    Value shift = vector::BroadcastOp::create(b, vec, maximum);
    for (int64_t t = 0; t < featureVectors; ++t) {
      Value e = math::ExpOp::create(
          b, arith::SubFOp::create(b, loadVec(phi, {i, lane(t)}), shift));
      Value features = arith::MulFOp::create(b, e, norm);
      storeVec(features, phi, {i, lane(t)});
      next.push_back(arith::AddFOp::create(b, sums[t], features));
    }
    return next;
  };
  scf::ForOp rowsLoop = loop(
      index(0), count, 1, isKey ? ValueRange{minusInf} : ValueRange(zeros),
      [&](Value i, ValueRange carried) {
        Value square = vecConst(0);
        for (int64_t t = 0; t < headDim / lanes; ++t) {
          Value x = loadVec(source, {batch, head, add(r0, i), lane(t)});
          square = vector::FMAOp::create(b, x, x, square);
        }
        Value half = arith::MulFOp::create(
            b,
            vector::ReductionOp::create(b, vector::CombiningKind::ADD, square,
                                        arith::FastMathFlags::reassoc),
            arith::ConstantOp::create(b, b.getF32FloatAttr(float(s * s / 2))));
        Value halfVec = vector::BroadcastOp::create(b, vec, half);
        Value rowMax = minusInf;
        for (int64_t t = 0; t < featureVectors; ++t) {
          Value exponent =
              arith::SubFOp::create(b, loadVec(phi, {i, lane(t)}), halfVec);
          storeVec(exponent, phi, {i, lane(t)});
          rowMax = arith::MaximumFOp::create(b, rowMax, exponent);
        }
        if (isKey)
          return SmallVector<Value>{
              arith::MaximumFOp::create(b, carried[0], rowMax)};
        Value maximum = vector::ReductionOp::create(
            b, vector::CombiningKind::MAXIMUMF, rowMax);
        return exponentiate(i, maximum, carried);
      });
  if (!isKey) {
    columnSums.assign(rowsLoop.getResults().begin(),
                      rowsLoop.getResults().end());
    return Value();
  }
  Value maximum = arith::MaximumFOp::create(
      b, runningMax,
      vector::ReductionOp::create(b, vector::CombiningKind::MAXIMUMF,
                                  rowsLoop.getResult(0)));
  scf::ForOp sumsLoop =
      loop(index(0), count, 1, zeros, [&](Value i, ValueRange sums) {
        return exponentiate(i, maximum, sums);
      });
  columnSums.assign(sumsLoop.getResults().begin(),
                    sumsLoop.getResults().end());
  return maximum;
}

SmallVector<Value> CpuLinearKernel::features(Value source, Value batch,
                                               Value head, Value r0,
                                               Value count, Value phi,
                                               function_ref<void(Value)> eachRow) {
  if (!projections)
    return writeFeatures(source, batch, head, r0, count, phi, eachRow);
  // The random maps read their rows in their products: the prefetches go
  // first, in a loop of their own.
  if (eachRow)
    forEach(index(0), count, 1, eachRow);
  SmallVector<Value> columnSums;
  writeRandomFeatures(source, batch, head, r0, count, phi, Value(),
                      columnSums);
  return columnSums;
}

void CpuLinearKernel::addToSums(Value sums, Value batch, Value head,
                                  ArrayRef<Value> columnSums) {
  for (int64_t t = 0; t < featureDim / lanes; ++t) {
    Value sum = loadVec(sums, {batch, head, lane(t)});
    storeVec(arith::AddFOp::create(b, sum, columnSums[t]), sums,
             {batch, head, lane(t)});
  }
}

void CpuLinearKernel::accumulateState(Value state, Value slot, Value head,
                                        Value phi, Value value, Value batch,
                                        Value j0, Value count) {
  for (auto [firstChunkVector, chunkVectors] : valueChunks()) {
    int64_t firstVector = firstChunkVector, vectors = chunkVectors;
    forRowBlocks(index(featureDim), rowsFor(vectors), [&](Value f0,
                                                        int64_t rows) {
      auto column = [&](int64_t t) { return lane(firstVector + t); };
      SmallVector<Value> acc;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t t = 0; t < vectors; ++t)
          acc.push_back(
              loadVec(state, {slot, head, add(f0, index(r)), column(t)}));
      acc = blockedUpdates(
          count, acc, rows, vectors,
          [&](Value j, int64_t t) {
            return loadVec(value, {batch, head, add(j0, j), column(t)});
          },
          [&](Value j, int64_t r) -> Value {
            return broadcastAt(phi, {j, add(f0, index(r))});
          });
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t t = 0; t < vectors; ++t)
          storeVec(acc[r * vectors + t], state,
                   {slot, head, add(f0, index(r)), column(t)});
    });
  }
}

Value CpuLinearKernel::numKeySplits(ModuleOp module, Value calls,
                                      Value keys) {
  Value byKeys = b.createOrFold<arith::DivUIOp>(
      b.createOrFold<arith::CeilDivUIOp>(keys, index(kKeyTile)),
      index(kMinSplitTiles));
  // Too few keys for two ranges: no split, whatever the threads.
  if (matchPattern(byKeys, m_Zero()) || matchPattern(byKeys, m_One()))
    return index(1);
  Value wanted =
      b.createOrFold<arith::CeilDivUIOp>(buildOmpMaxThreads(b, module), calls);
  return arith::MaxUIOp::create(
      b, b.createOrFold<arith::MinUIOp>(wanted, byKeys), index(1));
}

void CpuLinearKernel::zeroState(Value state, Value sums, Value batch,
                                  Value head) {
  forEach(index(0), index(featureDim), 1, [&](Value f) {
    for (int64_t t = 0; t < valueDim / lanes; ++t)
      storeVec(vecConst(0), state, {batch, head, f, lane(t)});
  });
  for (int64_t t = 0; t < featureDim / lanes; ++t)
    storeVec(vecConst(0), sums, {batch, head, lane(t)});
}

Value CpuLinearKernel::dotWithSums(Value phi, Value row,
                                     ArrayRef<Value> z) {
  Value dot = vecConst(0);
  for (int64_t t = 0; t < featureDim / lanes; ++t)
    dot = vector::FMAOp::create(b, loadVec(phi, {row, lane(t)}), z[t], dot);
  return vector::ReductionOp::create(b, vector::CombiningKind::ADD, dot,
                                     arith::FastMathFlags::reassoc);
}

void CpuLinearKernel::storeQuotients(ArrayRef<Value> acc, int64_t rows,
                                       int64_t vectors, Value denominators,
                                       Value r0, Value out, Value batch,
                                       Value queryHead, Value i0,
                                       int64_t firstVector) {
  Value zero = arith::ConstantOp::create(b, b.getF32FloatAttr(0));
  Value one = arith::ConstantOp::create(b, b.getF32FloatAttr(1));
  for (int64_t r = 0; r < rows; ++r) {
    Value row = add(r0, index(r));
    Value den = memref::LoadOp::create(b, denominators, row);
    // A zero denominator gives 0 even where the numerator is not finite
    // (the op's semantics).
    Value isZero = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, den,
                                         zero);
    Value scale = vector::BroadcastOp::create(
        b, vec, arith::DivFOp::create(b, one, den));
    for (int64_t t = 0; t < vectors; ++t) {
      Value scaled = arith::MulFOp::create(b, acc[r * vectors + t], scale);
      storeVec(arith::SelectOp::create(b, isZero, vecConst(0), scaled), out,
               {batch, queryHead, add(i0, row), lane(firstVector + t)});
    }
  }
}

func::FuncOp CpuLinearKernel::createFunction(ModuleOp module, StringRef name,
                                               ArrayRef<Type> argTypes) {
  auto fn = func::FuncOp::create(b, name, b.getFunctionType(argTypes, {}));
  fn.setPrivate();
  SymbolTable(module).insert(fn); // uniquifies the name
  b.setInsertionPointToStart(fn.addEntryBlock());
  return fn;
}

func::FuncOp CpuLinearKernel::buildStateFunction(ModuleOp module,
                                                   StringRef prefix) {
  OpBuilder::InsertionGuard guard(b);
  Type indexType = b.getIndexType();
  func::FuncOp fn = createFunction(
      module, (prefix + "__attn_cpu_linear_state").str(),
      {bufferType(op.getKey()), bufferType(op.getValue()), stateType(),
       sumsType(), omegaTType(), indexType, indexType, indexType, indexType});
  Value key = fn.getArgument(0), value = fn.getArgument(1),
        state = fn.getArgument(2), sums = fn.getArgument(3),
        splits = fn.getArgument(5), batch = fn.getArgument(6),
        head = fn.getArgument(7), split = fn.getArgument(8);
  omegaT = fn.getArgument(4);
  // Range `split` of `splits` (whole key tiles, the last one clipped)
  // into slot split * B + batch of S and z.
  Value keyLen = dim(key, 2);
  Value perSplit = mul(
      b.createOrFold<arith::CeilDivUIOp>(
          b.createOrFold<arith::CeilDivUIOp>(keyLen, index(kKeyTile)),
          splits),
      index(kKeyTile));
  Value keyBegin = b.createOrFold<arith::MinUIOp>(mul(split, perSplit), keyLen);
  Value keyEnd =
      b.createOrFold<arith::MinUIOp>(add(keyBegin, perSplit), keyLen);
  Value slot = add(mul(split, dim(key, 0)), batch);
  zeroState(state, sums, slot, head);
  Value phi = scratch({kKeyTile, featureDim});
  forEach(keyBegin, keyEnd, kKeyTile, [&](Value j0) {
    Value tileKeys = b.createOrFold<arith::MinUIOp>(index(kKeyTile),
                                                    sub(keyEnd, j0));
    SmallVector<Value> columnSums = features(
        key, batch, head, j0, tileKeys, phi, [&](Value j) {
          // The next tile's value rows and the key rows of the tile after
          // it are asked for here, a tile before their use (the loads
          // would wait on memory otherwise: K and V are read once, and
          // the products need about the machine's bandwidth). Measured at
          // 16384 keys: one tile closer 5 % slower; spread over the
          // products, a line per block and key, no faster.
          prefetchRow(value, batch, head, add(add(j0, j), index(kKeyTile)),
                      keyLen, valueDim);
          prefetchRow(key, batch, head, add(add(j0, j), index(2 * kKeyTile)),
                      keyLen, headDim);
        });
    addToSums(sums, slot, head, columnSums);
    accumulateState(state, slot, head, phi, value, batch, j0, tileKeys);
  });
  func::ReturnOp::create(b);
  return fn;
}

func::FuncOp CpuLinearKernel::buildOutputFunction(ModuleOp module,
                                                    StringRef prefix) {
  OpBuilder::InsertionGuard guard(b);
  Type indexType = b.getIndexType();
  func::FuncOp fn = createFunction(
      module, (prefix + "__attn_cpu_linear_output").str(),
      {bufferType(op.getQuery()), stateType(), sumsType(),
       bufferType(op.getResult()), omegaTType(), indexType, indexType,
       indexType});
  Value query = fn.getArgument(0), state = fn.getArgument(1),
        sums = fn.getArgument(2), out = fn.getArgument(3),
        batch = fn.getArgument(5), queryHead = fn.getArgument(6),
        block = fn.getArgument(7);
  omegaT = fn.getArgument(4);
  Value groups = b.createOrFold<arith::DivUIOp>(dim(query, 1), dim(state, 1));
  Value head = b.createOrFold<arith::DivUIOp>(queryHead, groups);
  Value i0 = mul(block, index(kQueryBlock));
  Value queryLen = dim(query, 2);
  Value rows =
      b.createOrFold<arith::MinUIOp>(index(kQueryBlock), sub(queryLen, i0));

  // phi of the block's rows, and per row phi(q_i) . z.
  Value phi = scratch({kQueryBlock, featureDim});
  Value denominators = scratch({kQueryBlock});
  SmallVector<Value> z;
  for (int64_t t = 0; t < featureDim / lanes; ++t)
    z.push_back(loadVec(sums, {batch, head, lane(t)}));
  features(query, batch, queryHead, i0, rows, phi, [&](Value i) {
    // The next block's rows (on this thread next when the forall's
    // iterations are split in ranges) are asked for a block ahead.
    prefetchRow(query, batch, queryHead, add(add(i0, i), index(kQueryBlock)),
                queryLen, headDim);
  });
  forEach(index(0), rows, 1, [&](Value i) {
    memref::StoreOp::create(b, dotWithSums(phi, i, z), denominators,
                            ValueRange{i});
  });

  // O = phi S, row blocks divided by their denominators as they are
  // stored.
  for (auto [firstChunkVector, chunkVectors] : valueChunks()) {
    int64_t firstVector = firstChunkVector, vectors = chunkVectors;
    forRowBlocks(rows, rowsFor(vectors), [&](Value r0, int64_t blockRows) {
      SmallVector<Value> acc(blockRows * vectors, vecConst(0));
      acc = blockedUpdates(
          index(featureDim), acc, blockRows, vectors,
          [&](Value f, int64_t t) {
            return loadVec(state, {batch, head, f, lane(firstVector + t)});
          },
          [&](Value f, int64_t r) -> Value {
            return broadcastAt(phi, {add(r0, index(r)), f});
          });
      storeQuotients(acc, blockRows, vectors, denominators, r0, out, batch,
                     queryHead, i0, firstVector);
    });
  }
  func::ReturnOp::create(b);
  return fn;
}

Value CpuLinearKernel::build(ModuleOp module) {
  auto parent = op->getParentOfType<func::FuncOp>();
  func::FuncOp stateFn, outputFn, causalFn, chunkFn;
  // FAVOR+'s running key maximum keeps its causal form sequential.
  bool parallelChunks =
      op.getCausal() && op.getFeatureMap() != FeatureMap::favor;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(parent);
    // Named after the caller so that artifacts linked together do not clash.
    if (op.getCausal())
      causalFn = buildCausalFunction(module, parent.getSymName());
    if (!op.getCausal() || parallelChunks)
      stateFn = buildStateFunction(module, parent.getSymName());
    if (!op.getCausal())
      outputFn = buildOutputFunction(module, parent.getSymName());
    if (parallelChunks)
      chunkFn = buildCausalChunkFunction(module, parent.getSymName());
  }
  auto toBuffer = [&](Value tensor) -> Value {
    return bufferization::ToBufferOp::create(b, bufferType(tensor), tensor,
                                             /*read_only=*/true);
  };
  Value query = toBuffer(op.getQuery()), key = toBuffer(op.getKey()),
        value = toBuffer(op.getValue());
  Value batch = dim(key, 0), keyHeads = dim(key, 1);
  auto align = b.getI64IntegerAttr(64);
  // Non-causal: with fewer (batch, key/value head) pairs than threads, the
  // keys are split into ranges whose S and z (slots range * B + batch)
  // are summed into slot batch afterwards. Causal, likewise: each chunk's
  // S and z (slot chunk * B + batch), their exclusive prefix sums, the
  // total in slot keyChunks * B + batch, then the chunks' outputs in
  // parallel; else one sequential call per pair.
  Value keyLen = dim(key, 2), calls = mul(batch, keyHeads);
  Value splits = index(1), keyChunks, chunksInParallel;
  if (!op.getCausal()) {
    splits = numKeySplits(module, calls, keyLen);
  } else if (parallelChunks) {
    keyChunks = b.createOrFold<arith::CeilDivUIOp>(keyLen, index(kCausalChunk));
    // The chunk states take (chunks + 1) B Hkv (m Dv + m) floats: at most
    // kMaxChunkStateBytes (else the sequential form, which needs one).
    Value stateBytes = mul(mul(add(keyChunks, index(1)), calls),
                           index((featureDim * valueDim + featureDim) * 4));
    Value fits = b.createOrFold<arith::CmpIOp>(
        arith::CmpIPredicate::ule, stateBytes, index(kMaxChunkStateBytes));
    Value manyChunks = b.createOrFold<arith::CmpIOp>(
        arith::CmpIPredicate::uge, keyChunks, index(2));
    if (matchPattern(fits, m_Zero()) || matchPattern(manyChunks, m_Zero())) {
      // Sequential whatever the threads: the parallel form's functions go.
      chunkFn.erase();
      stateFn.erase();
      chunkFn = stateFn = func::FuncOp();
    } else {
      Value fewPairs = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                             calls,
                                             buildOmpMaxThreads(b, module));
      chunksInParallel = arith::AndIOp::create(
          b, arith::AndIOp::create(b, fewPairs, manyChunks), fits);
      splits = arith::SelectOp::create(b, chunksInParallel,
                                       add(keyChunks, index(1)), index(1));
    }
  }
  Value slots = mul(splits, batch);
  Value state = memref::AllocOp::create(b, stateType(),
                                        ValueRange{slots, keyHeads}, align);
  Value sums = memref::AllocOp::create(b, sumsType(),
                                       ValueRange{slots, keyHeads}, align);
  auto resultType = cast<RankedTensorType>(op.getType());
  SmallVector<Value> resultSizes;
  for (int64_t d = 0; d < 4; ++d)
    if (resultType.isDynamicDim(d))
      resultSizes.push_back(d == 3 ? dim(value, 3) : dim(query, d));
  Value out = memref::AllocOp::create(
      b, MemRefType::get(resultType.getShape(), f32), resultSizes, align);

  auto callInParallel = [&](func::FuncOp fn, ArrayRef<Value> counts,
                            ArrayRef<Value> operands) {
    auto forall = scf::ForallOp::create(b, getAsOpFoldResult(counts),
                                        ValueRange{}, std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    SmallVector<Value> args(operands);
    llvm::append_range(args, forall.getInductionVars());
    func::CallOp::create(b, fn, args);
  };
  // The random maps' projections as s W^T [D, m], the layout the feature
  // products load vectors of features from (written once, serially: m D
  // floats; [D, 0] for the element-wise maps).
  Value scaledOmegaT = memref::AllocOp::create(b, omegaTType(), align);
  if (projections) {
    Value omega = toBuffer(op.getOmega());
    Value s = arith::ConstantOp::create(
        b, b.getF32FloatAttr(float(std::pow(double(headDim), -0.25))));
    forEach(index(0), index(projections), 1, [&](Value f) {
      forEach(index(0), index(headDim), 1, [&](Value d) {
        Value w = memref::LoadOp::create(b, omega, ValueRange{f, d});
        memref::StoreOp::create(b, arith::MulFOp::create(b, w, s),
                                scaledOmegaT, ValueRange{d, f});
      });
    });
  }
  auto sequential = [&] {
    callInParallel(causalFn, {batch, keyHeads},
                   {query, key, value, state, sums, out, scaledOmegaT});
  };
  auto chunksAtOnce = [&] {
    callInParallel(stateFn, {batch, keyHeads, keyChunks},
                   {key, value, state, sums, scaledOmegaT, keyChunks});
    // Exclusive prefix sums over the chunks, the running sum in the last
    // slot.
    auto prefix = scf::ForallOp::create(
        b, getAsOpFoldResult(ValueRange{batch, keyHeads}), ValueRange{},
        std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(prefix.getBody());
    Value bi = prefix.getInductionVars()[0], h = prefix.getInductionVars()[1];
    Value total = add(mul(keyChunks, batch), bi);
    zeroState(state, sums, total, h);
    forEach(index(0), keyChunks, 1, [&](Value c) {
      Value slot = add(mul(c, batch), bi);
      auto shift = [&](Value buffer, ValueRange at, ValueRange totalAt) {
        Value chunkSum = loadVec(buffer, at);
        Value before = loadVec(buffer, totalAt);
        storeVec(before, buffer, at);
        storeVec(arith::AddFOp::create(b, before, chunkSum), buffer, totalAt);
      };
      forEach(index(0), index(featureDim), 1, [&](Value f) {
        for (int64_t t = 0; t < valueDim / lanes; ++t)
          shift(state, {slot, h, f, lane(t)}, {total, h, f, lane(t)});
      });
      for (int64_t t = 0; t < featureDim / lanes; ++t)
        shift(sums, {slot, h, lane(t)}, {total, h, lane(t)});
    });
    b.setInsertionPointAfter(prefix);
    Value queryChunks =
        b.createOrFold<arith::CeilDivUIOp>(dim(query, 2), index(kCausalChunk));
    callInParallel(chunkFn, {batch, keyHeads, queryChunks},
                   {query, key, value, state, sums, out, scaledOmegaT});
  };
  if (causalFn) {
    if (chunkFn)
      buildIfElse(b, chunksInParallel, chunksAtOnce, sequential);
    else
      sequential();
    return bufferization::ToTensorOp::create(b, resultType, out,
                                             /*restrict=*/b.getUnitAttr(),
                                             /*writable=*/b.getUnitAttr());
  }
  callInParallel(stateFn, {batch, keyHeads, splits},
                 {key, value, state, sums, scaledOmegaT, splits});
  if (!matchPattern(splits, m_One())) {
    auto merge = scf::ForallOp::create(
        b, getAsOpFoldResult(ValueRange{batch, keyHeads}), ValueRange{},
        std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(merge.getBody());
    Value bi = merge.getInductionVars()[0], h = merge.getInductionVars()[1];
    forEach(index(1), splits, 1, [&](Value s) {
      Value from = add(mul(s, batch), bi);
      forEach(index(0), index(featureDim), 1, [&](Value f) {
        for (int64_t t = 0; t < valueDim / lanes; ++t) {
          Value sum = arith::AddFOp::create(
              b, loadVec(state, {bi, h, f, lane(t)}),
              loadVec(state, {from, h, f, lane(t)}));
          storeVec(sum, state, {bi, h, f, lane(t)});
        }
      });
      for (int64_t t = 0; t < featureDim / lanes; ++t) {
        Value sum = arith::AddFOp::create(b, loadVec(sums, {bi, h, lane(t)}),
                                          loadVec(sums, {from, h, lane(t)}));
        storeVec(sum, sums, {bi, h, lane(t)});
      }
    });
  }
  Value queryBlocks = b.createOrFold<arith::CeilDivUIOp>(dim(query, 2),
                                                         index(kQueryBlock));
  callInParallel(outputFn, {dim(query, 0), dim(query, 1), queryBlocks},
                 {query, state, sums, out, scaledOmegaT});
  return bufferization::ToTensorOp::create(b, resultType, out,
                                           /*restrict=*/b.getUnitAttr(),
                                           /*writable=*/b.getUnitAttr());
}
