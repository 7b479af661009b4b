//===- CpuBackwardKernel.h - the fused CPU backward -----------*- C++ -*-===//
//
// The emitter behind attn-attention-grad-to-cpu (AttentionGradToCpu.cpp,
// whose file comment describes the kernel): CpuBackwardKernel builds the
// work function of one (batch, key/value head, split), the dQ reduction
// and the forall calls of one attn.attention_grad (CpuBackwardKernel.cpp;
// its tile lists, segment ids and operand lanes: CpuBackwardKernelMasks.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOCPU_CPUBACKWARDKERNEL_H
#define ATTN_CONVERSION_ATTNTOCPU_CPUBACKWARDKERNEL_H

#include "attn/Analysis/TargetDescription.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::attn {

/// Rows of a query tile and of a key tile (the generic backward's and the
/// tile statistics' tiles).
constexpr int64_t kBackwardTile = 64;

class CpuBackwardKernel {
public:
  CpuBackwardKernel(AttentionGradOp op, const TargetDescription &target,
                    bool countTiles)
      : op(op), b(op.getLoc(), op), countTiles(countTiles),
        kLanes(target.f32Lanes()),
        kBlockVectors(target.vectorRegisters >= 32 ? 4 : 2),
        f32(b.getF32Type()), vec(VectorType::get({kLanes}, f32)),
        headDim(cast<ShapedType>(op.getQuery().getType()).getDimSize(3)),
        valueDim(cast<ShapedType>(op.getValue().getType()).getDimSize(3)),
        paddedHeadDim(llvm::alignTo(headDim, kLanes)),
        paddedValueDim(llvm::alignTo(valueDim, kLanes)) {
    if (ArrayAttr mods = op.getModsAttr())
      for (Attribute mod : mods)
        if (auto softcap = dyn_cast<SoftcapAttr>(mod))
          cap = softcap.getCap().convertToFloat();
  }

  /// dQ, dK, dV as tensors of the op's result types.
  SmallVector<Value> build(ModuleOp module);

private:
  /// The work of one (batch, key/value head, split).
  func::FuncOp buildWorkFunction(ModuleOp module);
  /// dQ[batch, head] = sum over splits of the partial dQ, converted.
  func::FuncOp buildReduceFunction(ModuleOp module);
  /// Everything of key tile `keyTileIndex`: its sums, the query tiles
  /// that keep something of it, its dK and dV rows.
  void emitKeyTile(Value keyTileIndex);
  /// With static sizes and a pattern the same for every head: the query
  /// tiles of each key tile, listed at compile time (the forward's
  /// TileSchedule, transposed) as two i32 globals, columnStart[key tiles +
  /// 1] and entries (query tile * 2 + 1 if full). False without one (the
  /// query tiles are then classified at run time).
  bool buildSchedule(ModuleOp module);
  memref::GlobalOp createTable(ModuleOp module, StringRef name,
                               ArrayRef<int32_t> data);
  /// Everything of one (query head, query tile) against the key tile.
  void visitTile(Value head, Value i0, Value tq, Value needsMask);
  /// probs = P of the tile's rows (and slopes with a soft-cap); `masked`
  /// evaluates the pattern and the key bound per score.
  void computeProbabilities(Value head, Value i0, Value tq, bool masked);
  /// scoreGrads = dS of the tile's rows.
  void computeScoreGrads(Value tq);
  /// acc[r][:] += sum_{k < depth} weights[k][r] x[k][:] for r < kBackwardTile:
  /// dV (weights P, x dO) and dK (weights dS, x Q).
  void accumulateTransposed(Value acc, Value weights, Value x, int64_t nVectors,
                            Value depth);

  /// The register-blocked product: for rows [0, rows) and vector columns
  /// [0, nVectors), acc = init(r, t); for k < depth, acc[g][t] +=
  /// broadcast(aAt(k, r0 + g)) * bAt(k, t); then finish(r, t, acc).
  void blockedProduct(Value rows, int64_t nVectors, Value depth,
                      function_ref<Value(Value, int64_t)> init,
                      function_ref<Value(Value, Value)> aAt,
                      function_ref<Value(Value, int64_t)> bAt,
                      function_ref<void(Value, int64_t, Value)> finish);

  /// dst[dstRow][0, width) = src[prefix..., 0, width) widened to f32
  /// (whole vectors, then single elements); with `finiteOnly`, non-finite
  /// values become 0.
  void copyRow(Value src, ValueRange prefix, Value dst, Value dstRow,
               int64_t width, bool finiteOnly = false);
  /// dst[prefix..., 0, width) = src[srcRow][0, width), narrowed to dst's
  /// element type.
  void storeRow(Value src, Value srcRow, Value dst, ValueRange prefix,
                int64_t width);
  /// Zeros a [rows][columns] scratch buffer.
  void zero(Value buffer);

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value f32Const(float v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value vecConst(float v) {
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(vec, b.getF32FloatAttr(v)));
  }
  Value splat(Value scalar) {
    return vector::BroadcastOp::create(
        b, VectorType::get({kLanes}, scalar.getType()), scalar);
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
  Value lane(int64_t t) { return index(t * kLanes); }
  Value loadScalar(Value memref, ValueRange indices) {
    Value x = memref::LoadOp::create(b, memref, indices);
    return x.getType().isF32() ? x : arith::ExtFOp::create(b, f32, x);
  }
  /// Key positions j0 + t * lanes + [0, lanes), as a vector of index.
  Value keyPositions(int64_t t);
  /// The [B|1, Hq|1, Lq|1, Lk] operand's indices of (batch, head, query
  /// row) and its first key j: dims of size 1 broadcast.
  SmallVector<Value> operandRow(Value buffer, Value head, Value row, Value j);
  /// Lanes [j, j + lanes) of the bias row as f32 (0 past the keys).
  Value biasLanes(Value head, Value row, Value j);
  /// Lanes [j, j + lanes) of the boolean mask row (false past the keys);
  /// i1 elements are bytes, so they are read one by one.
  Value maskLanes(Value head, Value row, Value j);
  /// Segment ids: the id at `position` of batch row batchIv as i64, the
  /// (min, max) of ids[first, first + count), and the key ids of lanes
  /// [j, j + lanes) as i64.
  Value segmentId(Value ids, Value position);
  std::pair<Value, Value> idRange(Value ids, Value first, Value count);
  Value keySegmentLanes(Value j);
  SmallVector<Value> concat(ValueRange prefix, ArrayRef<Value> rest) {
    SmallVector<Value> all(prefix.begin(), prefix.end());
    all.append(rest.begin(), rest.end());
    return all;
  }

  AttentionGradOp op;
  ImplicitLocOpBuilder b;
  bool countTiles;
  const int64_t kLanes, kBlockVectors;
  static constexpr int64_t kBlockRows = 6;
  Type f32;
  VectorType vec;
  const int64_t headDim, valueDim, paddedHeadDim, paddedValueDim;
  std::optional<float> cap; // the soft-cap, if any

  // Values of the work function being built.
  Value query, key, value, output, outputGrad, lse, keyGrad, valueGrad, partial;
  Value batchIv, kvHead, split, numSplits;
  Value bias, mask;            // the operands' buffers, when given
  Value qSegments, kvSegments; // segment id buffers [B, L], when given
  Value queryLen, keyLen, groups, delta, scale, numHeads;
  Value j0, tk; // the key tile
  // Scratch: [D][64] K^T, [Dv][64] V^T, [64][Dp] K rows, [64][Dp] Q rows,
  // [64][Dvp] dO rows, [64][64] P, dS and soft-cap slopes, [64][Dp] and
  // [64][Dvp] dK and dV sums, [64] D and lse of the rows.
  Value keysT, valuesT, keyRows, queryRows, gradRows, probs, scoreGrads, slopes,
      keyGradSum, valueGradSum, rowDot, rowLse;
  Value counter; // memref<1xindex>, when counting tiles
  memref::GlobalOp columnStartTable, entryTable; // buildSchedule's
};

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOCPU_CPUBACKWARDKERNEL_H
