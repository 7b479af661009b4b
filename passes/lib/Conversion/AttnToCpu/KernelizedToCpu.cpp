//===- KernelizedToCpu.cpp - feature-map attention on CPUs ----------------===//
//
// attn-kernelized-to-cpu: attn.kernelized with an element-wise feature map
// (elu + 1, ReLU), RFA or causal FAVOR+ as register-blocked vector code,
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
#include "LoopBuilder.h"
#include "VectorTranspose.h"
#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNKERNELIZEDTOCPU
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Keys per feature tile: phi of the tile and V's rows (64 x 64 floats,
/// 16 KiB each at D = Dv = 64) stay in L1 while S's blocks sweep them.
constexpr int64_t kKeyTile = 64;
/// Query rows per call of the output loop: enough calls to share among
/// the threads, phi of the block (16 KiB at D = 64) in L1.
constexpr int64_t kQueryBlock = 64;
/// The largest head dim and feature count the kernel takes: its phi
/// scratches (64 x features floats, 256 KiB at 1024) live on the worker
/// threads' stacks.
constexpr int64_t kMaxHeadDim = 1024;
/// Rows per chunk of the causal kernel: the masked scores inside a chunk
/// cost C per row, S's update 2 D Dv / C per row.
constexpr int64_t kCausalChunk = 64;
/// Key tiles per range at least when the non-causal state is split.
constexpr int64_t kMinSplitTiles = 4;

class KernelizedEmitter {
public:
  KernelizedEmitter(KernelizedOp op, int64_t lanes)
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

bool KernelizedEmitter::covers(KernelizedOp op, int64_t lanes) {
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

Value KernelizedEmitter::featureMap(Value x) {
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
KernelizedEmitter::vectorChunks(int64_t total) const {
  int64_t widest = lanes >= 16 ? 4 : 2;
  SmallVector<std::pair<int64_t, int64_t>> chunks;
  for (int64_t first = 0; first < total; first += widest)
    chunks.push_back({first, std::min(widest, total - first)});
  return chunks;
}

SmallVector<Value> KernelizedEmitter::blockedUpdates(
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

void KernelizedEmitter::forRowBlocks(Value total, int64_t block,
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

SmallVector<Value> KernelizedEmitter::writeFeatures(
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

Value KernelizedEmitter::writeRandomFeatures(Value source, Value batch,
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

SmallVector<Value> KernelizedEmitter::features(Value source, Value batch,
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

void KernelizedEmitter::addToSums(Value sums, Value batch, Value head,
                                  ArrayRef<Value> columnSums) {
  for (int64_t t = 0; t < featureDim / lanes; ++t) {
    Value sum = loadVec(sums, {batch, head, lane(t)});
    storeVec(arith::AddFOp::create(b, sum, columnSums[t]), sums,
             {batch, head, lane(t)});
  }
}

void KernelizedEmitter::accumulateState(Value state, Value slot, Value head,
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

Value KernelizedEmitter::numKeySplits(ModuleOp module, Value calls,
                                      Value keys) {
  Value byKeys = b.createOrFold<arith::DivUIOp>(
      b.createOrFold<arith::CeilDivUIOp>(keys, index(kKeyTile)),
      index(kMinSplitTiles));
  // Too few keys for two ranges: no split, whatever the threads.
  if (matchPattern(byKeys, m_Zero()) || matchPattern(byKeys, m_One()))
    return index(1);
  if (!module.lookupSymbol("omp_get_max_threads")) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    func::FuncOp::create(b, "omp_get_max_threads",
                         b.getFunctionType({}, {b.getI32Type()}))
        .setPrivate();
  }
  Value threads = arith::IndexCastUIOp::create(
      b, b.getIndexType(),
      func::CallOp::create(b, "omp_get_max_threads",
                           TypeRange{b.getI32Type()}, ValueRange{})
          .getResult(0));
  Value wanted = b.createOrFold<arith::CeilDivUIOp>(threads, calls);
  return arith::MaxUIOp::create(
      b, b.createOrFold<arith::MinUIOp>(wanted, byKeys), index(1));
}

void KernelizedEmitter::zeroState(Value state, Value sums, Value batch,
                                  Value head) {
  forEach(index(0), index(featureDim), 1, [&](Value f) {
    for (int64_t t = 0; t < valueDim / lanes; ++t)
      storeVec(vecConst(0), state, {batch, head, f, lane(t)});
  });
  for (int64_t t = 0; t < featureDim / lanes; ++t)
    storeVec(vecConst(0), sums, {batch, head, lane(t)});
}

Value KernelizedEmitter::dotWithSums(Value phi, Value row,
                                     ArrayRef<Value> z) {
  Value dot = vecConst(0);
  for (int64_t t = 0; t < featureDim / lanes; ++t)
    dot = vector::FMAOp::create(b, loadVec(phi, {row, lane(t)}), z[t], dot);
  return vector::ReductionOp::create(b, vector::CombiningKind::ADD, dot,
                                     arith::FastMathFlags::reassoc);
}

void KernelizedEmitter::storeQuotients(ArrayRef<Value> acc, int64_t rows,
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

func::FuncOp KernelizedEmitter::createFunction(ModuleOp module, StringRef name,
                                               ArrayRef<Type> argTypes) {
  auto fn = func::FuncOp::create(b, name, b.getFunctionType(argTypes, {}));
  fn.setPrivate();
  SymbolTable(module).insert(fn); // uniquifies the name
  b.setInsertionPointToStart(fn.addEntryBlock());
  return fn;
}

func::FuncOp KernelizedEmitter::buildStateFunction(ModuleOp module,
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

func::FuncOp KernelizedEmitter::buildOutputFunction(ModuleOp module,
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

func::FuncOp KernelizedEmitter::buildCausalFunction(ModuleOp module,
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
  constexpr int64_t chunk = kCausalChunk;
  Value phiK = scratch({chunk, featureDim});
  Value phiKT = scratch({featureDim, chunk});
  Value phiQ = scratch({chunk, featureDim});
  Value scores = scratch({chunk, chunk});
  Value denominators = scratch({chunk});
  VectorType indexVec = VectorType::get({lanes}, b.getI32Type());
  SmallVector<int32_t> iota;
  for (int64_t l = 0; l < lanes; ++l)
    iota.push_back(l);
  Value laneIds = arith::ConstantOp::create(
      b, DenseElementsAttr::get(indexVec, ArrayRef<int32_t>(iota)));

  // Chunks of rows c0 .. c0 + chunk: query i sees keys j <= i, the earlier
  // chunks through S and z, its own through the masked scores. FAVOR+
  // carries the largest key exponent so far, the scale of S and z.
  Value noMaximum = arith::ConstantOp::create(b, b.getF32FloatAttr(-INFINITY));
  loop(index(0), queryLen, chunk, {noMaximum}, [&](Value c0,
                                                   ValueRange carried) {
    Value chunkQueries =
        b.createOrFold<arith::MinUIOp>(index(chunk), sub(queryLen, c0));
    Value keysLeft = b.createOrFold<arith::SelectOp>(
        b.createOrFold<arith::CmpIOp>(arith::CmpIPredicate::ult, c0, keyLen),
        sub(keyLen, c0), index(0));
    Value chunkKeys = b.createOrFold<arith::MinUIOp>(index(chunk), keysLeft);
    // phi of the chunk's keys (zero rows past the keys), and transposed
    // through registers for the scores' vector loads along the keys.
    SmallVector<Value> columnSums;
    Value keyMaximum = carried[0];
    if (favor) {
      keyMaximum = writeRandomFeatures(key, batch, head, c0, chunkKeys, phiK,
                                       carried[0], columnSums);
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
      columnSums = features(key, batch, head, c0, chunkKeys, phiK);
    }
    forEach(chunkKeys, index(chunk), 1, [&](Value j) {
      for (int64_t t = 0; t < featureDim / lanes; ++t)
        storeVec(vecConst(0), phiK, {j, lane(t)});
    });
    forEach(index(0), index(chunk), lanes, [&](Value j0) {
      forEach(index(0), index(featureDim), lanes, [&](Value f0) {
        SmallVector<Value> rows;
        for (int64_t r = 0; r < lanes; ++r)
          rows.push_back(loadVec(phiK, {add(j0, index(r)), f0}));
        transposeInRegisters(b, rows);
        for (int64_t c = 0; c < lanes; ++c)
          storeVec(rows[c], phiKT, {add(f0, index(c)), j0});
      });
    });

    forEach(index(0), groups, 1, [&](Value g) {
      Value queryHead = add(mul(head, groups), g);
      SmallVector<Value> z;
      for (int64_t t = 0; t < featureDim / lanes; ++t)
        z.push_back(loadVec(sums, {batch, head, lane(t)}));
      features(query, batch, queryHead, c0, chunkQueries, phiQ);
      forEach(index(0), chunkQueries, 1, [&](Value i) {
        memref::StoreOp::create(b, dotWithSums(phiQ, i, z), denominators,
                                ValueRange{i});
      });
      // scores[i][j] = phi(q_i) . phi(k_j) for j <= i, else 0; their row
      // sums join the denominators.
      for (auto [firstChunkVector, chunkVectors] :
           vectorChunks(chunk / lanes)) {
        int64_t firstVector = firstChunkVector, vectors = chunkVectors;
        forRowBlocks(chunkQueries, rowsFor(vectors), [&](Value r0,
                                                         int64_t rows) {
          SmallVector<Value> acc(rows * vectors, vecConst(0));
          acc = blockedUpdates(
              index(featureDim), acc, rows, vectors,
              [&](Value f, int64_t t) {
                return loadVec(phiKT, {f, lane(firstVector + t)});
              },
              [&](Value f, int64_t r) -> Value {
                return broadcastAt(phiQ, {add(r0, index(r)), f});
              });
          for (int64_t r = 0; r < rows; ++r) {
            Value row = add(r0, index(r));
            Value rowSum = vecConst(0);
            for (int64_t t = 0; t < vectors; ++t) {
              // Lane l is key firstKey + l: kept when firstKey + l <= row.
              Value firstKey = index((firstVector + t) * lanes);
              Value limit = arith::IndexCastOp::create(
                  b, b.getI32Type(), sub(row, firstKey));
              Value keep = arith::CmpIOp::create(
                  b, arith::CmpIPredicate::sle, laneIds,
                  vector::BroadcastOp::create(b, indexVec, limit));
              Value masked = arith::SelectOp::create(
                  b, keep, acc[r * vectors + t], vecConst(0));
              storeVec(masked, scores, {row, firstKey});
              rowSum = arith::AddFOp::create(b, rowSum, masked);
            }
            Value den = memref::LoadOp::create(b, denominators, row);
            Value sum = vector::ReductionOp::create(
                b, vector::CombiningKind::ADD, rowSum,
                arith::FastMathFlags::reassoc);
            memref::StoreOp::create(b, arith::AddFOp::create(b, den, sum),
                                    denominators, ValueRange{row});
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
                return loadVec(state, {batch, head, f, column(t)});
              },
              [&](Value f, int64_t r) -> Value {
                return broadcastAt(phiQ, {add(r0, index(r)), f});
              });
          Value seen = b.createOrFold<arith::MinUIOp>(add(r0, index(rows)),
                                                      chunkKeys);
          acc = blockedUpdates(
              seen, acc, rows, vectors,
              [&](Value j, int64_t t) {
                return loadVec(value, {batch, head, add(c0, j), column(t)});
              },
              [&](Value j, int64_t r) -> Value {
                return broadcastAt(scores, {add(r0, index(r)), j});
              });
          storeQuotients(acc, rows, vectors, denominators, r0, out, batch,
                         queryHead, c0, firstVector);
        });
      }
    });
    // The later chunks see this one through S and z.
    addToSums(sums, batch, head, columnSums);
    accumulateState(state, batch, head, phiK, value, batch, c0, chunkKeys);
    return SmallVector<Value>{keyMaximum};
  });
  func::ReturnOp::create(b);
  return fn;
}

Value KernelizedEmitter::build(ModuleOp module) {
  auto parent = op->getParentOfType<func::FuncOp>();
  func::FuncOp stateFn, outputFn, causalFn;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(parent);
    // Named after the caller so that artifacts linked together do not clash.
    if (op.getCausal()) {
      causalFn = buildCausalFunction(module, parent.getSymName());
    } else {
      stateFn = buildStateFunction(module, parent.getSymName());
      outputFn = buildOutputFunction(module, parent.getSymName());
    }
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
  // are summed into slot batch afterwards.
  Value splits = op.getCausal()
                     ? index(1)
                     : numKeySplits(module, mul(batch, keyHeads), dim(key, 2));
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
  if (causalFn) {
    callInParallel(causalFn, {batch, keyHeads},
                   {query, key, value, state, sums, out, scaledOmegaT});
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

struct AttnKernelizedToCpuPass
    : attn::impl::AttnKernelizedToCpuBase<AttnKernelizedToCpuPass> {
  using AttnKernelizedToCpuBase::AttnKernelizedToCpuBase;

  void runOnOperation() override {
    if (vectorBits != 256 && vectorBits != 512) {
      getOperation()->emitError(
          "attn-kernelized-to-cpu: vector-bits must be 256 or 512");
      return signalPassFailure();
    }
    int64_t lanes = vectorBits / 32;
    SmallVector<KernelizedOp> ops;
    getOperation()->walk([&](KernelizedOp op) {
      if (KernelizedEmitter::covers(op, lanes))
        ops.push_back(op);
    });
    for (KernelizedOp op : ops) {
      Value result = KernelizedEmitter(op, lanes).build(getOperation());
      op.replaceAllUsesWith(result);
      op.erase();
    }
  }
};

} // namespace
