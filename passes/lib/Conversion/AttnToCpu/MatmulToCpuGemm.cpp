//===- MatmulToCpuGemm.cpp - linalg.matmul to a register-blocked GEMM -----===//
//
// attn-matmul-to-cpu-gemm: every f32 `linalg.matmul` on buffers, C += A B
// with B stored [K, N] or transposed [N, K], every contraction generic of
// the decompositions (C[batch, m, n] += A B, ContractionMatch.h: one GEMM
// per batch index on rank-reduced views) and every generic reading B
// already packed (B[n floordiv 2V, k, n mod 2V]: weights packed once; in
// f32, or in bf16 / f16 widened as the micro-kernel loads them, the body
// then C + A * extf(B)) becomes the blocked GEMM CPUs run near their FMA
// peak (the BLIS loop nest, written as vector IR):
//
//   pack B as [panel][k][2V] (zeros past N) in a parallel loop, unless it
//     comes packed
//   for each block of kKeyBlock k's:
//     pack A's k-block as [row block][k][R] (zeros past M), in parallel
//     forall (group of panels, row chunk)                      -- OpenMP
//       for each block of kRowBlocks row blocks, each panel of the group,
//       each row block: the R x 2 vectors of C stay in registers across
//       the k-block; per k two B loads, R broadcasts of A and 2R FMAs
//       (R = 12 on AVX-512, 6 on AVX2)
//
// Products of 1 row or up to 4 (decode steps) have forms of their own with
// 1- and 4-row micro-kernels, chosen at run time when M is dynamic.
//
// With bf16-dot, products of bf16-rounded A and bf16 weights packed in k
// pairs (AmxGemm.h's form with 2V-column panels) run on the same loop nest:
// A's k-block is packed as i32 words of bf16 pairs, [row block][k / 2][R],
// and each step of the micro-kernel is a k pair, R broadcast words and 2R
// `vdpbf16ps` (16 lanes += 16 pair products each: twice an FMA's work).
//
// An element-wise generic on C right after the product (bias, GELU,
// SwiGLU's gate: GemmEpilogue.h) is applied to the accumulators of the last
// k-block before they are stored, and a zero fill before it becomes the
// first k-block's zero start.
//
// Packing makes every read of the micro-kernel sequential (no cache-set
// conflicts between rows of A strided by K) and keeps the B panel and the
// A block in L2; A's buffer holds one k-block, small enough for malloc to
// reuse between calls. While it runs, a micro-kernel prefetches the C tile
// of the next. Columns past N are masked, rows past M neither
// loaded nor stored, so any M, N, K (static or dynamic) is covered. The
// packing copies that transpose (A [M, K] into R floats per k, B [N, K]
// into 2V per k) go lanes x lanes through registers (transposeInRegisters)
// where whole vectors fit.
//
//===----------------------------------------------------------------------===//
#include "AmxGemm.h"
#include "CpuGemmEmitter.h"
#include "GemmEpilogue.h"
#include "LoopBuilder.h"
#include "VectorTranspose.h"
#include "attn/Conversion/CpuGemm.h"
#include "attn/Conversion/Passes.h"
#include "attn/Transforms/ContractionMatch.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNMATMULTOCPUGEMM
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The matmul's B layout, or nothing when the pass does not cover it.
std::optional<BLayout> classify(linalg::MatmulOp op) {
  if (!op.hasPureBufferSemantics())
    return std::nullopt;
  for (Value operand : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(operand.getType());
    if (!type || !type.getElementType().isF32() || type.getRank() != 2 ||
        !type.isLastDimUnitStride())
      return std::nullopt;
  }
  std::optional<bool> transposed = matmulTransposesB(op);
  if (!transposed)
    return std::nullopt;
  return *transposed ? BLayout::NK : BLayout::KN;
}

/// The body C + A * extf(B) of a product whose B is 16-bit (weights kept
/// in bf16 or f16, widened as they are read).
bool hasWidenedMultiplyAddBody(linalg::GenericOp op) {
  auto factors = multiplyAddFactors(op);
  if (!factors || op.getRegion().front().getOperations().size() != 4)
    return false;
  Value x = op.getRegion().getArgument(0), w = op.getRegion().getArgument(1);
  return (factors->first == x && isWidenedToF32(factors->second, w)) ||
         (factors->second == x && isWidenedToF32(factors->first, w));
}

/// Whether `op` is C += A B with B in panels of `panelWidth` columns:
/// maps (m, k), (n floordiv W, k, n mod W), (m, n) and a multiply-add body;
/// B is f32, or bf16 / f16 widened to f32 in the body.
bool isPackedMatmul(linalg::GenericOp op, int64_t panelWidth) {
  if (!isBufferProductGeneric(op))
    return false;
  for (Value operand : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(operand.getType());
    if (!type || !type.isLastDimUnitStride())
      return false;
  }
  Type weightType = getElementTypeOrSelf(op.getDpsInputs()[1].getType());
  bool widened = weightType.isBF16() || weightType.isF16();
  if (!getElementTypeOrSelf(op.getDpsInputs()[0].getType()).isF32() ||
      !getElementTypeOrSelf(op.getDpsInits()[0].getType()).isF32() ||
      !(weightType.isF32() || widened))
    return false;
  MLIRContext *ctx = op.getContext();
  AffineExpr n = getAffineDimExpr(1, ctx), k = getAffineDimExpr(2, ctx);
  if (packedWeightMap(op) !=
      AffineMap::get(3, 0, {n.floorDiv(panelWidth), k, n % panelWidth}, ctx))
    return false;
  return widened ? hasWidenedMultiplyAddBody(op) : hasMultiplyAddBody(op);
}

} // namespace

scf::ForOp
GemmEmitter::loop(Value lb, Value ub, Value step, ValueRange init,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  return buildLoop(b, lb, ub, step, init, body);
}

void GemmEmitter::parallel(ArrayRef<OpFoldResult> counts,
                           function_ref<void(ValueRange)> body) {
  auto forall = scf::ForallOp::create(b, counts, ValueRange{}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  body(forall.getInductionVars());
}

void GemmEmitter::ifElse(Value condition, function_ref<void()> then,
                         function_ref<void()> otherwise) {
  buildIfElse(b, condition, then, otherwise);
}

SmallVector<Value> GemmEmitter::columnMasks(Value n0) {
  SmallVector<Value> masks;
  Value left = sub(n, n0);
  for (int64_t v = 0; v < blk.panelVectors; ++v) {
    Value lanes =
        minI(index(blk.lanes), maxI(sub(left, index(v * blk.lanes)), index(0)));
    masks.push_back(vector::CreateMaskOp::create(b, maskType, lanes));
  }
  return masks;
}

void GemmEmitter::microKernel(Value packedA, Value rb, Value packedB, Value p,
                              Value k0, Value kLen) {
  int64_t kVectors = blk.panelVectors;
  Value zero = arith::ConstantOp::create(b, vec, b.getZeroAttr(vec));
  Value i = mul(rb, index(blk.rows));
  Value n0 = mul(p, index(blk.panelWidth()));
  SmallVector<Value> masks = columnMasks(n0), rowIndex, colIndex, rowValid;
  for (int64_t r = 0; r < blk.rows; ++r) {
    rowIndex.push_back(add(i, index(r)));
    rowValid.push_back(less(rowIndex.back(), m));
  }
  for (int64_t v = 0; v < kVectors; ++v)
    colIndex.push_back(add(n0, index(v * blk.lanes)));
  // C's rows, or zeros for rows past M.
  auto loadC = [&] {
    return loadTile(b, c, vec, rowIndex, rowValid, colIndex, masks);
  };
  SmallVector<Value> acc;
  if (startsAtZero) {
    SmallVector<Type> accTypes(blk.rows * kVectors, vec);
    auto init = scf::IfOp::create(
        b, accTypes,
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, k0, index(0)),
        /*else=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(init.thenBlock());
    scf::YieldOp::create(b, SmallVector<Value>(blk.rows * kVectors, zero));
    b.setInsertionPointToStart(init.elseBlock());
    scf::YieldOp::create(b, loadC());
    acc.assign(init.getResults().begin(), init.getResults().end());
  } else {
    acc = loadC();
  }
  // PackedPairs: one pair of k's per step, B's pair row k0 / 2 + kk.
  auto pairStep = [&](Value kk, ValueRange sums) {
    SmallVector<Value> bv, next;
    Value pairRow = add(arith::DivUIOp::create(b, k0, index(2)), kk);
    auto bf16Pairs = VectorType::get({2 * blk.lanes}, b.getBF16Type());
    for (int64_t v = 0; v < kVectors; ++v)
      bv.push_back(vector::LoadOp::create(
          b, bf16Pairs, packedB,
          ValueRange{p, pairRow, index(2 * v * blk.lanes)}));
    for (int64_t r = 0; r < blk.rows; ++r) {
      Value word =
          memref::LoadOp::create(b, packedA, ValueRange{rb, kk, index(r)});
      Value words = vector::BroadcastOp::create(
          b, VectorType::get({blk.lanes}, b.getI32Type()), word);
      Value xs = vector::BitCastOp::create(b, bf16Pairs, words);
      for (int64_t v = 0; v < kVectors; ++v)
        next.push_back(x86vector::DotBF16Op::create(
            b, vec, sums[r * kVectors + v], xs, bv[v]));
    }
    return next;
  };
  // One k-step: two B vectors, R broadcasts of packed A, 2R FMAs.
  auto step = [&](Value kk, ValueRange sums) {
    if (pairs())
      return pairStep(kk, sums);
    SmallVector<Value> bv, next;
    Value k = add(k0, kk);
    Type bElement = cast<MemRefType>(packedB.getType()).getElementType();
    for (int64_t v = 0; v < kVectors; ++v) {
      // 16-bit weights are widened in registers (vcvtph2ps; a shift for
      // bf16): half the bytes read per FMA, the same FMAs.
      Value x = vector::LoadOp::create(
          b, VectorType::get({blk.lanes}, bElement), packedB,
          ValueRange{p, k, index(v * blk.lanes)});
      bv.push_back(bElement == f32 ? x : arith::ExtFOp::create(b, vec, x));
    }
    for (int64_t r = 0; r < blk.rows; ++r) {
      Value x =
          memref::LoadOp::create(b, packedA, ValueRange{rb, kk, index(r)});
      Value xs = vector::BroadcastOp::create(b, vec, x);
      for (int64_t v = 0; v < kVectors; ++v)
        next.push_back(
            vector::FMAOp::create(b, xs, bv[v], sums[r * kVectors + v]));
    }
    return next;
  };
  // The first R k-steps also prefetch the C tile of the next row block (the
  // next one this thread runs), a row per step: C is mostly out of cache,
  // and its loads and stores stalled the micro-kernel (C rows are N floats
  // apart, which the hardware prefetchers do not follow). Indices are
  // clamped into C.
  Value kSteps = pairs() ? ceilDiv(kLen, index(2)) : kLen;
  Value warm = minI(kSteps, index(blk.rows));
  Value lastRow = sub(m, index(1)), lastCol = sub(n, index(1));
  scf::ForOp prefetching =
      loop(index(0), warm, index(1), acc, [&](Value kk, ValueRange sums) {
        Value row = minI(add(add(i, index(blk.rows)), kk), lastRow);
        for (int64_t v = 0; v < kVectors; ++v)
          memref::PrefetchOp::create(
              b, c, ValueRange{row, minI(colIndex[v], lastCol)},
              /*isWrite=*/false, /*localityHint=*/3,
              /*isDataCache=*/true);
        return step(kk, sums);
      });
  scf::ForOp kLoop =
      loop(warm, kSteps, index(1), prefetching.getResults(),
           [&](Value kk, ValueRange sums) { return step(kk, sums); });
  SmallVector<Value> finished(kLoop.getResults());
  if (epilogue) {
    // The last k-block stores C finished.
    auto last = scf::IfOp::create(
        b, kLoop.getResultTypes(),
        arith::CmpIOp::create(b, arith::CmpIPredicate::sge, add(k0, kLen), k),
        /*else=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(last.thenBlock());
    scf::YieldOp::create(b, applyGemmEpilogue(b, epilogue, finished, rowIndex,
                                              rowValid, colIndex, masks));
    b.setInsertionPointToStart(last.elseBlock());
    scf::YieldOp::create(b, finished);
    finished.assign(last.getResults().begin(), last.getResults().end());
  }
  for (int64_t r = 0; r < blk.rows; ++r) {
    auto store = scf::IfOp::create(b, rowValid[r]);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(store.thenBlock());
    for (int64_t v = 0; v < kVectors; ++v)
      vector::MaskedStoreOp::create(b, c, ValueRange{rowIndex[r], colIndex[v]},
                                    masks[v], finished[r * kVectors + v]);
  }
}

void GemmEmitter::emit(Value aBuffer, Value bBuffer, Value cBuffer,
                       BLayout bLayout, bool aIsTransposed) {
  a = aBuffer;
  bMat = bBuffer;
  c = cBuffer;
  layout = bLayout;
  aTransposed = aIsTransposed;
  m = memref::DimOp::create(b, a, aTransposed ? 1 : 0);
  k = memref::DimOp::create(b, a, aTransposed ? 0 : 1);
  n = memref::DimOp::create(b, c, 1);
  // A product of one row (a decode step's, batch 1) or a few runs on a
  // micro-kernel of 1 or 4 rows: the R-row one would do up to R times the
  // FMAs the rows need, and bound the product by them rather than by the
  // weights' reads (1 x 768 x 768 with the weights in L3: 16 GFLOP/s on 12
  // rows, 50-60 on 1; 4 x 1280 x 768: 68 on 12, 183-186 on 4;
  // bench/RESULTS.md). With M dynamic the choice is made at run time; the
  // R-row form comes first.
  std::optional<int64_t> staticM = getConstantIntValue(m);
  GemmBlocking rowBlocking = blk;
  SmallVector<int64_t> rows(std::begin(GemmBlocking::kFewRows),
                            std::end(GemmBlocking::kFewRows));
  rows.push_back(rowBlocking.rows);
  auto withRows = [&](int64_t r) {
    blk = rowBlocking;
    blk.rows = r;
    emitBlocked();
  };
  // m > 1 ? (m > 4 ? R rows : 4 rows) : 1 row.
  std::function<void(size_t)> from = [&](size_t i) {
    if (i + 1 == rows.size())
      return withRows(rows[i]);
    if (staticM)
      return *staticM > rows[i] ? from(i + 1) : withRows(rows[i]);
    ifElse(
        arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, m, index(rows[i])),
        [&] { from(i + 1); }, [&] { withRows(rows[i]); });
  };
  from(0);
  blk = rowBlocking;
}

void GemmEmitter::emitBlocked() {
  Value rowBlocks = ceilDiv(m, index(blk.rows));
  Value panels = ceilDiv(n, index(blk.panelWidth()));

  // B packed once unless it comes packed, in parallel: every later read is
  // sequential.
  Value packedB = bMat;
  if (layout != BLayout::Packed && !pairs()) {
    packedB = memref::AllocOp::create(
        b,
        MemRefType::get(
            {ShapedType::kDynamic, ShapedType::kDynamic, blk.panelWidth()},
            f32),
        ValueRange{panels, k}, b.getI64IntegerAttr(64));
    parallel({panels}, [&](ValueRange ivs) { packB(packedB, ivs[0]); });
  }
  // A is packed one k-block at a time: a buffer of M x min(K, kKeyBlock)
  // floats (allocated once per call, small enough for malloc to reuse heap
  // pages instead of mapping fresh ones each call; no wider than K, so a
  // narrow product's buffer is never a multiple of its input).
  int64_t kb = GemmBlocking::kKeyBlock;
  Value blockDepth = minI(k, index(kb));
  if (pairs())
    blockDepth = ceilDiv(blockDepth, index(2));
  Value packedA = memref::AllocOp::create(
      b,
      MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic, blk.rows},
                      pairs() ? Type(b.getI32Type()) : Type(f32)),
      ValueRange{rowBlocks, blockDepth}, b.getI64IntegerAttr(64));

  // Column groups: one per parallel tile while they stay kMinGroupPanels
  // wide (each group reads the A block again), then row chunks of whole
  // row blocks (each chunk reads its groups' B again).
  Value groupPanels = maxI(ceilDiv(panels, index(parallelTiles)),
                           index(GemmBlocking::kMinGroupPanels));
  Value groups = ceilDiv(panels, groupPanels);
  Value wanted = ceilDiv(index(parallelTiles), maxI(groups, index(1)));
  Value chunks = minI(maxI(wanted, index(1)), maxI(rowBlocks, index(1)));
  Value chunkBlocks = ceilDiv(rowBlocks, chunks);
  Value keyBlock = index(kb);
  forEach(index(0), k, keyBlock, [&](Value k0) {
    Value kLen = minI(keyBlock, sub(k, k0));
    parallel({rowBlocks},
             [&](ValueRange ivs) { packA(packedA, ivs[0], k0, kLen); });
    parallel({groups, chunks}, [&](ValueRange ivs) {
      Value firstPanel = mul(ivs[0], groupPanels);
      Value endPanel = minI(add(firstPanel, groupPanels), panels);
      Value firstBlock = minI(mul(ivs[1], chunkBlocks), rowBlocks);
      Value endBlock = minI(add(firstBlock, chunkBlocks), rowBlocks);
      // The BLIS order: the group's B k-block stays in L2, the A blocks of
      // kRowBlocks row blocks in L2, each B panel in L1.
      Value rowStep = index(GemmBlocking::kRowBlocks);
      forEach(firstBlock, endBlock, rowStep, [&](Value mb) {
        Value mbEnd = minI(add(mb, rowStep), endBlock);
        forEach(firstPanel, endPanel, index(1), [&](Value p) {
          forEach(mb, mbEnd, index(1), [&](Value rb) {
            microKernel(packedA, rb, packedB, p, k0, kLen);
          });
        });
      });
    });
  });
  memref::DeallocOp::create(b, packedA);
  if (packedB != bMat)
    memref::DeallocOp::create(b, packedB);
}

void GemmEmitter::emitBatched(linalg::GenericOp op,
                              const ContractionMatch &match) {
  SmallVector<Range, 4> ranges =
      cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, b.getLoc());
  // One 2-D product per batch index: rank-reducing views of the operands
  // at that index, in the order each operand stores its two other dims.
  // With enough batch indices for the cores (known at compile time), they
  // run in parallel and each product on one thread (its own foralls nest
  // inside, where OpenMP runs them serially); otherwise one after the other,
  // each product split over the cores.
  SmallVector<OpFoldResult> batchSizes;
  int64_t staticBatch = 1;
  for (unsigned dim : match.batchDims) {
    batchSizes.push_back(ranges[dim].size);
    std::optional<int64_t> size = getConstantIntValue(ranges[dim].size);
    staticBatch = size ? staticBatch * *size : 0;
  }
  SmallVector<Value> batchIndex;
  std::function<void(size_t)> nest;
  auto product = [&] {
    auto view = [&](Value operand, AffineMap map) {
      auto type = cast<MemRefType>(operand.getType());
      SmallVector<OpFoldResult> offsets, sizes,
          strides(map.getNumResults(), b.getIndexAttr(1));
      SmallVector<int64_t> shape;
      for (auto [i, e] : llvm::enumerate(map.getResults())) {
        unsigned dim = cast<AffineDimExpr>(e).getPosition();
        auto batch = llvm::find(match.batchDims, dim);
        if (batch != match.batchDims.end()) {
          offsets.push_back(batchIndex[batch - match.batchDims.begin()]);
          sizes.push_back(b.getIndexAttr(1));
        } else {
          offsets.push_back(b.getIndexAttr(0));
          sizes.push_back(memref::getMixedSize(b, b.getLoc(), operand, i));
          shape.push_back(type.getDimSize(i));
        }
      }
      auto viewType = memref::SubViewOp::inferRankReducedResultType(
          shape, type, offsets, sizes, strides);
      return memref::SubViewOp::create(b, cast<MemRefType>(viewType), operand,
                                       offsets, sizes, strides)
          .getResult();
    };
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    unsigned aInput = match.swapped ? 1 : 0, bInput = 1 - aInput;
    emit(view(op.getDpsInputs()[aInput], maps[aInput]),
         view(op.getDpsInputs()[bInput], maps[bInput]),
         view(op.getDpsInits()[0], maps[2]),
         match.bTransposed ? BLayout::NK : BLayout::KN, match.aTransposed);
  };
  if (!match.batchDims.empty() && staticBatch * 2 >= parallelTiles) {
    parallel(batchSizes, [&](ValueRange ivs) {
      batchIndex.assign(ivs.begin(), ivs.end());
      product();
    });
    return;
  }
  nest = [&](size_t depth) {
    if (depth == match.batchDims.size())
      return product();
    forEach(getValueOrCreateConstantIndexOp(b, b.getLoc(), batchSizes[depth]),
            [&](Value iv) {
              batchIndex.push_back(iv);
              nest(depth + 1);
              batchIndex.pop_back();
            });
  };
  nest(0);
}

/// Whether the batched contraction's 2-D views read as the GEMM needs:
/// unit stride along C's rows and, when B is packed with vector loads, B's.
namespace {

bool hasGemmStrides(linalg::GenericOp op, const ContractionMatch &match) {
  auto unitInner = [](Value v) {
    return cast<MemRefType>(v.getType()).isLastDimUnitStride();
  };
  Value bOperand = op.getDpsInputs()[match.swapped ? 0 : 1];
  return unitInner(op.getDpsInits()[0]) &&
         (match.bTransposed || unitInner(bOperand));
}

/// The linalg.fill of +0 into `init` just before `op`, if any: the GEMM
/// can start from zeros instead of reading C.
linalg::FillOp zeroFillBefore(Operation *op, Value init) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (!fill || !fill.hasPureBufferSemantics() ||
      fill.getDpsInits()[0] != init ||
      !matchPattern(fill.getDpsInputs()[0], m_PosZeroFloat()))
    return {};
  return fill;
}

struct AttnMatmulToCpuGemmPass
    : attn::impl::AttnMatmulToCpuGemmBase<AttnMatmulToCpuGemmPass> {
  using AttnMatmulToCpuGemmBase::AttnMatmulToCpuGemmBase;

  void runOnOperation() override {
    std::optional<TargetDescription> target =
        TargetDescription::cpuOf(getOperation());
    if (!target)
      return;
    GemmBlocking blocking = GemmBlocking::forTarget(*target);
    bool amx = target->bf16ProductsOnAmx();
    bool bf16Dot = target->bf16ProductsByDot();
    int64_t tiles = std::max<int64_t>(parallelTiles, 1);
    SmallVector<Operation *> ops;
    getOperation()->walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    for (Operation *op : ops) {
      GemmEmitter emitter(op, blocking, tiles);
      // A zero fill of C just before the product becomes its first
      // k-block's zero start (one pass over C fewer, and the fill ran on
      // one thread).
      auto overwrite = [&](Value init) {
        if (linalg::FillOp fill = zeroFillBefore(op, init)) {
          moveUnderEmptyReduction(fill, cast<linalg::LinalgOp>(op));
          emitter.startFromZeros();
        }
      };
      // And an element-wise step on C after it, its epilogue.
      auto fuseAfter = [&](Value init) {
        if (linalg::GenericOp next = matchGemmEpilogue(op, init)) {
          moveUnderEmptyReduction(next, cast<linalg::LinalgOp>(op));
          emitter.fuseEpilogue(next);
        }
      };
      if (auto matmul = dyn_cast<linalg::MatmulOp>(op)) {
        std::optional<BLayout> layout = classify(matmul);
        if (!layout)
          continue;
        overwrite(matmul.getDpsInits()[0]);
        fuseAfter(matmul.getDpsInits()[0]);
        emitter.emit(matmul.getDpsInputs()[0], matmul.getDpsInputs()[1],
                     matmul.getDpsInits()[0], *layout);
      } else if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
        if (amx && isAmxPairPackedMatmul(generic)) {
          // The same zero start and epilogue, the epilogue emitted in the
          // AMX block function (so its body may use nothing from outside).
          Value init = generic.getDpsInits()[0];
          linalg::FillOp fill = zeroFillBefore(op, init);
          if (fill)
            moveUnderEmptyReduction(fill, generic);
          linalg::GenericOp next = matchGemmEpilogue(op, init);
          if (next && !isSelfContainedEpilogue(next))
            next = {};
          if (next)
            moveUnderEmptyReduction(next, generic);
          ImplicitLocOpBuilder builder(op->getLoc(), op);
          emitAmxGemm(builder, generic, tiles, bool(fill), next);
        } else if (bf16Dot &&
                   isPairPackedMatmul(generic, blocking.panelWidth())) {
          overwrite(generic.getDpsInits()[0]);
          fuseAfter(generic.getDpsInits()[0]);
          emitter.emit(generic.getDpsInputs()[0], generic.getDpsInputs()[1],
                       generic.getDpsInits()[0], BLayout::PackedPairs);
        } else if (isPackedMatmul(generic, blocking.panelWidth())) {
          overwrite(generic.getDpsInits()[0]);
          fuseAfter(generic.getDpsInits()[0]);
          emitter.emit(generic.getDpsInputs()[0], generic.getDpsInputs()[1],
                       generic.getDpsInits()[0], BLayout::Packed);
        } else {
          // The decompositions' contractions (batch loops around C[m, n] +=
          // A B), outside any parallel loop: inside one (a tile of
          // attn-parallelize-linalg) they are too small to split again.
          std::optional<ContractionMatch> match = matchContraction(generic);
          if (!match || !generic.hasPureBufferSemantics() ||
              !hasGemmStrides(generic, *match) ||
              op->getParentOfType<scf::ForallOp>())
            continue;
          overwrite(generic.getDpsInits()[0]);
          emitter.emitBatched(generic, *match);
        }
      } else {
        continue;
      }
      op->erase();
    }
  }
};

} // namespace

int64_t mlir::attn::cpuGemmPanelWidth(const TargetDescription &target) {
  return GemmBlocking::forTarget(target).panelWidth();
}
