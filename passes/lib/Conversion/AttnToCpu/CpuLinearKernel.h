//===- CpuLinearKernel.h - feature-map attention kernels for CPUs -*- C++ -*-===//
//
// The emitter behind attn-kernelized-to-cpu (KernelizedToCpu.cpp):
// attn.kernelized with an element-wise feature map (elu + 1, ReLU), RFA or
// causal FAVOR+ as register-blocked vector code. Its methods live in
// CpuLinearKernel.cpp (feature maps, the non-causal functions, the calls)
// and CpuLinearKernelCausal.cpp (the causal function).
//
//
//   O_i = phi(q_i) S / (phi(q_i) . z),  S = phi(K)^T V,  z = sum_j phi(k_j)
//
// Non-causal:
//   forall (batch, key/value head):                  -- the state
//     S, z = 0
//     for each tile of kKeyTile keys:
//       phi of the tile into a scratch [keys][D], its column sums into z
//       S[f0 : f0 + R, e-chunk] += sum_j phi[j][f0 + r] V[j, e-chunk]:
//         R x E vectors of S in registers, a broadcast of phi per row and
//         key, E loads of V's row (read in place) per key
//   forall (batch, query head, block of kQueryBlock rows):   -- the output
//     phi of the block into a scratch, and phi(q_i) . z per row
//     O[i0 : i0 + R, e-chunk] = sum_f phi[i0 + r][f] S[f, e-chunk], divided
//       by the row's denominator as it is stored (0 where it is 0)
//
// Causal (j <= i), one call per (batch, key/value head) over chunks of
// kCausalChunk rows, S and z holding the chunks before:
//     phi(K_c) into a scratch and, transposed through registers, [m][C]
//     for each query head of the group:
//       phi(Q_c), den_i = phi(q_i) . z + sum_{j <= i} scores[i][j],
//       scores[i][j] = phi(q_i) . phi(k_j) masked to j <= i (blocks of
//         query rows x vectors of keys)
//       O_c = (phi(Q_c) S + scores V_c) / den
//     S += phi(K_c)^T V_c, z += sum phi(K_c)
//
// The random maps' features are products with s W^T (transposed once
// before the calls): RFA's [sin(p), cos(p)] / sqrt(m); FAVOR+'s
// exp(p - s^2 |x|^2 / 2 - max) / sqrt(m), queries subtracting their row's
// maximum (it cancels in the quotient), keys the largest exponent seen so
// far, carried by the chunk loop: S and z are rescaled by exp(old - new)
// when it grows.
//
// Each of K, V, Q is read once and O written once: the decomposition
// (DecomposeKernelized.cpp) wrote and re-read phi(Q), phi(K), the
// numerator and the denominators as whole tensors, and the GEMM packed
// copies of V and phi(Q). Head dims must be whole vectors (static);
// non-causal FAVOR+ (two softmax attentions) is left for the decomposition.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOCPU_CPULINEARKERNEL_H
#define ATTN_CONVERSION_ATTNTOCPU_CPULINEARKERNEL_H

#include "LoopBuilder.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::attn {

class CpuLinearKernel {
public:
  /// Keys per feature tile: phi of the tile and V's rows (64 x 64 floats,
  /// 16 KiB each at D = Dv = 64) stay in L1 while S's blocks sweep them.
  static constexpr int64_t kKeyTile = 64;
  /// Query rows per call of the output loop: enough calls to share among
  /// the threads, phi of the block (16 KiB at D = 64) in L1.
  static constexpr int64_t kQueryBlock = 64;
  /// The largest head dim and feature count the kernel takes: its phi
  /// scratches (64 x features floats, 256 KiB at 1024) live on the worker
  /// threads' stacks.
  static constexpr int64_t kMaxHeadDim = 1024;
  /// Rows per chunk of the causal kernel: the masked scores inside a chunk
  /// cost C per row, S's update 2 D Dv / C per row.
  static constexpr int64_t kCausalChunk = 64;
  /// Key tiles per range at least when the non-causal state is split.
  static constexpr int64_t kMinSplitTiles = 4;
  /// The most heap the parallel causal form's chunk states may take (one
  /// [m, Dv] state per chunk: 16 KiB at m = Dv = 64).
  static constexpr int64_t kMaxChunkStateBytes = int64_t(256) << 20;
  // The parallel causal form builds each chunk's state with the state
  // function, one key tile per range.
  static_assert(kKeyTile == kCausalChunk, "chunk states are key tiles");

  CpuLinearKernel(KernelizedOp op, int64_t lanes)
      : op(op), b(op.getLoc(), op), lanes(lanes), f32(b.getF32Type()),
        vec(VectorType::get({lanes}, f32)),
        headDim(cast<ShapedType>(op.getQuery().getType()).getDimSize(3)),
        projections(op.getOmega() ? cast<ShapedType>(op.getOmega().getType())
                                        .getDimSize(0)
                                  : 0),
        featureDim(op.getFeatureMap() == FeatureMap::rfa ? 2 * projections
                   : projections                           ? projections
                                                           : headDim),
        valueDim(cast<ShapedType>(op.getValue().getType()).getDimSize(3)) {}

  /// Whether the kernel covers `op` with vectors of `lanes` floats.
  static bool covers(KernelizedOp op, int64_t lanes);
  /// Emits the kernel's loops before `op`; returns its result.
  Value build(ModuleOp module);

private:
  /// Non-causal: S and z of one (batch, key/value head).
  func::FuncOp buildStateFunction(ModuleOp module, StringRef prefix);
  /// Non-causal: O of one (batch, query head, block of query rows).
  func::FuncOp buildOutputFunction(ModuleOp module, StringRef prefix);
  /// Causal: O of every query head of one (batch, key/value head), chunk
  /// by chunk, S and z carrying the chunks before.
  func::FuncOp buildCausalFunction(ModuleOp module, StringRef prefix);
  /// Causal, chunks in parallel (B x Hkv below the threads; not FAVOR+,
  /// whose running maximum is sequential): the outputs of one (batch,
  /// key/value head, chunk) from the chunk states' exclusive prefix sums.
  func::FuncOp buildCausalChunkFunction(ModuleOp module, StringRef prefix);
  /// The causal functions' stack scratches and the lane indices.
  struct CausalScratch {
    Value phiK, phiKT, phiQ, scores, denominators, laneIds;
  };
  CausalScratch causalScratch();
  /// Rows [count, C) of phiK zeroed (keys past the end), then phiKT =
  /// phiK^T through registers for the scores' loads along the keys.
  void transposeKeyFeatures(const CausalScratch &s, Value count);
  /// The outputs of the chunk at c0 for every query head of the group:
  /// phi(Q), the scores masked to j <= i, phi(Q) S + scores V over
  /// denominators, S and z of the chunks before at `slot`.
  void chunkOutputs(const CausalScratch &s, Value query, Value value,
                    Value state, Value sums, Value slot, Value out,
                    Value batch, Value head, Value groups, Value c0,
                    Value chunkQueries, Value chunkKeys);
  /// (queries, keys) of the chunk at c0.
  std::pair<Value, Value> chunkRows(Value c0, Value queryLen, Value keyLen);
  /// A private function with an entry block the builder is set to.
  func::FuncOp createFunction(ModuleOp module, StringRef name,
                              ArrayRef<Type> argTypes);

  /// phi of rows [r0, r0 + count) of `source` [B, H, L, D] into phi[j][:];
  /// returns their column sums. `eachRow(j)` is emitted first per row.
  SmallVector<Value> writeFeatures(Value source, Value batch, Value head,
                                   Value r0, Value count, Value phi,
                                   function_ref<void(Value)> eachRow = {});
  /// The random maps' features of rows [r0, r0 + count) of `source` into
  /// phi[i][:] and their column sums: RFA [sin p, cos p] / sqrt(m), FAVOR+
  /// exp(p - s^2 |x|^2 / 2 - max) / sqrt(m), p = s x . w. FAVOR+ queries
  /// (no runningMax) subtract their row's maximum; keys the largest of
  /// runningMax and their exponents, which is returned.
  Value writeRandomFeatures(Value source, Value batch, Value head, Value r0,
                            Value count, Value phi, Value runningMax,
                            SmallVector<Value> &columnSums);
  /// phi of rows [r0, r0 + count) of `source` into phi[i][:] by the op's
  /// feature map (FAVOR+ subtracting each row's maximum); returns their
  /// column sums.
  SmallVector<Value> features(Value source, Value batch, Value head, Value r0,
                              Value count, Value phi,
                              function_ref<void(Value)> eachRow = {});
  /// z[batch, head, :] += columnSums.
  void addToSums(Value sums, Value batch, Value head,
                 ArrayRef<Value> columnSums);
  /// S[slot, head, f, :] += sum_{j < count} phi[j][f] V[batch, head,
  /// j0 + j, :], in register blocks of S's rows.
  void accumulateState(Value state, Value slot, Value head, Value phi,
                       Value value, Value batch, Value j0, Value count);
  /// The number of key ranges the non-causal state is split into: as many
  /// (batch, key/value head, range) calls as the OpenMP runtime has
  /// threads when B x Hkv is fewer, each over at least kMinSplitTiles key
  /// tiles.
  Value numKeySplits(ModuleOp module, Value calls, Value keys);
  /// S = 0, z = 0 for (batch, head).
  void zeroState(Value state, Value sums, Value batch, Value head);
  /// phi[row][:] . z.
  Value dotWithSums(Value phi, Value row, ArrayRef<Value> z);
  /// Rows r0 + r of a register block (rows x vectors, columns from
  /// firstVector) divided by denominators[r0 + r] into out rows i0 + r0 + r
  /// (0 where the denominator is 0).
  void storeQuotients(ArrayRef<Value> acc, int64_t rows, int64_t vectors,
                      Value denominators, Value r0, Value out, Value batch,
                      Value queryHead, Value i0, int64_t firstVector);
  MemRefType bufferType(Value tensor) const {
    auto type = cast<ShapedType>(tensor.getType());
    return MemRefType::get(type.getShape(), type.getElementType());
  }
  /// S [B, Hkv, features, Dv] and z [B, Hkv, features].
  MemRefType stateType() const {
    int64_t dyn = ShapedType::kDynamic;
    return MemRefType::get({dyn, dyn, featureDim, valueDim}, f32);
  }
  MemRefType sumsType() const {
    return MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic,
                            featureDim},
                           f32);
  }
  /// s W^T for FAVOR+ and RFA ([D, m]; [D, 0] unused otherwise).
  MemRefType omegaTType() const {
    return MemRefType::get({headDim, projections}, f32);
  }
  /// Offset of vector t along a row.
  Value lane(int64_t t) { return index(t * lanes); }
  /// phi on a vector of Q or K.
  Value featureMap(Value x);
  /// Rows of a register block whose rows hold `vectors` accumulators: the
  /// accumulators, `vectors` loaded operands and one broadcast fill the
  /// register file (32 registers with AVX-512, 16 with AVX2).
  int64_t rowsFor(int64_t vectors) const {
    int64_t registers = lanes >= 16 ? 32 : 16;
    return std::min<int64_t>(12, (registers - 1 - vectors) / vectors);
  }
  /// Chunks of `total` vectors as (first vector, vectors): 4 vectors with
  /// AVX-512, 2 with AVX2, the last one shorter.
  SmallVector<std::pair<int64_t, int64_t>> vectorChunks(int64_t total) const;
  /// The chunks of Dv.
  SmallVector<std::pair<int64_t, int64_t>> valueChunks() const {
    return vectorChunks(valueDim / lanes);
  }
  /// for iv < ub: acc[r * E + t] += scalarAt(iv, r) * vectorAt(iv, t),
  /// acc carried in registers.
  SmallVector<Value> blockedUpdates(Value ub, ArrayRef<Value> init,
                                    int64_t rows, int64_t vectors,
                                    function_ref<Value(Value, int64_t)> vectorAt,
                                    function_ref<Value(Value, int64_t)> scalarAt);
  /// body(start, rows) over [0, total) in blocks of `block` rows, then the
  /// rest in blocks of 4 and 2 and single rows (a lone row has too few
  /// independent accumulators for both FMA pipes).
  void forRowBlocks(Value total, int64_t block,
                    function_ref<void(Value, int64_t)> body);

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value vecConst(float v) {
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(vec, b.getF32FloatAttr(v)));
  }
  Value add(Value x, Value y) { return b.createOrFold<arith::AddIOp>(x, y); }
  Value sub(Value x, Value y) { return b.createOrFold<arith::SubIOp>(x, y); }
  Value mul(Value x, Value y) { return b.createOrFold<arith::MulIOp>(x, y); }
  Value dim(Value memref, int64_t d) {
    return b.createOrFold<memref::DimOp>(memref, d);
  }
  Value loadVec(Value memref, ValueRange indices) {
    return vector::LoadOp::create(b, vec, memref, indices);
  }
  void storeVec(Value value, Value memref, ValueRange indices) {
    vector::StoreOp::create(b, value, memref, indices);
  }
  Value broadcastAt(Value memref, ValueRange indices) {
    return vector::BroadcastOp::create(
        b, vec, memref::LoadOp::create(b, memref, indices));
  }
  scf::ForOp loop(Value lb, Value ub, int64_t step, ValueRange init,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return buildLoop(b, lb, ub, index(step), init, body);
  }
  void forEach(Value lb, Value ub, int64_t step,
               function_ref<void(Value)> body) {
    loop(lb, ub, step, {}, [&](Value iv, ValueRange) {
      body(iv);
      return SmallVector<Value>{};
    });
  }
  /// Asks for the cache lines of row `row` of buffer [B, H, L, width]
  /// (rows past the last one clamped to it) into L2: into L1 they evicted
  /// the tile's phi, V and S lines (elu + 1 at 16384 keys 2.5 % slower).
  void prefetchRow(Value buffer, Value batch, Value head, Value row,
                   Value rows, int64_t width) {
    Value clamped = b.createOrFold<arith::MinUIOp>(row, sub(rows, index(1)));
    // 16 floats per 64-byte line, and the row's last element for a row
    // that ends inside a line.
    SmallVector<int64_t> columns;
    for (int64_t c = 0; c < width; c += 16)
      columns.push_back(c);
    if (width % 16)
      columns.push_back(width - 1);
    for (int64_t c : columns)
      memref::PrefetchOp::create(b, buffer,
                                 ValueRange{batch, head, clamped, index(c)},
                                 /*isWrite=*/false, /*localityHint=*/2,
                                 /*isDataCache=*/true);
  }
  Value scratch(ArrayRef<int64_t> shape) {
    return memref::AllocaOp::create(b, MemRefType::get(shape, f32),
                                    ValueRange{}, b.getI64IntegerAttr(64));
  }

  KernelizedOp op;
  ImplicitLocOpBuilder b;
  int64_t lanes;
  Type f32;
  VectorType vec;
  /// D of Q and K, omega's rows, phi's width (FAVOR+ m, RFA 2m, the
  /// element-wise maps D), Dv.
  int64_t headDim, projections, featureDim, valueDim;
  /// FAVOR+ and RFA: s W^T [D, m], an argument of the kernel functions.
  Value omegaT;
};

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOCPU_CPULINEARKERNEL_H
