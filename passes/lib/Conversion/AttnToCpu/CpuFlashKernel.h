//===- CpuFlashKernel.h - the CPU lowering of one tiled attention -*- C++
//-*-===//
//
// The emitter behind attn-to-cpu-kernels (AttnToCpuKernels.cpp): builds the
// register-blocked flash kernel of one tiled attention (TiledForm.h) from
// its KernelPlan: attn.online_attention and attn.finalize_tile become the
// tile function, the forall over tiles a forall calling it. Its methods
// live in CpuFlashKernel.cpp (tiles, products, online softmax, the tile
// function), CpuFlashKernelMasks.cpp (masks, score mods, segment ids) and
// CpuFlashKernelGroups.cpp (decoding: packed heads, split keys).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOCPU_CPUFLASHKERNEL_H
#define ATTN_CONVERSION_ATTNTOCPU_CPUFLASHKERNEL_H

#include "attn/Analysis/KernelPlan.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/IR/MaskAlgebra.h"
#include "attn/Dialect/Attn/IR/TileSchedule.h"
#include "attn/Transforms/MaskCodegen.h"
#include "attn/Transforms/ScoreModCodegen.h"
#include "attn/Transforms/TiledForm.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/FormatVariadic.h"
#include <cmath>
#include <map>
#include <numeric>

namespace mlir::attn {

/// The memref a tensor value reads as (identity layout).
inline MemRefType bufferTypeOf(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return MemRefType::get(type.getShape(), type.getElementType());
}

class CpuFlashKernel {
public:
  /// Emits before `tiled.forall`, which the result replaces. With
  /// `packHeads`, the kernel's one query vector holds the queries of every
  /// query head of a key/value group (plan.packedHeads): it serves calls
  /// where those fit (decoding).
  /// With `splitKeys` as well, each call covers one of several key ranges
  /// and leaves its (m, l, acc) for a merge (buildMergeFunction).
  /// With `amx`, bf16 attentions whose head dims are whole AMX tiles
  /// compute both products on AMX tiles (CpuFlashKernelAmx.cpp); else with
  /// `bf16Dot`, with vdpbf16ps on vectors (CpuFlashKernelDot.cpp).
  CpuFlashKernel(TiledAttention tiled, const KernelPlan &plan,
                 bool packHeads = false, bool splitKeys = false,
                 bool amx = false, bool bf16Dot = false)
      : op(tiled.tile), packsHeads(packHeads), splitsKeys(splitKeys),
        resultType(cast<RankedTensorType>(tiled.forall.getType(0))),
        lseType(tiled.lse ? cast<RankedTensorType>(tiled.forall.getType(1))
                          : RankedTensorType()),
        plan(plan),
        b(op.getLoc(), tiled.forall), keyTile(plan.keyTile),
        kLanes(plan.blocking.lanes), kQueryVectors(plan.blocking.queryVectors),
        kRowBlock(plan.blocking.rows), kQueryTile(plan.blocking.queryTile()),
        f32(b.getF32Type()), vec(VectorType::get({kLanes}, f32)),
        positionType(positionsFitInI32(op.getPatternAttr(), op.getMaskShape())
                         ? b.getI32Type()
                         : b.getI64Type()) {
    pagedKeys = op.getKey().getDefiningOp<PagedKvOp>();
    pagedValues = op.getValue().getDefiningOp<PagedKvOp>();
    readsPages = pagedKeys && pagedValues &&
                 pagedKeys.getTable() == pagedValues.getTable() &&
                 pagedKeys.getLength() == pagedValues.getLength() &&
                 pagedKeys.getPageRows() == pagedValues.getPageRows();
    // Pair products read V transposed whole, once per call: a paged cache
    // would be copied on every call (every decode step), so its bf16
    // kernels widen rows as they read them instead.
    usesAmx = amx && !readsPages && amxCovers();
    usesDot = !usesAmx && bf16Dot && !readsPages && amxCovers();
  }

  /// Emits the kernel; returns the result tensor (and the rows' log-sum-exp
  /// when the attention has one; `packed` and `split` must be null then).
  /// With `packed` (a kernel
  /// built with packHeads for the same op), calls whose query heads per
  /// group times queries fit its query vector run that one instead; with
  /// `split` (packHeads and splitKeys) too, when batch x key/value heads
  /// gives the threads too little to share, each group's keys are split.
  SmallVector<Value, 2> build(ModuleOp module, CpuFlashKernel *packed = nullptr,
                              CpuFlashKernel *split = nullptr);

private:
  func::FuncOp buildTileFunction(ModuleOp module);
  /// splitKeys: the partial states of a group's key ranges, merged by
  /// their log-sum-exp weights and stored as packed heads.
  func::FuncOp buildMergeFunction(ModuleOp module);
  /// splitKeys: this call's (acc, m, l) into its slot of `partial`.
  void storePartial(Value accT, Value m, Value l);
  /// The number of key ranges for a packed call (1: no split), from the
  /// sizes at run time.
  Value numKeySplits(Value batch, Value keyHeads, Value keys, Value width);
  /// packHeads with acc by query row: acc[g] = alpha[g] acc[g] +
  /// sum_r P^T[r][g] V[j0 + r], lanes over the head dim, blocks of 4 rows
  /// x up to 4 vectors (one broadcast of P per row and key, one load of V
  /// per vector and key, instead of a broadcast of V per FMA).
  void accumulateByRows(Value sT, Value accT, Value j0, Value tk,
                        bool guarded);
  /// packHeads: Q rows of the group into qT lanes (g * Lq + i), and the
  /// result back out of them.
  void packGroupQueries(Value qT, Value groups);
  /// scoresByRows: the same rows, scaled, into qRows[g * Lq + i][:] (rows
  /// past the group zero), and sT's lanes zeroed once.
  void packGroupQueryRows(Value sT, Value groups);
  /// scoresByRows: sT[r][g] = K[j0 + r] . qRows[g] with lanes over the
  /// head dim, in blocks of 4 query rows x (lanes / 4) keys whose partial
  /// sums transposeSum reduces to one vector (1 FMA per 16 products; the
  /// broadcast form spends 1 per group row count, 4 of 16 lanes in GQA).
  void computeScoresByRows(Value sT, Value j0, Value tk);
  /// Lane i of the result = the sum of vectors[i]'s lanes, for kLanes
  /// vectors: log2(kLanes) levels of two shuffles and an add per pair.
  Value transposeSum(ArrayRef<Value> vectors);
  void storeGroupOutput(Value accT, Value l, Value groups);
  /// `keyLength`: the keys when K is not [B, H, keys, D] (a paged pool).
  void setUpSizes(Value queryBuf, Value keyBuf, Value valueBuf,
                  Value keyLength = {});
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
  /// An element of Q, K or V as f32 (f16 / bf16 inputs widen on load).
  Value loadAsF32(Value memref, ValueRange indices) {
    Value x = memref::LoadOp::create(b, memref, indices);
    return x.getType().isF32() ? x : arith::ExtFOp::create(b, f32, x);
  }
  /// K's and V's buffer types as the tile functions take them: the pools
  /// when the kernel reads a paged cache.
  MemRefType keyBufferType() {
    return bufferTypeOf(readsPages ? pagedKeys.getPool() : op.getKey());
  }
  MemRefType valueBufferType() {
    return bufferTypeOf(readsPages ? pagedValues.getPool() : op.getValue());
  }
  /// Where row `row` of this call's (batch, KV head) of K or V lies: the
  /// first and third indices of its buffer ({batch, row}, or the row's page
  /// and its row in the page when the kernel reads a paged cache).
  std::pair<Value, Value> kvRow(Value row);
  SmallVector<Value> kvIndices(std::pair<Value, Value> at, Value c) {
    return {at.first, kvHead, at.second, c};
  }
  Value dim(Value memref, int64_t d) {
    return b.createOrFold<memref::DimOp>(memref, d);
  }
  Value loadVec(Value memref, ValueRange indices) {
    return vector::LoadOp::create(b, vec, memref, indices);
  }
  /// A vector of K or V as f32 (16-bit rows widen lane by lane).
  Value loadVecAsF32(Value memref, ValueRange indices) {
    Type element = cast<MemRefType>(memref.getType()).getElementType();
    if (element == f32)
      return loadVec(memref, indices);
    Value narrow = vector::LoadOp::create(
        b, VectorType::get({kLanes}, element), memref, indices);
    return arith::ExtFOp::create(b, vec, narrow);
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
  SmallVector<Value>
  blockedUpdates(Value ub, ArrayRef<Value> init, int64_t rows,
                 function_ref<Value(Value, int64_t)> vectorAt,
                 function_ref<Value(Value, int64_t)> scalarAt,
                 function_ref<Value(Value)> laneGuard = {});
  /// acc^T rows [c0, c0 + cols) times alpha, as register-block
  /// accumulators (cols x kQueryVectors), and their store back.
  SmallVector<Value> loadScaledAccumulators(Value accT, Value c0, int64_t cols,
                                            ArrayRef<Value> alpha);
  void storeAccumulators(ArrayRef<Value> sums, Value accT, Value c0,
                         int64_t cols);
  /// body(start, rows) over [0, total) in blocks of `block` rows (0:
  /// kRowBlock), then the rest in blocks of 4 and 2 and single rows.
  void forRowBlocks(Value total, function_ref<void(Value, int64_t)> body,
                    int64_t block = 0);
  /// then() or otherwise(), chosen at compile time when `condition` is a
  /// constant, else by an scf.if.
  void emitChoice(Value condition, function_ref<void()> then,
                  function_ref<void()> otherwise);

  /// qT[c][q] = scale * Q[b, h, i0 + q, c], zero past tq.
  void packQueries(Value qT, Value tq);
  void packQueryBlocks(Value qT, int64_t width);
  void packQueriesByElement(Value qT, Value tq);

  // bf16 pair products: AMX (CpuFlashKernelAmx.cpp) or vdpbf16ps
  // (CpuFlashKernelDot.cpp). Both read Q, P and V^T as pairs along the sum.
  /// Whether this kernel's products fit AMX tiles (bf16, static head dims
  /// of whole tiles, the per-query-tile kernel); the dot path covers the
  /// same.
  bool amxCovers();
  bool usesPairs() const { return usesAmx || usesDot; }
  int64_t headDimStatic() {
    return cast<ShapedType>(op.getQuery().getType()).getDimSize(3);
  }
  int64_t valueDimStatic() {
    return cast<ShapedType>(op.getValue().getType()).getDimSize(3);
  }
  /// V transposed, [B][Hkv][Dv][keys padded to whole key tiles], and per
  /// (batch, head, key tile) an i8 that is 1 when all its values are
  /// finite; in parallel, emitted before the forall over tiles.
  std::pair<Value, Value> transposeValues(Value valueBuf);
  /// qPairs = Q^T of the tile in bf16 as pairs of dims (times the scale
  /// unless scoresUnscaled).
  void packQueryPairs(Value tq);
  /// sT = K_tile qPairs on AMX tiles.
  void computeScoresAmx(Value sT, Value j0, Value tk);
  /// The B operand of both AMX products: pair rows [16 s, 16 s + 16) and
  /// query columns [q0 + 16 j, q0 + 16 j + 16) of qPairs or pPairs.
  Value loadPairTile(Value pairs, int64_t s, Value q0, int64_t j);
  /// accT = alpha accT + vT_tile pPairs on AMX tiles (pPairs: P^T in
  /// bf16 as pairs of keys, written by updateSoftmaxAndAccumulate).
  void accumulateAmx(Value accT, Value j0, ArrayRef<Value> alpha);
  /// The same products with vdpbf16ps: register blocks as blockedUpdates,
  /// each update a dot of a pair vector with a broadcast pair.
  void computeScoresDot(Value sT, Value j0, Value tk);
  void accumulateDot(Value accT, Value j0, Value tk, ArrayRef<Value> alpha);
  SmallVector<Value> blockedDots(Value ub, ArrayRef<Value> init, int64_t rows,
                                 function_ref<Value(Value, int64_t)> pairsAt,
                                 function_ref<Value(Value, int64_t)> pairAt);
  /// The two bf16 at `indices` (and the next) in every 32-bit lane.
  Value broadcastPair(Value memref, ValueRange indices);
  /// packHeads: the key and value rows of the key tile after j0 are asked
  /// for while this one is computed (one group reads each row once, so
  /// decoding is bound by memory: without it the loads wait on DRAM).
  void prefetchNextKeyTile(Value j0);
  /// Prefetches rows [r0, r0 + rows) after key j0 of K and (unless
  /// `values` is false) V.
  void prefetchKeyRows(Value j0, Value r0, Value rows, bool values = true);
  /// Prefetches row j0 + r (clamped to the last key) of K or V, whose rows
  /// are `width` long, into L2.
  void prefetchRow(Value buffer, Value width, Value j0, Value r);
  /// How far ahead scoresByRows kernels prefetch, in key tiles.
  static constexpr int64_t kPrefetchTiles = 3;
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
  /// The op's per-key bias and score mods on every score of the tile,
  /// lane-wise, in the order of docs/Dialect.md (softcap, bias, the other
  /// mods). Returns whether the bias dropped a key (an i1: some bias of the
  /// tile is -inf), or null without a bias.
  Value applyMods(Value sT, Value j0, Value tk);
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
  /// exp(x - shift) lane-wise for x <= shift (softmax weights): exact 0
  /// at x = -inf, NaN kept, relative error under 1e-7.
  Value softmaxExp(Value x, Value shift);
  /// `mayDropKeys` (i1): whether the tile may hold dropped (-inf) scores,
  /// whose value rows must then not be read into the sum at all.
  void updateSoftmaxAndAccumulate(Value sT, Value m, Value l, Value accT,
                                  Value j0, Value tk, Value mayDropKeys);
  /// The tile's rows of the output (acc / l) and their log-sum-exp.
  void storeOutput(Value accT, Value m, Value l, Value tq);
  void storeOutputBlocks(Value accT, Value l, int64_t width);
  void storeOutputByRow(Value accT, Value l, Value tq);
  /// out[b, head, row, :] = acc of lane `column` / l[column] (0 when l is:
  /// a row that kept nothing), acc laid out as accByRows says.
  void storeRow(Value accT, Value l, Value column, Value head, Value row);

  OnlineAttentionOp op;
  bool packsHeads, splitsKeys;
  bool usesAmx = false, usesDot = false;
  /// K and V come from attn.paged_kv of one table and length, and the
  /// kernel reads their pools through the table (kvRow).
  PagedKvOp pagedKeys, pagedValues;
  bool readsPages = false;
  Value pageTable, numPages;   // readsPages: [B, max pages], the pool's pages
  RankedTensorType resultType; // of the whole attention, [B, Hq, Lq, Dv]
  RankedTensorType lseType;    // [B, Hq, Lq], or null without an lse result
  const KernelPlan &plan;
  ImplicitLocOpBuilder b;
  int64_t keyTile;
  const int64_t kLanes, kQueryVectors, kRowBlock, kQueryTile;
  Type f32;
  VectorType vec;
  Type positionType; // lanes of positional mask arithmetic

  // Values of the tile function being built.
  MaskAttrInterface pattern;
  Value query, key, value, out, lseOut;
  Value queryLen, headDim, valueDim, keyLen, delta, scale;
  Value batchIv, headIv, kvHead, i0;
  Value queryEnd; // end of the query rows a tile's lanes cover
  Value keyBegin, keyEnd; // the keys this call visits
  Value partial, split, numSplits; // splitKeys: [slot][Dv + 2][lanes]
  bool accByRows = false;  // acc[lane][Dv] instead of accT[Dv][lane]
  Value alphaLanes;        // accByRows: this tile's alpha, per lane
  Value packedRows;        // accByRows: the lanes in use, G * Lq
  bool scoresByRows = false; // S by dot products of Q rows and K rows
  Value qRows;               // scoresByRows: [lanes][D], scaled Q rows
  ModuleOp module;
  Value qSegments, kvSegments;  // [B, L] id buffers, when used
  Value relTable;               // [Hq, columns], when a mod reads it
  Value bias;                   // [B|1, Hq|1, 1, Lk], when the op has one
  Value maskOperand;            // [B|1, Hq|1, 1, Lk] i1, when the op has one
  SmallVector<Value> queryIds;  // per query vector, vector of i64
  Value queryIdMin, queryIdMax; // over the real queries of the tile
  Value counters;               // memref<2xindex>, when counting
  Value qPairs, pPairs, valuesT; // pair products' operands (bf16)
  Value keyTail;                 // AMX: the last 16 key rows, zero-padded
  Value finiteValueTiles;        // pair products: [B][Hkv][key tiles] i8
  /// Whether sT holds unscaled scores (the scale is in exponentScale).
  bool scoresUnscaled = false;
  Value exponentScale; // f32: log2 e, times the scale when scoresUnscaled
  memref::GlobalOp rowStartTable, entryTable;
};

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOCPU_CPUFLASHKERNEL_H
