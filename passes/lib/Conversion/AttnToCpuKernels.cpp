//===- AttnToCpuKernels.cpp - vectorized flash attention for CPUs ---------===//
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
//     l = alpha l + sum_r sT[r];  accT[c] = alpha accT[c] + sum_r V[j0+r][c] sT[r]
//   O[b, h, i0 + q, c] = accT[c][q] / l[q]          (0 when l[q] == 0)
//
// Every row-wise softmax quantity of the TQ queries is a few whole vectors,
// so max, exp and sums are vertical vector operations. The register blocks
// are sized to the vector register file (see Blocking).
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/IR/MaskAlgebra.h"
#include "attn/Dialect/Attn/IR/TileSchedule.h"
#include "attn/Transforms/MaskCodegen.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/ScoreModCodegen.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/Support/FormatVariadic.h"
#include <cmath>
#include <map>
#include <numeric>

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
      !op.getScore().empty())
    return false;
  std::string reason;
  if (!areScoreModsVectorizable(op.getModsAttr(), /*withGathers=*/true) ||
      !isScoreModCodegenSupported(op.getModsAttr(), type.getDimSize(1),
                                  reason))
    return false;
  return !op.getPatternAttr() ||
         isMaskCodegenSupported(op.getPatternAttr(), op.getMaskShape(),
                                /*withTensors=*/true, reason);
}

bool isTablePattern(MaskAttrInterface m) {
  return isa<RandomBlocksAttr, BlockLayoutAttr>(m);
}

/// The gcd of the blocks of the pattern's table members (0: none).
int64_t tableBlockGcd(MaskAttrInterface pattern) {
  int64_t blocks = 0;
  walkMask(pattern, [&](MaskAttrInterface m) {
    if (auto random = dyn_cast<RandomBlocksAttr>(m))
      blocks = std::gcd(blocks, random.getBlock());
    if (auto layout = dyn_cast<BlockLayoutAttr>(m))
      blocks = std::gcd(blocks, layout.getBlock());
  });
  return blocks;
}

/// The key tile: `keyTile`, or when 0, 128 for dense and causal attention
/// and 32 for sparser patterns. A band's two edges cost about one partial
/// tile each per query tile, so narrower tiles waste less; with 32 keys the
/// 513-wide window of bench/attn-sparse-bench runs at 71-85 % of the dense
/// kernel's rate on kept entries, against 64-82 % with 64 keys (N = 4096 to
/// 65536, two runs each). Dense work prefers 128: fewer rescales per key. Table patterns are looked up once per key
/// tile and query, which needs every key tile to lie inside one of their
/// blocks: the key tile shrinks to the largest divisor of their blocks' gcd
/// that fits.
int64_t keyTileFor(MaskAttrInterface pattern, int64_t keyTile) {
  if (keyTile == 0)
    keyTile = !pattern || isa<CausalAttr>(pattern) ? 128 : 32;
  int64_t blocks = tableBlockGcd(pattern);
  if (!blocks)
    return keyTile;
  int64_t tile = std::min(keyTile, blocks);
  while (blocks % tile)
    --tile;
  return tile;
}

/// Query tiles restart at every table block when blocks are at least two
/// tiles long and not a multiple of them (64 rows on 24-row AVX2 tiles:
/// 24 + 24 + 16): a tile straddling two query blocks would visit the key
/// blocks of both, half masked. Block layouts then have full tiles only;
/// for BigBird the saving and the padded rows cancel out (measured).
QueryTiling queryTilingFor(MaskAttrInterface pattern, Blocking blocking) {
  QueryTiling tiling{blocking.queryTile(), 0};
  int64_t blocks = tableBlockGcd(pattern);
  if (blocks % tiling.tile != 0 && blocks >= 2 * tiling.tile)
    tiling.period = blocks;
  return tiling;
}

/// Segment ids are only known at run time. When the pattern is `segments`
/// or an intersection with it, each key tile is also tested against the
/// ids (min / max over the tile); the rest of the pattern is what the
/// compile-time schedule covers. Returns that rest (null: keeps all).
std::pair<bool, MaskAttrInterface> splitRuntimeSegments(
    MaskAttrInterface pattern) {
  if (isa_and_nonnull<SegmentsAttr>(pattern))
    return {true, MaskAttrInterface()};
  auto andAttr = dyn_cast_or_null<AndAttr>(pattern);
  if (!andAttr ||
      llvm::none_of(andAttr.getMembers(), llvm::IsaPred<SegmentsAttr>))
    return {false, pattern};
  SmallVector<Attribute> rest;
  for (Attribute member : andAttr.getMembers())
    if (!isa<SegmentsAttr>(member))
      rest.push_back(member);
  if (rest.size() == 1)
    return {true, cast<MaskAttrInterface>(rest.front())};
  return {true, AndAttr::get(pattern.getContext(),
                             ArrayAttr::get(pattern.getContext(), rest))};
}

/// Schedules beyond this many entries (4 bytes each) fall back to
/// classifying tiles at run time.
constexpr int64_t kMaxScheduleEntries = int64_t(1) << 22;

/// The compile-time schedules of an op: one per head, or one shared by all
/// heads when the pattern does not depend on the head.
struct OpSchedules {
  SmallVector<TileSchedule> perHead;
  bool sharedByHeads = true;
  int64_t numEntries() const {
    int64_t n = 0;
    for (const TileSchedule &s : perHead)
      n += s.numVisited();
    return n;
  }
};

/// The schedules of `pattern` for the op's static sizes, or nothing when a
/// size is dynamic or the tables would be too large.
std::optional<OpSchedules> buildSchedules(AttentionOp op,
                                          MaskAttrInterface pattern,
                                          QueryTiling queryTiling,
                                          int64_t keyTile) {
  MaskShape shape = op.getMaskShape();
  if (!pattern || ShapedType::isDynamic(shape.lq) ||
      ShapedType::isDynamic(shape.lk) || ShapedType::isDynamic(shape.numHeads))
    return std::nullopt;
  OpSchedules schedules;
  schedules.sharedByHeads = !dependsOnHead(pattern);
  MaskQuery q;
  q.lq = shape.lq;
  q.lk = shape.lk;
  q.delta = getAlignmentDelta(op.getAlignment(), shape.lq, shape.lk);
  int64_t heads = schedules.sharedByHeads ? 1 : shape.numHeads;
  for (int64_t h = 0; h < heads; ++h) {
    q.head = h;
    schedules.perHead.push_back(
        buildTileSchedule(pattern, q, queryTiling, keyTile,
                          kMaxScheduleEntries - schedules.numEntries()));
    if (!schedules.perHead.back().complete ||
        schedules.numEntries() > kMaxScheduleEntries)
      return std::nullopt;
  }
  return schedules;
}

/// What the pass decided for one op before emitting its kernel.
struct KernelPlan {
  Blocking blocking;
  /// Query tiles of blocking.queryTile() rows, aligned to table blocks.
  QueryTiling queryTiling;
  int64_t keyTile = 0;
  /// Segment ids tested per tile at run time (splitRuntimeSegments).
  bool runtimeSegments = false;
  /// The part of the pattern known at compile time.
  MaskAttrInterface staticPattern;
  /// Key tile lists, when sizes are static.
  std::optional<OpSchedules> schedules;
  bool countTiles = false;
};

KernelPlan planKernel(AttentionOp op, int64_t keyTile, int64_t vectorBits,
                      bool countTiles) {
  KernelPlan plan;
  plan.blocking = Blocking::forVectorBits(vectorBits);
  plan.keyTile = keyTileFor(op.getPatternAttr(), keyTile);
  std::tie(plan.runtimeSegments, plan.staticPattern) =
      splitRuntimeSegments(op.getPatternAttr());
  plan.queryTiling = queryTilingFor(op.getPatternAttr(), plan.blocking);
  plan.schedules = buildSchedules(op, plan.staticPattern, plan.queryTiling,
                                  plan.keyTile);
  // Without schedules (dynamic sizes) query tiles stay uniform.
  if (!plan.schedules)
    plan.queryTiling.period = 0;
  plan.countTiles = countTiles;
  return plan;
}

class CpuFlashKernel {
public:
  CpuFlashKernel(AttentionOp op, const KernelPlan &plan)
      : op(op), plan(plan), b(op.getLoc(), op), keyTile(plan.keyTile),
        kLanes(plan.blocking.lanes),
        kQueryVectors(plan.blocking.queryVectors),
        kRowBlock(plan.blocking.rows), kQueryTile(plan.blocking.queryTile()),
        f32(b.getF32Type()), vec(VectorType::get({kLanes}, f32)),
        positionType(positionsFitInI32(op.getPatternAttr(), op.getMaskShape())
                         ? b.getI32Type()
                         : b.getI64Type()) {}

  /// Emits the kernel; returns the result tensor.
  Value build(ModuleOp module);

private:
  func::FuncOp buildTileFunction(ModuleOp module);
  void setUpSizes(Value queryBuf, Value keyBuf, Value valueBuf);
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value f32Const(float v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value vecConst(float v) {
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(vec, b.getF32FloatAttr(v)));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value minIndex(Value x, Value y) { return arith::MinSIOp::create(b, x, y); }
  Value dim(Value memref, int64_t d) {
    return b.createOrFold<memref::DimOp>(memref, d);
  }
  Value loadVec(Value memref, ValueRange indices) {
    return vector::LoadOp::create(b, vec, memref, indices);
  }
  void storeVec(Value value, Value memref, ValueRange indices) {
    vector::StoreOp::create(b, value, memref, indices);
  }
  /// Lane offset of query vector t.
  Value lane(int64_t t) { return index(t * kLanes); }

  /// for (iv = lb; iv < ub; iv += step) body(iv, iterArgs) -> results.
  scf::ForOp loop(Value lb, Value ub, int64_t step, ValueRange init,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body);

  /// Register-blocked rank-1 updates, the core of both tile products: for
  /// iv in [0, ub), acc[g][t] += broadcast(scalarAt(iv, g)) * vectorAt(iv, t)
  /// for g < rows and t < kQueryVectors, acc carried in registers.
  /// With `laneGuard`, lanes where it is false keep their sum (an FMA with
  /// a zero weight would still turn the sum into NaN when the scalar is
  /// NaN or inf).
  SmallVector<Value> blockedUpdates(Value ub, ArrayRef<Value> init,
                                    int64_t rows,
                                    function_ref<Value(Value, int64_t)> vectorAt,
                                    function_ref<Value(Value, int64_t)> scalarAt,
                                    function_ref<Value(Value)> laneGuard = {});
  /// body(start, rows) over [0, total) in blocks of kRowBlock rows, then the
  /// remaining rows one by one.
  void forRowBlocks(Value total, function_ref<void(Value, int64_t)> body);

  void packQueries(Value qT, Value tq);
  void computeScores(Value sT, Value qT, Value j0, Value tk);
  void applyMask(Value sT, Value j0, Value tk);
  /// Per query vector, whether table pattern `m` keeps key tile j0 for
  /// each lane (the tile lies in one block of `m`).
  SmallVector<Value> tableLaneMasks(MaskAttrInterface m, Value j0);
  /// The segment id at `position` of an ids buffer, as i64.
  Value segmentId(Value ids, Value position);
  /// Per query vector, the segment ids of its lanes.
  void loadQueryIds();
  /// (min, max) of ids[first, first + count).
  std::pair<Value, Value> idRange(Value ids, Value first, Value count);
  /// (isEmpty, isFull) of key tile [j0, j0 + tk) under the segment ids.
  std::pair<Value, Value> segmentTileClass(Value j0, Value tk);
  /// The key tile loop: over the compile-time schedule when there is one,
  /// else over every key tile with run-time classification.
  void emitKeyTileLoop(Value queryTileIndex, Value tq, Value qT, Value sT,
                       Value m, Value l, Value accT);
  /// Scores, mods, mask (when needsMask), softmax and accumulation of one
  /// key tile, skipped when isEmpty.
  void processKeyTile(Value j0, Value isEmpty, Value needsMask, Value qT,
                      Value sT, Value m, Value l, Value accT);
  /// counters[which] += 1 when counting tiles (0: visited, 1: partial).
  void countTile(int64_t which);
  /// The i32 table `data` as a constant global next to the kernel.
  memref::GlobalOp createTable(ModuleOp module, StringRef name,
                               ArrayRef<int32_t> data);
  /// The f32 table `data` as a constant global before the op's function.
  memref::GlobalOp createF32Table(StringRef name, ArrayRef<float> data);
  std::map<std::vector<float>, memref::GlobalOp> f32Tables;
  /// The op's score mods on every score of the tile, lane-wise.
  void applyMods(Value sT, Value j0, Value tk);
  /// Query positions i0 + t * lanes + [0, lanes) as a vector of index.
  Value queryPositions(int64_t t);
  /// The same in positionType: i32 lanes (twice as many per register as
  /// index) when every position and pattern constant fits, else i64.
  Value queryPositionVector(int64_t t);
  Value splatPosition(Value index);
  Value splatIndex(Value v) {
    return vector::BroadcastOp::create(
        b, VectorType::get({kLanes}, b.getIndexType()), v);
  }
  /// `mayDropKeys` (i1): whether the tile may hold dropped (-inf) scores,
  /// whose value rows must then not be read into the sum at all.
  void updateSoftmaxAndAccumulate(Value sT, Value m, Value l, Value accT,
                                  Value j0, Value tk, Value mayDropKeys);
  void storeOutput(Value accT, Value l, Value tq);

  AttentionOp op;
  const KernelPlan &plan;
  ImplicitLocOpBuilder b;
  int64_t keyTile;
  const int64_t kLanes, kQueryVectors, kRowBlock, kQueryTile;
  Type f32;
  VectorType vec;
  Type positionType; // lanes of positional mask arithmetic

  // Values of the tile function being built.
  MaskAttrInterface pattern;
  Value query, key, value, out;
  Value queryLen, headDim, valueDim, keyLen, delta, scale;
  Value batchIv, headIv, kvHead, i0;
  ModuleOp module;
  Value qSegments, kvSegments;     // [B, L] id buffers, when used
  Value relTable;                  // [Hq, columns], when a mod reads it
  SmallVector<Value> queryIds;     // per query vector, vector of i64
  Value queryIdMin, queryIdMax;    // over the real queries of the tile
  Value counters;                  // memref<2xindex>, when counting
  memref::GlobalOp rowStartTable, entryTable;
};

scf::ForOp
CpuFlashKernel::loop(Value lb, Value ub, int64_t step, ValueRange init,
                     function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto forOp = scf::ForOp::create(b, lb, ub, index(step), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forOp.getBody());
  SmallVector<Value> results =
      body(forOp.getInductionVar(), forOp.getRegionIterArgs());
  if (forOp.getBody()->empty() ||
      !forOp.getBody()->back().hasTrait<OpTrait::IsTerminator>())
    scf::YieldOp::create(b, results);
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
      Value x =
          memref::LoadOp::create(b, query, ValueRange{batchIv, headIv, row, c});
      memref::StoreOp::create(b, arith::MulFOp::create(b, x, scale), qT,
                              ValueRange{c, q});
      return SmallVector<Value>{};
    });
    return SmallVector<Value>{};
  });
}

SmallVector<Value> CpuFlashKernel::blockedUpdates(
    Value ub, ArrayRef<Value> init, int64_t rows,
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
            sum = laneGuard ? arith::SelectOp::create(b, guards[t], updated, sum)
                                  .getResult()
                            : updated;
          }
        }
        return next;
      });
  return updates.getResults();
}

void CpuFlashKernel::forRowBlocks(
    Value total, function_ref<void(Value, int64_t)> body) {
  Value blocked =
      mul(arith::DivUIOp::create(b, total, index(kRowBlock)), index(kRowBlock));
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
          return memref::LoadOp::create(b, key,
                                        ValueRange{batchIv, kvHead, row, c});
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
  Value offsets = arith::ConstantOp::create(
      b, DenseElementsAttr::get(VectorType::get({kLanes}, b.getIndexType()),
                                ArrayRef<int64_t>(iota)));
  return arith::AddIOp::create(b, splatIndex(i0), offsets);
}

Value CpuFlashKernel::splatPosition(Value index) {
  return vector::BroadcastOp::create(
      b, VectorType::get({kLanes}, positionType),
      arith::IndexCastOp::create(b, positionType, index));
}

Value CpuFlashKernel::queryPositionVector(int64_t t) {
  SmallVector<APInt> iota;
  for (int64_t n = 0; n < kLanes; ++n)
    iota.push_back(APInt(positionType.getIntOrFloatBitWidth(), t * kLanes + n));
  Value offsets = arith::ConstantOp::create(
      b, DenseElementsAttr::get(VectorType::get({kLanes}, positionType), iota));
  return arith::AddIOp::create(b, splatPosition(i0), offsets);
}

void CpuFlashKernel::applyMask(Value sT, Value j0, Value tk) {
  // The pattern is evaluated for a whole vector of queries at once.
  MaskContext context;
  context.delta = splatPosition(delta);
  DenseMap<Attribute, SmallVector<Value>> tableLanes;
  walkMask(pattern, [&](MaskAttrInterface m) {
    if (isTablePattern(m) && !tableLanes.count(m))
      tableLanes[m] = tableLaneMasks(m, j0);
  });
  Value negInf = vecConst(-INFINITY);
  loop(index(0), tk, 1, {}, [&](Value r, ValueRange) {
    Value j = add(j0, r);
    Value key = splatPosition(j);
    Value keyId;
    if (kvSegments)
      keyId = vector::BroadcastOp::create(
          b, VectorType::get({kLanes}, b.getI64Type()),
          segmentId(kvSegments, j));
    for (int64_t t = 0; t < kQueryVectors; ++t) {
      auto evaluate = [&](MaskAttrInterface member) -> Value {
        if (isTablePattern(member))
          return tableLanes[member][t];
        if (isa<SegmentsAttr>(member))
          return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, queryIds[t],
                                       keyId);
        return {};
      };
      context.evaluateMember = evaluate;
      Value kept = emitElementMask(b, b.getLoc(), pattern,
                                   queryPositionVector(t), key, context);
      Value s = loadVec(sT, {r, lane(t)});
      storeVec(arith::SelectOp::create(b, kept, s, negInf), sT, {r, lane(t)});
    }
    return SmallVector<Value>{};
  });
}

SmallVector<Value> CpuFlashKernel::tableLaneMasks(MaskAttrInterface m,
                                                  Value j0) {
  MaskContext context;
  context.delta = delta;
  context.head = headIv;
  context.shape = op.getMaskShape();
  // Padded lanes repeat the last query; their results are never stored.
  Value lastQuery = sub(queryLen, index(1));
  SmallVector<Value> masks;
  for (int64_t t = 0; t < kQueryVectors; ++t) {
    Value lanes = arith::ConstantOp::create(
        b, DenseElementsAttr::get(VectorType::get({kLanes}, b.getI1Type()),
                                  false));
    for (int64_t n = 0; n < kLanes; ++n) {
      Value i = minIndex(add(i0, index(t * kLanes + n)), lastQuery);
      Value kept = emitElementMask(b, b.getLoc(), m, i, j0, context);
      lanes = vector::InsertOp::create(b, kept, lanes, ArrayRef<int64_t>{n});
    }
    masks.push_back(lanes);
  }
  return masks;
}

Value CpuFlashKernel::segmentId(Value ids, Value position) {
  Value id = memref::LoadOp::create(b, ids, ValueRange{batchIv, position});
  if (id.getType().isInteger(64))
    return id;
  return arith::ExtSIOp::create(b, b.getI64Type(), id);
}

void CpuFlashKernel::loadQueryIds() {
  Value lastQuery = sub(queryLen, index(1));
  for (int64_t t = 0; t < kQueryVectors; ++t) {
    Value ids = arith::ConstantOp::create(
        b, DenseElementsAttr::get(VectorType::get({kLanes}, b.getI64Type()),
                                  int64_t(0)));
    for (int64_t n = 0; n < kLanes; ++n) {
      Value i = minIndex(add(i0, index(t * kLanes + n)), lastQuery);
      ids = vector::InsertOp::create(b, segmentId(qSegments, i), ids,
                                     ArrayRef<int64_t>{n});
    }
    queryIds.push_back(ids);
  }
}

std::pair<Value, Value> CpuFlashKernel::idRange(Value ids, Value first,
                                                Value count) {
  Value init[] = {
      arith::ConstantIntOp::create(b, std::numeric_limits<int64_t>::max(), 64),
      arith::ConstantIntOp::create(b, std::numeric_limits<int64_t>::min(), 64)};
  scf::ForOp range =
      loop(index(0), count, 1, init, [&](Value n, ValueRange acc) {
        Value id = segmentId(ids, add(first, n));
        return SmallVector<Value>{arith::MinSIOp::create(b, acc[0], id),
                                  arith::MaxSIOp::create(b, acc[1], id)};
      });
  return {range.getResult(0), range.getResult(1)};
}

std::pair<Value, Value> CpuFlashKernel::segmentTileClass(Value j0, Value tk) {
  // Disjoint id ranges share no id; one id on both sides keeps all. For
  // packed documents (sorted, consecutive ids) this is exact.
  auto [keyMin, keyMax] = idRange(kvSegments, j0, tk);
  auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) -> Value {
    return arith::CmpIOp::create(b, p, x, y);
  };
  using P = arith::CmpIPredicate;
  Value isEmpty = arith::OrIOp::create(b, cmp(P::slt, keyMax, queryIdMin),
                                       cmp(P::sgt, keyMin, queryIdMax));
  Value isFull = arith::AndIOp::create(
      b,
      arith::AndIOp::create(b, cmp(P::eq, queryIdMin, queryIdMax),
                            cmp(P::eq, keyMin, keyMax)),
      cmp(P::eq, queryIdMin, keyMin));
  return {isEmpty, isFull};
}

void CpuFlashKernel::countTile(int64_t which) {
  if (!counters)
    return;
  Value n = memref::LoadOp::create(b, counters, ValueRange{index(which)});
  memref::StoreOp::create(b, add(n, index(1)), counters,
                          ValueRange{index(which)});
}

void CpuFlashKernel::applyMods(Value sT, Value j0, Value tk) {
  ArrayAttr mods = op.getModsAttr();
  int64_t numHeads =
      cast<RankedTensorType>(op.getQuery().getType()).getDimSize(1);
  Value deltaLanes = splatIndex(delta);
  // Relative-position tables are gathered per query lane.
  Value allLanes = arith::ConstantOp::create(
      b,
      DenseElementsAttr::get(VectorType::get({kLanes}, b.getI1Type()), true));
  Value zeros = vecConst(0.0f);
  auto gatherRelTable = [&](Value head, Value columns) -> Value {
    return vector::GatherOp::create(b, vec, relTable,
                                    ValueRange{head, index(0)}, columns,
                                    allLanes, zeros, IntegerAttr());
  };
  auto gatherConstant = [&](ArrayRef<float> values, Value indices) -> Value {
    memref::GlobalOp global = createF32Table(
        (op->getParentOfType<func::FuncOp>().getSymName() + "__attn_mod_table")
            .str(),
        values);
    Value table =
        memref::GetGlobalOp::create(b, global.getType(), global.getSymName());
    return vector::GatherOp::create(b, vec, table, ValueRange{index(0)},
                                    indices, allLanes, zeros, IntegerAttr());
  };
  ScoreModLanes lanes{gatherRelTable, gatherConstant};
  loop(index(0), tk, 1, {}, [&](Value r, ValueRange) {
    Value key = splatIndex(add(j0, r));
    for (int64_t t = 0; t < kQueryVectors; ++t) {
      // r = j - (i + delta) for each query lane.
      Value distance = arith::SubIOp::create(
          b, key, arith::AddIOp::create(b, queryPositions(t), deltaLanes));
      Value x = emitSoftcap(b, b.getLoc(), mods, loadVec(sT, {r, lane(t)}));
      x = emitScoreMods(b, b.getLoc(), mods, x, distance, headIv, Value(),
                        numHeads, lanes);
      storeVec(x, sT, {r, lane(t)});
    }
    return SmallVector<Value>{};
  });
}

void CpuFlashKernel::updateSoftmaxAndAccumulate(Value sT, Value m, Value l,
                                                Value accT, Value j0,
                                                Value tk, Value mayDropKeys) {
  Value negInf = vecConst(-INFINITY), zero = vecConst(0.0f);
  auto isNegInf = [&](Value x) {
    return arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x, negInf);
  };
  // exp(x - shift) with exact zeros for x = -inf (dropped scores).
  auto expShifted = [&](Value x, Value shift) {
    Value e = math::ExpOp::create(b, arith::SubFOp::create(b, x, shift));
    return arith::SelectOp::create(b, isNegInf(x), zero, e);
  };

  SmallVector<Value> mOld, mSafe, alpha;
  for (int64_t t = 0; t < kQueryVectors; ++t)
    mOld.push_back(loadVec(m, {lane(t)}));
  scf::ForOp maxLoop = loop(index(0), tk, 1, mOld, [&](Value r, ValueRange mx) {
    SmallVector<Value> next;
    for (int64_t t = 0; t < kQueryVectors; ++t)
      next.push_back(
          arith::MaximumFOp::create(b, mx[t], loadVec(sT, {r, lane(t)})));
    return next;
  });
  for (int64_t t = 0; t < kQueryVectors; ++t) {
    Value mNew = maxLoop.getResult(t);
    // A max of -inf means nothing kept yet: subtract 0 instead.
    mSafe.push_back(arith::SelectOp::create(b, isNegInf(mNew), zero, mNew));
    alpha.push_back(expShifted(mOld[t], mSafe[t]));
    storeVec(mNew, m, {lane(t)});
  }

  SmallVector<Value> zeros(kQueryVectors, zero);
  scf::ForOp sumLoop = loop(index(0), tk, 1, zeros, [&](Value r, ValueRange s) {
    SmallVector<Value> next;
    for (int64_t t = 0; t < kQueryVectors; ++t) {
      Value p = expShifted(loadVec(sT, {r, lane(t)}), mSafe[t]);
      storeVec(p, sT, {r, lane(t)});
      next.push_back(arith::AddFOp::create(b, s[t], p));
    }
    return next;
  });
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
    forRowBlocks(valueDim, [&](Value c0, int64_t cols) {
      SmallVector<Value> scaled;
      for (int64_t g = 0; g < cols; ++g)
        for (int64_t t = 0; t < kQueryVectors; ++t)
          scaled.push_back(arith::MulFOp::create(
              b, loadVec(accT, {add(c0, index(g)), lane(t)}), alpha[t]));
      auto keptLanes = [&](Value p) -> Value {
        return arith::CmpFOp::create(b, arith::CmpFPredicate::ONE, p, zero);
      };
      SmallVector<Value> products = blockedUpdates(
          tk, scaled, cols,
          [&](Value r, int64_t t) { return loadVec(sT, {r, lane(t)}); },
          [&](Value r, int64_t g) -> Value {
            return memref::LoadOp::create(
                b, value,
                ValueRange{batchIv, kvHead, add(j0, r), add(c0, index(g))});
          },
          guarded ? function_ref<Value(Value)>(keptLanes)
                  : function_ref<Value(Value)>());
      for (int64_t g = 0; g < cols; ++g)
        for (int64_t t = 0; t < kQueryVectors; ++t)
          storeVec(products[g * kQueryVectors + t], accT,
                   {add(c0, index(g)), lane(t)});
    });
  };
  if (matchPattern(mayDropKeys, m_Zero()) ||
      matchPattern(mayDropKeys, m_One())) {
    accumulate(matchPattern(mayDropKeys, m_One()));
    return;
  }
  auto ifOp = scf::IfOp::create(b, mayDropKeys, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  accumulate(true);
  b.setInsertionPointToStart(ifOp.elseBlock());
  accumulate(false);
}

void CpuFlashKernel::storeOutput(Value accT, Value l, Value tq) {
  Value zero = f32Const(0.0f), one = f32Const(1.0f);
  loop(index(0), tq, 1, {}, [&](Value q, ValueRange) {
    Value sum = memref::LoadOp::create(b, l, ValueRange{q});
    Value empty =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, sum, zero);
    // Rows that kept nothing are 0, never NaN.
    Value inv = arith::SelectOp::create(b, empty, zero,
                                        arith::DivFOp::create(b, one, sum));
    Value row = add(i0, q);
    loop(index(0), valueDim, 1, {}, [&](Value c, ValueRange) {
      Value a = memref::LoadOp::create(b, accT, ValueRange{c, q});
      memref::StoreOp::create(b, arith::MulFOp::create(b, a, inv), out,
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

memref::GlobalOp CpuFlashKernel::createF32Table(StringRef name,
                                                ArrayRef<float> data) {
  memref::GlobalOp &cached = f32Tables[std::vector<float>(data.begin(),
                                                          data.end())];
  if (cached)
    return cached;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op->getParentOfType<func::FuncOp>());
  auto type = MemRefType::get({int64_t(data.size())}, f32);
  auto global = memref::GlobalOp::create(
      b, name, b.getStringAttr("private"), type,
      DenseElementsAttr::get(RankedTensorType::get(type.getShape(), f32), data),
      /*constant=*/true, /*alignment=*/IntegerAttr());
  SymbolTable(module).insert(global); // uniquifies the name
  cached = global;
  return global;
}

memref::GlobalOp CpuFlashKernel::createTable(ModuleOp module, StringRef name,
                                             ArrayRef<int32_t> data) {
  auto type = MemRefType::get({int64_t(data.size())}, b.getI32Type());
  auto tensorType = RankedTensorType::get(type.getShape(), b.getI32Type());
  auto global = memref::GlobalOp::create(
      b, name, b.getStringAttr("private"), type,
      DenseElementsAttr::get(tensorType, data), /*constant=*/true,
      /*alignment=*/IntegerAttr());
  SymbolTable(module).insert(global); // uniquifies the name
  return global;
}

void CpuFlashKernel::processKeyTile(Value j0, Value isEmpty, Value needsMask,
                                    Value qT, Value sT, Value m, Value l,
                                    Value accT) {
  Value tk = minIndex(index(keyTile), sub(keyLen, j0));
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
  computeScores(sT, qT, j0, tk);
  if (op.getModsAttr() && !op.getModsAttr().empty())
    applyMods(sT, j0, tk);
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
  loop(index(0), keyLen, keyTile, {}, [&](Value j0, ValueRange) {
    Value isEmpty = falseValue, needsMask = falseValue;
    if (plan.staticPattern) {
      Value tk = minIndex(index(keyTile), sub(keyLen, j0));
      Value isFull;
      std::tie(isEmpty, isFull) =
          emitTileClass(b, b.getLoc(), plan.staticPattern, i0, add(i0, tq), j0,
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
  SmallVector<Type> argTypes = {bufferTypeOf(op.getQuery()),
                                bufferTypeOf(op.getKey()),
                                bufferTypeOf(op.getValue()),
                                MemRefType::get(
                                    cast<RankedTensorType>(op.getType())
                                        .getShape(),
                                    f32),
                                b.getIndexType(), b.getIndexType(),
                                b.getIndexType()};
  pattern = op.getPatternAttr();
  bool usesSegments = pattern && pattern.usesSegments();
  if (usesSegments) {
    argTypes.push_back(bufferTypeOf(op.getQSegments()));
    argTypes.push_back(bufferTypeOf(op.getKvSegments()));
  }
  if (op.getRelTable())
    argTypes.push_back(bufferTypeOf(op.getRelTable()));
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
      b, (parent.getSymName() + "__attn_cpu_flash_tile").str(),
      b.getFunctionType(argTypes, {}));
  fn.setPrivate();
  SymbolTable(module).insert(fn); // uniquifies the name
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  setUpSizes(entry->getArgument(0), entry->getArgument(1),
             entry->getArgument(2));
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
  Value groups = arith::DivUIOp::create(b, dim(query, 1), dim(key, 1));
  kvHead = arith::DivUIOp::create(b, headIv, groups);
  if (std::optional<APFloat> attr = op.getScale()) {
    scale = f32Const(attr->convertToFloat());
  } else {
    Value d = arith::IndexCastUIOp::create(b, b.getI64Type(), headDim);
    scale = math::RsqrtOp::create(b, arith::UIToFPOp::create(b, f32, d));
  }
  // Rows [i0, i0 + tq) of this query tile (QueryTiling::rows).
  Value tileEnd;
  if (int64_t period = plan.queryTiling.period) {
    Value perPeriod = index(plan.queryTiling.tilesPerPeriod());
    Value periodStart = mul(
        arith::DivUIOp::create(b, queryTileIndex, perPeriod), index(period));
    i0 = add(periodStart,
             mul(arith::RemUIOp::create(b, queryTileIndex, perPeriod),
                 index(kQueryTile)));
    tileEnd = minIndex(add(i0, index(kQueryTile)),
                       add(periodStart, index(period)));
  } else {
    i0 = mul(queryTileIndex, index(kQueryTile));
    tileEnd = add(i0, index(kQueryTile));
  }
  // Tiles past the end (the last period's) have no rows.
  Value tq = arith::MaxSIOp::create(
      b, sub(minIndex(tileEnd, queryLen), minIndex(i0, queryLen)), index(0));

  // Per-tile scratch, 64-byte aligned for full-width vector accesses.
  IntegerAttr align = b.getI64IntegerAttr(64);
  auto scratch = [&](ArrayRef<int64_t> shape, ValueRange sizes) {
    return memref::AllocaOp::create(b, MemRefType::get(shape, f32), sizes,
                                    align);
  };
  int64_t dyn = ShapedType::kDynamic;
  Value qT = scratch({dyn, kQueryTile}, {headDim});
  Value sT = scratch({keyTile, kQueryTile}, {});
  Value accT = scratch({dyn, kQueryTile}, {valueDim});
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

  emitKeyTileLoop(queryTileIndex, tq, qT, sT, m, l, accT);

  storeOutput(accT, l, tq);
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

Value CpuFlashKernel::build(ModuleOp moduleOp) {
  module = moduleOp;
  func::FuncOp tileFn = buildTileFunction(module);

  auto toBuffer = [&](Value tensor) -> Value {
    return bufferization::ToBufferOp::create(b, bufferTypeOf(tensor), tensor,
                                             /*read_only=*/true);
  };
  Value q = toBuffer(op.getQuery()), k = toBuffer(op.getKey()),
        v = toBuffer(op.getValue());
  Value batch = dim(q, 0), queryHeads = dim(q, 1);
  Value numQueryTiles =
      plan.queryTiling.period
          ? index(plan.queryTiling.numTiles(op.getMaskShape().lq))
          : arith::CeilDivUIOp::create(b, dim(q, 2), index(kQueryTile));

  auto resultType = cast<RankedTensorType>(op.getType());
  SmallVector<Value> dynamicSizes;
  Value resultDims[4] = {batch, queryHeads, dim(q, 2), dim(v, 3)};
  for (int64_t d = 0; d < 4; ++d)
    if (resultType.isDynamicDim(d))
      dynamicSizes.push_back(resultDims[d]);
  Value result =
      memref::AllocOp::create(b, MemRefType::get(resultType.getShape(), f32),
                              dynamicSizes, b.getI64IntegerAttr(64));

  // Segment ids and the relative-position table, as the tile function takes
  // them after its index arguments.
  SmallVector<Value> operandBuffers;
  if (op.getPatternAttr() && op.getPatternAttr().usesSegments())
    operandBuffers = {toBuffer(op.getQSegments()),
                      toBuffer(op.getKvSegments())};
  if (op.getRelTable())
    operandBuffers.push_back(toBuffer(op.getRelTable()));
  auto forall = scf::ForallOp::create(
      b, getAsOpFoldResult(ValueRange{batch, queryHeads, numQueryTiles}),
      ValueRange{}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    SmallVector<Value> args = {q, k, v, result};
    llvm::append_range(args, forall.getInductionVars());
    llvm::append_range(args, operandBuffers);
    func::CallOp::create(b, tileFn, args);
  }
  return bufferization::ToTensorOp::create(b, resultType, result,
                                           /*restrict=*/b.getUnitAttr(),
                                           /*writable=*/b.getUnitAttr());
}

struct AttnToCpuKernelsPass
    : attn::impl::AttnToCpuKernelsBase<AttnToCpuKernelsPass> {
  using AttnToCpuKernelsBase::AttnToCpuKernelsBase;

  void runOnOperation() override {
    // The score tile (kv-tile x query tile floats) lives on the stack of
    // each worker thread: 1024 rows are 256 KiB at 512 bits.
    if (keyTile < 0 || keyTile > 1024 ||
        (vectorBits != 256 && vectorBits != 512)) {
      getOperation()->emitError("attn-to-cpu-kernels: kv-tile must be 0 "
                                "(chosen per pattern) to 1024 and "
                                "vector-bits 256 or 512");
      return signalPassFailure();
    }
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) {
      if (isSupported(op))
        ops.push_back(op);
    });
    for (AttentionOp op : ops) {
      KernelPlan plan = planKernel(op, keyTile, vectorBits, countTiles);
      if (reportTiles)
        reportSchedule(op, plan);
      Value result = CpuFlashKernel(op, plan).build(getOperation());
      op.replaceAllUsesWith(result);
      op.erase();
    }
  }

  /// A remark with what the key tile loop visits (attn-compile --stats).
  static void reportSchedule(AttentionOp op, const KernelPlan &plan) {
    InFlightDiagnostic remark = op.emitRemark();
    remark << "query tile " << plan.blocking.queryTile();
    if (plan.queryTiling.period)
      remark << " (restarting every " << plan.queryTiling.period << " rows)";
    remark << ", key tile " << plan.keyTile << ": ";
    if (!plan.schedules) {
      remark << (plan.staticPattern ? "tiles are classified at run time "
                                      "(dynamic sizes or a large schedule)"
                                    : "every key tile is visited");
    } else {
      int64_t heads = op.getMaskShape().numHeads;
      int64_t copies = plan.schedules->sharedByHeads ? heads : 1;
      int64_t visited = 0, full = 0, total = 0;
      for (const TileSchedule &s : plan.schedules->perHead) {
        visited += copies * s.numVisited();
        full += copies * s.numFull();
        total += copies * s.numTotal();
      }
      remark << "visits " << visited << " of " << total
             << " key tiles per batch row (" << full << " full, "
             << visited - full << " partial; "
             << llvm::formatv("{0:F1}", total ? 100.0 * (total - visited) /
                                                    total
                                              : 0.0)
             << "% skipped)";
    }
    if (plan.runtimeSegments)
      remark << "; segment ids are tested per key tile at run time";
  }
};

} // namespace

QueryTiling mlir::attn::getCpuKernelQueryTiling(MaskAttrInterface pattern,
                                                int64_t vectorBits) {
  return queryTilingFor(pattern, Blocking::forVectorBits(vectorBits));
}

int64_t mlir::attn::getCpuKernelKeyTile(MaskAttrInterface pattern,
                                        int64_t keyTile) {
  return keyTileFor(pattern, keyTile);
}
