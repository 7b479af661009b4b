//===- AttnToCpuKernels.cpp - vectorized flash attention for CPUs ---------===//
//
// Per (batch b, query head h, tile of TQ queries starting at i0; TQ = 64 for
// AVX-512, 24 for AVX2):
//
//   qT[c][q]  = scale * Q[b, h, i0 + q, c]          (zero for padded q)
//   m = -inf, l = 0, accT = 0
//   for each key tile [j0, j0 + tk), unless the pattern empties it:
//     sT[r][q] = sum_c K[j0 + r][c] qT[c][q]        (register blocks)
//     sT = -inf where the pattern drops (only in partial tiles)
//     m' = max(m, max_r sT[r]); alpha = exp(m - m'); sT = exp(sT - m')
//     l = alpha l + sum_r sT[r];  accT[c] = alpha accT[c] + sum_r V[j0+r][c] sT[r]
//   O[b, h, i0 + q, c] = accT[c][q] / l[q]          (0 when l[q] == 0)
//
// Every row-wise softmax quantity of the TQ queries is a few whole vectors,
// so max, exp and sums are vertical vector operations. The register blocks
// are sized to the vector register file (see Blocking).
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/MaskCodegen.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/ScoreModCodegen.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNTOCPUKERNELS
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {


/// Register blocking for a vector ISA: `lanes` f32 per register,
/// `queryVectors` registers per row of the query tile and `rows` rows per
/// block, so that rows * queryVectors accumulators, queryVectors operands
/// and one broadcast fit the register file: AVX-512 6 x 4 (24 + 4 + 1 of 32
/// zmm), AVX2 4 x 3 (12 + 3 + 1 of 16 ymm). On a Zen 3 the AVX2 4 x 3 block
/// ran 10-35 % faster than 6 x 2, which needs 8 loads per 12 FMAs instead
/// of 7 (bench/RESULTS.md).
struct Blocking {
  int64_t lanes, queryVectors, rows;
  int64_t queryTile() const { return lanes * queryVectors; }
  static Blocking forVectorBits(int64_t bits) {
    return bits >= 512 ? Blocking{16, 4, 6} : Blocking{8, 3, 4};
  }
};

/// Whether the fast path covers `op`.
bool isSupported(AttentionOp op) {
  auto type = cast<RankedTensorType>(op.getQuery().getType());
  if (!type.getElementType().isF32() || op.getMask() || op.getBias() ||
      op.getRelTable() || op.getQSegments() || !op.getScore().empty())
    return false;
  std::string reason;
  if (!areScoreModsVectorizable(op.getModsAttr()) ||
      !isScoreModCodegenSupported(op.getModsAttr(), type.getDimSize(1),
                                  reason))
    return false;
  return !op.getPatternAttr() ||
         isMaskCodegenSupported(op.getPatternAttr(), op.getMaskShape(),
                                /*withTensors=*/false, reason);
}

class CpuFlashKernel {
public:
  CpuFlashKernel(AttentionOp op, int64_t keyTile, Blocking blocking)
      : op(op), b(op.getLoc(), op), keyTile(keyTile),
        kLanes(blocking.lanes), kQueryVectors(blocking.queryVectors),
        kRowBlock(blocking.rows),
        kQueryTile(blocking.queryTile()), f32(b.getF32Type()),
        vec(VectorType::get({kLanes}, f32)) {}

  /// Emits the kernel; returns the result tensor.
  Value build(ModuleOp module);

private:
  func::FuncOp buildTileFunction(ModuleOp module);
  void setUpSizes(Value queryBuf, Value keyBuf, Value valueBuf);
  Value index(int64_t v) { return b.create<arith::ConstantIndexOp>(v); }
  Value f32Const(float v) {
    return b.create<arith::ConstantOp>(b.getF32FloatAttr(v));
  }
  Value vecConst(float v) {
    return b.create<arith::ConstantOp>(
        DenseElementsAttr::get(vec, b.getF32FloatAttr(v)));
  }
  Value add(Value x, Value y) { return b.create<arith::AddIOp>(x, y); }
  Value mul(Value x, Value y) { return b.create<arith::MulIOp>(x, y); }
  Value sub(Value x, Value y) { return b.create<arith::SubIOp>(x, y); }
  Value minIndex(Value x, Value y) { return b.create<arith::MinSIOp>(x, y); }
  Value dim(Value memref, int64_t d) {
    return b.createOrFold<memref::DimOp>(memref, d);
  }
  Value loadVec(Value memref, ValueRange indices) {
    return b.create<vector::LoadOp>(vec, memref, indices);
  }
  void storeVec(Value value, Value memref, ValueRange indices) {
    b.create<vector::StoreOp>(value, memref, indices);
  }
  /// Lane offset of query vector t.
  Value lane(int64_t t) { return index(t * kLanes); }

  /// for (iv = lb; iv < ub; iv += step) body(iv, iterArgs) -> results.
  scf::ForOp loop(Value lb, Value ub, int64_t step, ValueRange init,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body);

  /// Register-blocked rank-1 updates, the core of both tile products: for
  /// iv in [0, ub), acc[g][t] += broadcast(scalarAt(iv, g)) * vectorAt(iv, t)
  /// for g < rows and t < kQueryVectors, acc carried in registers.
  SmallVector<Value> blockedUpdates(Value ub, ArrayRef<Value> init,
                                    int64_t rows,
                                    function_ref<Value(Value, int64_t)> vectorAt,
                                    function_ref<Value(Value, int64_t)> scalarAt);
  /// body(start, rows) over [0, total) in blocks of kRowBlock rows, then the
  /// remaining rows one by one.
  void forRowBlocks(Value total, function_ref<void(Value, int64_t)> body);

  void packQueries(Value qT, Value tq);
  void computeScores(Value sT, Value qT, Value j0, Value tk);
  void applyMask(Value sT, Value j0, Value tk);
  /// The op's score mods on every score of the tile, lane-wise.
  void applyMods(Value sT, Value j0, Value tk);
  /// Query positions i0 + t * lanes + [0, lanes) as a vector of index.
  Value queryPositions(int64_t t);
  Value splatIndex(Value v) {
    return b.create<vector::BroadcastOp>(
        VectorType::get({kLanes}, b.getIndexType()), v);
  }
  void updateSoftmaxAndAccumulate(Value sT, Value m, Value l, Value accT,
                                  Value j0, Value tk);
  void storeOutput(Value accT, Value l, Value tq);

  AttentionOp op;
  ImplicitLocOpBuilder b;
  int64_t keyTile;
  const int64_t kLanes, kQueryVectors, kRowBlock, kQueryTile;
  Type f32;
  VectorType vec;

  // Values of the tile function being built.
  MaskAttrInterface pattern;
  Value query, key, value, out;
  Value queryLen, headDim, valueDim, keyLen, delta, scale;
  Value batchIv, headIv, kvHead, i0;
};

scf::ForOp
CpuFlashKernel::loop(Value lb, Value ub, int64_t step, ValueRange init,
                     function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto forOp = b.create<scf::ForOp>(lb, ub, index(step), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forOp.getBody());
  SmallVector<Value> results =
      body(forOp.getInductionVar(), forOp.getRegionIterArgs());
  if (forOp.getBody()->empty() ||
      !forOp.getBody()->back().hasTrait<OpTrait::IsTerminator>())
    b.create<scf::YieldOp>(results);
  else
    forOp.getBody()->back().setOperands(results);
  return forOp;
}

void CpuFlashKernel::packQueries(Value qT, Value tq) {
  Value zero = vecConst(0.0f);
  loop(index(0), headDim, 1, {}, [&](Value c, ValueRange) {
    for (int64_t t = 0; t < kQueryVectors; ++t)
      storeVec(zero, qT, {c, lane(t)});
    return SmallVector<Value>{};
  });
  loop(index(0), tq, 1, {}, [&](Value q, ValueRange) {
    Value row = add(i0, q);
    loop(index(0), headDim, 1, {}, [&](Value c, ValueRange) {
      Value x = b.create<memref::LoadOp>(query,
                                         ValueRange{batchIv, headIv, row, c});
      b.create<memref::StoreOp>(b.create<arith::MulFOp>(x, scale), qT,
                                ValueRange{c, q});
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
}

SmallVector<Value> CpuFlashKernel::blockedUpdates(
    Value ub, ArrayRef<Value> init, int64_t rows,
    function_ref<Value(Value, int64_t)> vectorAt,
    function_ref<Value(Value, int64_t)> scalarAt) {
  scf::ForOp updates =
      loop(index(0), ub, 1, init, [&](Value iv, ValueRange acc) {
        SmallVector<Value> vectors;
        for (int64_t t = 0; t < kQueryVectors; ++t)
          vectors.push_back(vectorAt(iv, t));
        SmallVector<Value> next(acc.begin(), acc.end());
        for (int64_t g = 0; g < rows; ++g) {
          Value scalar =
              b.create<vector::BroadcastOp>(vec, scalarAt(iv, g));
          for (int64_t t = 0; t < kQueryVectors; ++t)
            next[g * kQueryVectors + t] = b.create<vector::FMAOp>(
                scalar, vectors[t], next[g * kQueryVectors + t]);
        }
        return next;
      });
  return updates.getResults();
}

void CpuFlashKernel::forRowBlocks(
    Value total, function_ref<void(Value, int64_t)> body) {
  Value blocked = mul(b.create<arith::DivUIOp>(total, index(kRowBlock)),
                      index(kRowBlock));
  loop(index(0), blocked, kRowBlock, {}, [&](Value start, ValueRange) {
    body(start, kRowBlock);
    return SmallVector<Value>{};
  });
  loop(blocked, total, 1, {}, [&](Value start, ValueRange) {
    body(start, 1);
    return SmallVector<Value>{};
  });
}

void CpuFlashKernel::computeScores(Value sT, Value qT, Value j0, Value tk) {
  // sT[r0 + g] = sum_c K[j0 + r0 + g][c] qT[c], rows of K in blocks.
  forRowBlocks(tk, [&](Value r0, int64_t rows) {
    SmallVector<Value> zeros(rows * kQueryVectors, vecConst(0.0f));
    SmallVector<Value> dots = blockedUpdates(
        headDim, zeros, rows,
        [&](Value c, int64_t t) { return loadVec(qT, {c, lane(t)}); },
        [&](Value c, int64_t g) -> Value {
          Value row = add(add(j0, r0), index(g));
          return b.create<memref::LoadOp>(
              key, ValueRange{batchIv, kvHead, row, c});
        });
    for (int64_t g = 0; g < rows; ++g)
      for (int64_t t = 0; t < kQueryVectors; ++t)
        storeVec(dots[g * kQueryVectors + t], sT,
                 {add(r0, index(g)), lane(t)});
  });
}

Value CpuFlashKernel::queryPositions(int64_t t) {
  SmallVector<int64_t> iota(kLanes);
  for (int64_t n = 0; n < kLanes; ++n)
    iota[n] = t * kLanes + n;
  Value offsets = b.create<arith::ConstantOp>(DenseElementsAttr::get(
      VectorType::get({kLanes}, b.getIndexType()), ArrayRef<int64_t>(iota)));
  return b.create<arith::AddIOp>(splatIndex(i0), offsets);
}

void CpuFlashKernel::applyMask(Value sT, Value j0, Value tk) {
  // The pattern is evaluated for a whole vector of queries at once.
  MaskContext context;
  context.delta = splatIndex(delta);
  Value negInf = vecConst(-INFINITY);
  loop(index(0), tk, 1, {}, [&](Value r, ValueRange) {
    Value key = splatIndex(add(j0, r));
    for (int64_t t = 0; t < kQueryVectors; ++t) {
      Value kept = emitElementMask(b, b.getLoc(), pattern, queryPositions(t),
                                   key, context);
      Value s = loadVec(sT, {r, lane(t)});
      storeVec(b.create<arith::SelectOp>(kept, s, negInf), sT, {r, lane(t)});
    }
    return SmallVector<Value>{};
  });
}

void CpuFlashKernel::applyMods(Value sT, Value j0, Value tk) {
  ArrayAttr mods = op.getModsAttr();
  int64_t numHeads =
      cast<RankedTensorType>(op.getQuery().getType()).getDimSize(1);
  Value deltaLanes = splatIndex(delta);
  loop(index(0), tk, 1, {}, [&](Value r, ValueRange) {
    Value key = splatIndex(add(j0, r));
    for (int64_t t = 0; t < kQueryVectors; ++t) {
      // r = j - (i + delta) for each query lane.
      Value distance = b.create<arith::SubIOp>(
          key, b.create<arith::AddIOp>(queryPositions(t), deltaLanes));
      Value x = emitScoreMods(b, b.getLoc(), mods, loadVec(sT, {r, lane(t)}),
                              distance, headIv, Value(), numHeads);
      storeVec(x, sT, {r, lane(t)});
    }
    return SmallVector<Value>{};
  });
}

void CpuFlashKernel::updateSoftmaxAndAccumulate(Value sT, Value m, Value l,
                                                Value accT, Value j0,
                                                Value tk) {
  Value negInf = vecConst(-INFINITY), zero = vecConst(0.0f);
  auto isNegInf = [&](Value x) {
    return b.create<arith::CmpFOp>(arith::CmpFPredicate::OEQ, x, negInf);
  };
  // exp(x - shift) with exact zeros for x = -inf (dropped scores).
  auto expShifted = [&](Value x, Value shift) {
    Value e = b.create<math::ExpOp>(b.create<arith::SubFOp>(x, shift));
    return b.create<arith::SelectOp>(isNegInf(x), zero, e);
  };

  SmallVector<Value> mOld, mSafe, alpha;
  for (int64_t t = 0; t < kQueryVectors; ++t)
    mOld.push_back(loadVec(m, {lane(t)}));
  scf::ForOp maxLoop = loop(index(0), tk, 1, mOld, [&](Value r, ValueRange mx) {
    SmallVector<Value> next;
    for (int64_t t = 0; t < kQueryVectors; ++t)
      next.push_back(
          b.create<arith::MaximumFOp>(mx[t], loadVec(sT, {r, lane(t)})));
    return next;
  });
  for (int64_t t = 0; t < kQueryVectors; ++t) {
    Value mNew = maxLoop.getResult(t);
    // A max of -inf means nothing kept yet: subtract 0 instead.
    mSafe.push_back(b.create<arith::SelectOp>(isNegInf(mNew), zero, mNew));
    alpha.push_back(expShifted(mOld[t], mSafe[t]));
    storeVec(mNew, m, {lane(t)});
  }

  SmallVector<Value> zeros(kQueryVectors, zero);
  scf::ForOp sumLoop = loop(index(0), tk, 1, zeros, [&](Value r, ValueRange s) {
    SmallVector<Value> next;
    for (int64_t t = 0; t < kQueryVectors; ++t) {
      Value p = expShifted(loadVec(sT, {r, lane(t)}), mSafe[t]);
      storeVec(p, sT, {r, lane(t)});
      next.push_back(b.create<arith::AddFOp>(s[t], p));
    }
    return next;
  });
  for (int64_t t = 0; t < kQueryVectors; ++t) {
    Value lOld = loadVec(l, {lane(t)});
    storeVec(b.create<vector::FMAOp>(lOld, alpha[t], sumLoop.getResult(t)), l,
             {lane(t)});
  }

  // accT[c0 + g] = alpha accT[c0 + g] + sum_r V[j0 + r][c0 + g] P^T[r],
  // columns of V in blocks.
  forRowBlocks(valueDim, [&](Value c0, int64_t cols) {
    SmallVector<Value> scaled;
    for (int64_t g = 0; g < cols; ++g)
      for (int64_t t = 0; t < kQueryVectors; ++t)
        scaled.push_back(b.create<arith::MulFOp>(
            loadVec(accT, {add(c0, index(g)), lane(t)}), alpha[t]));
    SmallVector<Value> products = blockedUpdates(
        tk, scaled, cols,
        [&](Value r, int64_t t) { return loadVec(sT, {r, lane(t)}); },
        [&](Value r, int64_t g) -> Value {
          return b.create<memref::LoadOp>(
              value,
              ValueRange{batchIv, kvHead, add(j0, r), add(c0, index(g))});
        });
    for (int64_t g = 0; g < cols; ++g)
      for (int64_t t = 0; t < kQueryVectors; ++t)
        storeVec(products[g * kQueryVectors + t], accT,
                 {add(c0, index(g)), lane(t)});
  });
}

void CpuFlashKernel::storeOutput(Value accT, Value l, Value tq) {
  Value zero = f32Const(0.0f), one = f32Const(1.0f);
  loop(index(0), tq, 1, {}, [&](Value q, ValueRange) {
    Value sum = b.create<memref::LoadOp>(l, ValueRange{q});
    Value empty = b.create<arith::CmpFOp>(arith::CmpFPredicate::OEQ, sum, zero);
    // Rows that kept nothing are 0, never NaN.
    Value inv = b.create<arith::SelectOp>(
        empty, zero, b.create<arith::DivFOp>(one, sum));
    Value row = add(i0, q);
    loop(index(0), valueDim, 1, {}, [&](Value c, ValueRange) {
      Value a = b.create<memref::LoadOp>(accT, ValueRange{c, q});
      b.create<memref::StoreOp>(b.create<arith::MulFOp>(a, inv), out,
                                ValueRange{batchIv, headIv, row, c});
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
}

/// The memref a tensor value reads as (identity layout).
static MemRefType bufferTypeOf(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return MemRefType::get(type.getShape(), type.getElementType());
}

void CpuFlashKernel::setUpSizes(Value queryBuf, Value keyBuf, Value valueBuf) {
  query = queryBuf;
  key = keyBuf;
  value = valueBuf;
  queryLen = dim(query, 2);
  headDim = dim(query, 3);
  keyLen = dim(key, 2);
  valueDim = dim(value, 3);
  delta = op.getAlignment() == Alignment::bottom_right ? sub(keyLen, queryLen)
                                                       : index(0);
}

func::FuncOp CpuFlashKernel::buildTileFunction(ModuleOp module) {
  // One query tile per call: the scratch buffers are allocas of the call's
  // frame, so they are released on return (and hoisted once inlined).
  SmallVector<Type> argTypes = {bufferTypeOf(op.getQuery()),
                                bufferTypeOf(op.getKey()),
                                bufferTypeOf(op.getValue()),
                                MemRefType::get(
                                    cast<RankedTensorType>(op.getType())
                                        .getShape(),
                                    f32),
                                b.getIndexType(), b.getIndexType(),
                                b.getIndexType()};
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op->getParentOfType<func::FuncOp>());
  // Named after the caller so that artifacts linked together do not clash.
  auto parent = op->getParentOfType<func::FuncOp>();
  auto fn = b.create<func::FuncOp>(
      (parent.getSymName() + "__attn_cpu_flash_tile").str(),
      b.getFunctionType(argTypes, {}));
  fn.setPrivate();
  SymbolTable(module).insert(fn); // uniquifies the name
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  pattern = op.getPatternAttr();
  setUpSizes(entry->getArgument(0), entry->getArgument(1),
             entry->getArgument(2));
  out = entry->getArgument(3);
  batchIv = entry->getArgument(4);
  headIv = entry->getArgument(5);
  Value queryTileIndex = entry->getArgument(6);
  Value groups = b.create<arith::DivUIOp>(dim(query, 1), dim(key, 1));
  kvHead = b.create<arith::DivUIOp>(headIv, groups);
  if (std::optional<APFloat> attr = op.getScale()) {
    scale = f32Const(attr->convertToFloat());
  } else {
    Value d = b.create<arith::IndexCastUIOp>(b.getI64Type(), headDim);
    scale = b.create<math::RsqrtOp>(b.create<arith::UIToFPOp>(f32, d));
  }
  i0 = mul(queryTileIndex, index(kQueryTile));
  Value tq = minIndex(index(kQueryTile), sub(queryLen, i0));

  // Per-tile scratch, 64-byte aligned for full-width vector accesses.
  IntegerAttr align = b.getI64IntegerAttr(64);
  auto scratch = [&](ArrayRef<int64_t> shape, ValueRange sizes) {
    return b.create<memref::AllocaOp>(MemRefType::get(shape, f32), sizes,
                                      align);
  };
  int64_t dyn = ShapedType::kDynamic;
  Value qT = scratch({dyn, kQueryTile}, {headDim});
  Value sT = scratch({keyTile, kQueryTile}, {});
  Value accT = scratch({dyn, kQueryTile}, {valueDim});
  Value m = scratch({kQueryTile}, {}), l = scratch({kQueryTile}, {});

  packQueries(qT, tq);
  for (int64_t t = 0; t < kQueryVectors; ++t) {
    storeVec(vecConst(-INFINITY), m, {lane(t)});
    storeVec(vecConst(0.0f), l, {lane(t)});
  }
  loop(index(0), valueDim, 1, {}, [&](Value c, ValueRange) {
    for (int64_t t = 0; t < kQueryVectors; ++t)
      storeVec(vecConst(0.0f), accT, {c, lane(t)});
    return SmallVector<Value>{};
  });

  loop(index(0), keyLen, keyTile, {}, [&](Value j0, ValueRange) {
    Value tk = minIndex(index(keyTile), sub(keyLen, j0));
    Value isEmpty, isFull;
    if (pattern) {
      std::tie(isEmpty, isFull) = emitTileClass(
          b, b.getLoc(), pattern, i0, add(i0, tq), j0, add(j0, tk), delta);
    }
    Value trueValue = b.create<arith::ConstantIntOp>(1, 1);
    auto thenIf = [&](Value cond) {
      auto ifOp = b.create<scf::IfOp>(cond, /*withElseRegion=*/false);
      b.setInsertionPointToStart(ifOp.thenBlock());
    };
    OpBuilder::InsertionGuard tileGuard(b);
    // Tiles the pattern drops entirely are skipped.
    if (isEmpty)
      thenIf(b.create<arith::XOrIOp>(isEmpty, trueValue));
    computeScores(sT, qT, j0, tk);
    if (op.getModsAttr() && !op.getModsAttr().empty())
      applyMods(sT, j0, tk);
    // Only partial tiles evaluate the pattern per element.
    if (isFull) {
      OpBuilder::InsertionGuard maskGuard(b);
      thenIf(b.create<arith::XOrIOp>(isFull, trueValue));
      applyMask(sT, j0, tk);
    }
    updateSoftmaxAndAccumulate(sT, m, l, accT, j0, tk);
    return SmallVector<Value>{};
  });

  storeOutput(accT, l, tq);
  b.create<func::ReturnOp>();
  return fn;
}

Value CpuFlashKernel::build(ModuleOp module) {
  func::FuncOp tileFn = buildTileFunction(module);

  auto toBuffer = [&](Value tensor) -> Value {
    return b.create<bufferization::ToBufferOp>(bufferTypeOf(tensor), tensor,
                                               /*read_only=*/true);
  };
  Value q = toBuffer(op.getQuery()), k = toBuffer(op.getKey()),
        v = toBuffer(op.getValue());
  Value batch = dim(q, 0), queryHeads = dim(q, 1);
  Value numQueryTiles =
      b.create<arith::CeilDivUIOp>(dim(q, 2), index(kQueryTile));

  auto resultType = cast<RankedTensorType>(op.getType());
  SmallVector<Value> dynamicSizes;
  Value resultDims[4] = {batch, queryHeads, dim(q, 2), dim(v, 3)};
  for (int64_t d = 0; d < 4; ++d)
    if (resultType.isDynamicDim(d))
      dynamicSizes.push_back(resultDims[d]);
  Value result = b.create<memref::AllocOp>(
      MemRefType::get(resultType.getShape(), f32), dynamicSizes,
      b.getI64IntegerAttr(64));

  auto forall = b.create<scf::ForallOp>(
      getAsOpFoldResult(ValueRange{batch, queryHeads, numQueryTiles}),
      ValueRange{}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    SmallVector<Value> args = {q, k, v, result};
    llvm::append_range(args, forall.getInductionVars());
    b.create<func::CallOp>(tileFn, args);
  }
  return b.create<bufferization::ToTensorOp>(resultType, result,
                                             /*restrict=*/b.getUnitAttr(),
                                             /*writable=*/b.getUnitAttr());
}

struct AttnToCpuKernelsPass
    : attn::impl::AttnToCpuKernelsBase<AttnToCpuKernelsPass> {
  using AttnToCpuKernelsBase::AttnToCpuKernelsBase;

  void runOnOperation() override {
    if (keyTile < 1 || (vectorBits != 256 && vectorBits != 512)) {
      getOperation()->emitError("attn-to-cpu-kernels: kv-tile must be >= 1 "
                                "and vector-bits 256 or 512");
      return signalPassFailure();
    }
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) {
      if (isSupported(op))
        ops.push_back(op);
    });
    for (AttentionOp op : ops) {
      Value result =
          CpuFlashKernel(op, keyTile, Blocking::forVectorBits(vectorBits))
              .build(getOperation());
      op.replaceAllUsesWith(result);
      op.erase();
    }
  }
};

} // namespace
