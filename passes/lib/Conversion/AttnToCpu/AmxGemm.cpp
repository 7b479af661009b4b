//===- AmxGemm.cpp - bf16 products with weights in pairs on AMX ----------===//
//
// C[M, N] += bf16(A) B on the tile unit (AmxGemm.h has the form). B comes
// packed once (the layer runtime's bf16 weights); per call:
//
//   A copied to bf16, [32 * ceil(M / 32)][Kp] (rows and k's past A zero),
//     in a forall over 16-row tiles
//   forall (32-row block, group of column pairs)              -- OpenMP
//     for each pair of 16-column panels in the group:
//       C's 32 x 32 block copied to a scratch (zeros past M and N)
//       per 32 k's: two A tiles (16 rows x 32 k's), two B tiles (16 pair
//         rows x 16 columns) and four tdpbf16ps into the 2 x 2 f32 tiles,
//         which stay in tile registers for kUnroll steps
//       the scratch copied back to C's rows < M, columns < N (through
//         the epilogue, if any: bias, activation, residual)
//
// AMX's 8 tile registers hold the 4 accumulators and 4 operands. The copy
// of A rounds to nearest even (arith.truncf), as the form's body says.
//
//===----------------------------------------------------------------------===//
#include "AmxGemm.h"
#include "GemmEpilogue.h"
#include "LoopBuilder.h"
#include "attn/Transforms/ContractionMatch.h"
#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::attn;

namespace {
constexpr int64_t kTile = 16;        ///< rows and f32 columns of a C tile
constexpr int64_t kTileDepth = 32;   ///< k's per tdpbf16ps
constexpr int64_t kBlock = 2 * kTile; ///< a 2 x 2 block of C tiles
/// 32-k steps per pass over the accumulators: their tiles are loaded from
/// and stored to the scratch once per kUnroll x 4 products.
constexpr int64_t kUnroll = 8;
/// Column pairs (32 columns) per forall iteration at most: the A block is
/// reused across them.
constexpr int64_t kGroupPairs = 4;

/// The body C + extf(truncf(A)) * extf(B), B bf16.
bool hasRoundedProductBody(linalg::GenericOp op) {
  auto factors = multiplyAddFactors(op);
  if (!factors || op.getRegion().front().getOperations().size() != 6)
    return false;
  Value x = op.getRegion().getArgument(0), w = op.getRegion().getArgument(1);
  // extf(truncf(x) to bf16) to f32.
  auto isRoundedX = [&](Value v) {
    auto ext = v.getDefiningOp<arith::ExtFOp>();
    auto trunc = ext ? ext.getIn().getDefiningOp<arith::TruncFOp>() : nullptr;
    return trunc && trunc.getType().isBF16() && isWidenedToF32(v, trunc) &&
           trunc.getIn() == x;
  };
  return (isRoundedX(factors->first) && isWidenedToF32(factors->second, w)) ||
         (isRoundedX(factors->second) && isWidenedToF32(factors->first, w));
}
} // namespace

bool mlir::attn::isPairPackedMatmul(linalg::GenericOp op,
                                    int64_t panelWidth) {
  if (!isBufferProductGeneric(op))
    return false;
  auto x = dyn_cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto w = dyn_cast<MemRefType>(op.getDpsInputs()[1].getType());
  auto y = dyn_cast<MemRefType>(op.getDpsInits()[0].getType());
  if (!x || !w || !y || x.getRank() != 2 || y.getRank() != 2 ||
      w.getRank() != 3 || !x.getElementType().isF32() ||
      !y.getElementType().isF32() || !w.getElementType().isBF16() ||
      !x.isLastDimUnitStride() || !y.isLastDimUnitStride() ||
      !w.hasStaticShape() || !w.getLayout().isIdentity() ||
      w.getDimSize(2) != 2 * panelWidth)
    return false;
  // Every k of A within B's pair rows (a static K past them would read
  // weights that are not there).
  if (!ShapedType::isDynamic(x.getDimSize(1)) &&
      x.getDimSize(1) > 2 * w.getDimSize(1))
    return false;
  MLIRContext *ctx = op.getContext();
  AffineExpr n = getAffineDimExpr(1, ctx), k = getAffineDimExpr(2, ctx);
  if (packedWeightMap(op) != AffineMap::get(3, 0,
                                            {n.floorDiv(panelWidth),
                                             k.floorDiv(2),
                                             (n % panelWidth) * 2 + k % 2},
                                            ctx))
    return false;
  return hasRoundedProductBody(op);
}

bool mlir::attn::isAmxPairPackedMatmul(linalg::GenericOp op) {
  if (!isPairPackedMatmul(op, kTile))
    return false;
  // Whole 2 x 2 blocks of operand tiles: panels in pairs, pair rows in 16s.
  auto w = cast<MemRefType>(op.getDpsInputs()[1].getType());
  return w.getDimSize(0) % 2 == 0 && w.getDimSize(1) % kTile == 0;
}

namespace {
/// The emitter's helpers (index arithmetic, loops) on one builder.
class AmxGemmEmitter {
public:
  explicit AmxGemmEmitter(ImplicitLocOpBuilder &b)
      : b(b), f32(b.getF32Type()), bf16(b.getBF16Type()),
        vecF32(VectorType::get({kTile}, f32)),
        vecBf16(VectorType::get({kTile}, bf16)),
        maskType(VectorType::get({kTile}, b.getI1Type())) {}

  void emit(linalg::GenericOp op, int64_t parallelTiles, bool startsAtZero,
            linalg::GenericOp epilogue);

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value add(Value l, Value r) { return arith::AddIOp::create(b, l, r); }
  Value sub(Value l, Value r) { return arith::SubIOp::create(b, l, r); }
  Value mul(Value l, Value r) { return arith::MulIOp::create(b, l, r); }
  Value less(Value l, Value r) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::slt, l, r);
  }
  Value select(Value c, Value t, Value f) {
    return arith::SelectOp::create(b, c, t, f);
  }
  /// The mask of the first `left` lanes (clamped to 0..16).
  Value lanesMask(Value left) {
    Value lanes = arith::MinSIOp::create(
        b, index(kTile), arith::MaxSIOp::create(b, left, index(0)));
    return vector::CreateMaskOp::create(b, maskType, lanes);
  }
  Value zeros() {
    return arith::ConstantOp::create(b, vecF32, b.getZeroAttr(vecF32));
  }
  void forEach(Value lb, Value ub, int64_t step,
               function_ref<void(Value)> body) {
    buildLoop(b, lb, ub, index(step), {}, [&](Value iv, ValueRange) {
      body(iv);
      return SmallVector<Value>{};
    });
  }
  void forall(ArrayRef<OpFoldResult> counts,
              function_ref<void(ValueRange)> body) {
    auto loop = scf::ForallOp::create(b, counts, ValueRange{}, std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVars());
  }
  /// One forall iteration: rows [row0, row0 + 32) of C, column pairs
  /// [firstPair, endPair). Arguments: a, w, y, m, n, row0, firstPair,
  /// endPair, then the epilogue's inputs.
  void emitBlock(ValueRange args, int64_t pairRows, int64_t steps);

  bool startsAtZero = false;
  linalg::GenericOp epilogue;

  ImplicitLocOpBuilder &b;
  Type f32, bf16;
  VectorType vecF32, vecBf16, maskType;
};
} // namespace

void AmxGemmEmitter::emit(linalg::GenericOp op, int64_t parallelTiles,
                          bool zeroStart, linalg::GenericOp finish) {
  startsAtZero = zeroStart;
  epilogue = finish;
  Value x = op.getDpsInputs()[0], packedW = op.getDpsInputs()[1],
        y = op.getDpsInits()[0];
  auto wType = cast<MemRefType>(packedW.getType());
  int64_t panels = wType.getDimSize(0), pairRows = wType.getDimSize(1);
  int64_t depth = 2 * pairRows, steps = depth / kTileDepth;
  Value m = memref::DimOp::create(b, x, 0), k = memref::DimOp::create(b, x, 1);
  Value n = memref::DimOp::create(b, y, 1);
  Value rowBlocks = arith::CeilDivSIOp::create(b, m, index(kBlock));

  // A in bf16: [32 * rowBlocks][depth], zeros past M and K.
  Value a = memref::AllocOp::create(
      b, MemRefType::get({ShapedType::kDynamic, depth}, bf16),
      ValueRange{mul(rowBlocks, index(kBlock))}, b.getI64IntegerAttr(64));
  forall({mul(rowBlocks, index(kBlock / kTile))}, [&](ValueRange ivs) {
    forEach(index(0), index(kTile), 1, [&](Value r) {
      Value row = add(mul(ivs[0], index(kTile)), r);
      Value inside = less(row, m);
      // Rows past M read no element of A (row 0, every lane masked).
      Value source = select(inside, row, index(0));
      Value rowLeft = select(inside, k, index(0));
      forEach(index(0), index(depth), kTile, [&](Value k0) {
        Value v = vector::MaskedLoadOp::create(b, vecF32, x,
                                               ValueRange{source, k0},
                                               lanesMask(sub(rowLeft, k0)),
                                               zeros());
        vector::StoreOp::create(b, arith::TruncFOp::create(b, vecBf16, v), a,
                                ValueRange{row, k0});
      });
    });
  });

  // B as [panels * pairRows][32]: a tile is 16 consecutive pair rows.
  Value w = memref::CollapseShapeOp::create(
      b, packedW, SmallVector<ReassociationIndices>{{0, 1}, {2}});
  int64_t pairs = panels / 2;
  // Groups of up to kGroupPairs pairs, narrower when there are few pairs
  // for the parallel tiles (short M, e.g. decoding).
  int64_t tiles = std::max<int64_t>(parallelTiles, 1);
  int64_t groupPairs =
      std::clamp<int64_t>((pairs + tiles - 1) / tiles, 1, kGroupPairs);
  int64_t groups = (pairs + groupPairs - 1) / groupPairs;

  // The work of one forall iteration is a function of its own: its C
  // scratch is a stack buffer, released when the call returns (an alloca in
  // the loop body would grow the stack every iteration).
  auto module = op->getParentOfType<ModuleOp>();
  Type indexType = b.getIndexType();
  func::FuncOp blockFn;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(module.getBody());
    SmallVector<Type> argTypes = {a.getType(), w.getType(), y.getType(),
                                  indexType,   indexType,   indexType,
                                  indexType,   indexType};
    if (epilogue)
      llvm::append_range(argTypes, ValueRange(epilogue.getDpsInputs()).getTypes());
    blockFn = func::FuncOp::create(b, "__attn_amx_gemm_block",
                                   b.getFunctionType(argTypes, {}));
    blockFn.setPrivate();
    SymbolTable(module).insert(blockFn); // uniquifies the name
    b.setInsertionPointToStart(blockFn.addEntryBlock());
    emitBlock(blockFn.getArguments(), pairRows, steps);
    func::ReturnOp::create(b);
  }
  forall({rowBlocks, b.getIndexAttr(groups)}, [&](ValueRange ivs) {
    Value firstPair = mul(ivs[1], index(groupPairs));
    Value endPair = arith::MinSIOp::create(
        b, add(firstPair, index(groupPairs)), index(pairs));
    SmallVector<Value> args = {a, w, y, m, n, mul(ivs[0], index(kBlock)),
                               firstPair, endPair};
    if (epilogue)
      llvm::append_range(args, epilogue.getDpsInputs());
    func::CallOp::create(b, blockFn, args);
  });
  memref::DeallocOp::create(b, a);
}

void AmxGemmEmitter::emitBlock(ValueRange args, int64_t pairRows,
                               int64_t steps) {
  Value a = args[0], w = args[1], y = args[2], m = args[3], n = args[4],
        row0 = args[5], firstPair = args[6], endPair = args[7];
  auto tileOperand = amx::TileType::get({kTile, kTileDepth}, bf16);
  auto tileC = amx::TileType::get({kTile, kTile}, f32);
  Value c = memref::AllocaOp::create(
      b, MemRefType::get({kBlock, kBlock}, f32), b.getI64IntegerAttr(64));
  int64_t unroll = kUnroll;
  while (steps % unroll)
    unroll /= 2;
  forEach(firstPair, endPair, 1, [&](Value pair) {
    Value col0 = mul(pair, index(kBlock));
    // f(r, row of y, column of y, lanes < N) over C's 32 x 32 block; rows
    // past M have no lanes.
    auto overBlock = [&](function_ref<void(Value, Value, Value, Value)> f) {
      forEach(index(0), index(kBlock), 1, [&](Value r) {
        Value row = add(row0, r);
        Value inside = less(row, m);
        Value source = select(inside, row, index(0));
        Value colsLeft = select(inside, sub(n, col0), index(0));
        for (int64_t v = 0; v < kBlock / kTile; ++v)
          f(r, source, add(col0, index(v * kTile)),
            lanesMask(sub(colsLeft, index(v * kTile))));
      });
    };
    overBlock([&](Value r, Value row, Value col, Value mask) {
      Value v = startsAtZero ? zeros()
                             : vector::MaskedLoadOp::create(
                                   b, vecF32, y, ValueRange{row, col}, mask,
                                   zeros())
                                   .getResult();
      vector::StoreOp::create(b, v, c, ValueRange{r, sub(col, col0)});
    });
    Value wRow0 = mul(pair, index(2 * pairRows));
    forEach(index(0), index(steps), unroll, [&](Value s0) {
      SmallVector<Value> acc;
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 2; ++j)
          acc.push_back(amx::TileLoadOp::create(
              b, tileC, c, ValueRange{index(i * kTile), index(j * kTile)}));
      for (int64_t u = 0; u < unroll; ++u) {
        Value s = add(s0, index(u));
        SmallVector<Value> as, bs;
        for (int64_t i = 0; i < 2; ++i)
          as.push_back(amx::TileLoadOp::create(
              b, tileOperand, a,
              ValueRange{add(row0, index(i * kTile)),
                         mul(s, index(kTileDepth))}));
        for (int64_t j = 0; j < 2; ++j)
          bs.push_back(amx::TileLoadOp::create(
              b, tileOperand, w,
              ValueRange{add(add(wRow0, index(j * pairRows)),
                             mul(s, index(kTile))),
                         index(0)}));
        for (int64_t i = 0; i < 2; ++i)
          for (int64_t j = 0; j < 2; ++j)
            acc[i * 2 + j] = amx::TileMulFOp::create(b, tileC, as[i], bs[j],
                                                     acc[i * 2 + j]);
      }
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 2; ++j)
          amx::TileStoreOp::create(
              b, c, ValueRange{index(i * kTile), index(j * kTile)},
              acc[i * 2 + j]);
    });
    if (!epilogue) {
      overBlock([&](Value r, Value row, Value col, Value mask) {
        Value v = vector::LoadOp::create(b, vecF32, c,
                                         ValueRange{r, sub(col, col0)});
        vector::MaskedStoreOp::create(b, y, ValueRange{row, col}, mask, v);
      });
      return;
    }
    // Row by row through the epilogue: both vectors of a row at once.
    forEach(index(0), index(kBlock), 1, [&](Value r) {
      Value row = add(row0, r);
      Value inside = less(row, m);
      Value source = select(inside, row, index(0));
      Value colsLeft = select(inside, sub(n, col0), index(0));
      SmallVector<Value> sums, cols, masks;
      for (int64_t v = 0; v < kBlock / kTile; ++v) {
        sums.push_back(vector::LoadOp::create(
            b, vecF32, c, ValueRange{r, index(v * kTile)}));
        cols.push_back(add(col0, index(v * kTile)));
        masks.push_back(lanesMask(sub(colsLeft, index(v * kTile))));
      }
      SmallVector<Value> done =
          applyGemmEpilogue(b, epilogue, sums, {source}, {inside}, cols, masks,
                            args.drop_front(8));
      for (int64_t v = 0; v < kBlock / kTile; ++v)
        vector::MaskedStoreOp::create(b, y, ValueRange{source, cols[v]},
                                      masks[v], done[v]);
    });
  });
}

void mlir::attn::emitAmxGemm(ImplicitLocOpBuilder &b, linalg::GenericOp op,
                             int64_t parallelTiles, bool startsAtZero,
                             linalg::GenericOp epilogue) {
  AmxGemmEmitter(b).emit(op, parallelTiles, startsAtZero, epilogue);
}
