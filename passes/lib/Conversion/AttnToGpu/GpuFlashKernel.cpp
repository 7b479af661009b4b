//===- GpuFlashKernel.cpp - one tiled attention as a GPU kernel
//------------===//
//
// The kernel, per workgroup (t, h, b) of `rows` invocations:
//
//   r = thread id; i = first row of tile t + r (clamped; stores are guarded)
//   q[c] = scale * Q[b, h, i, c]                       // registers
//   m = -inf, l = 0, acc[c] = 0                         // registers
//   for each key tile the schedule lists for (h, t):
//     barrier; K[j0 .. j0+tk), V[...] -> workgroup memory; barrier
//     for each key j of the tile:
//       s = q . K[j] (+ soft-cap, mods, score region; -inf where masked)
//       skip if s == -inf, else with e = exp(-|s - m|):
//         s > m:  acc = e acc + V[j], l = e l + 1, m = s
//         else:   acc = acc + e V[j], l = l + e
//   O[b, h, i, :] = l == 0 ? 0 : acc / l
//
// One exp per score: the branch that raises the max rescales by e, the
// other adds e. Dropped keys (-inf) add nothing even where V holds inf.
//
//===----------------------------------------------------------------------===//
#include "GpuKernelEmitter.h"
#include "attn/Transforms/MaskCodegen.h"
#include "attn/Transforms/ScoreModCodegen.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Whether `value` is an argument of `host`'s entry block.
bool isHostArgument(func::FuncOp host, Value value) {
  auto arg = dyn_cast_or_null<BlockArgument>(value);
  return arg && arg.getOwner() == &host.getBody().front();
}

/// The schedule buffer (i32): per schedule (one, or one per head) the
/// offset of its CSR in the buffer, then each CSR: rowStart[T + 1] and per
/// entry `keyTile * 2 + isFull`.
std::vector<int32_t> encodeSchedules(const OpSchedules &schedules) {
  std::vector<int32_t> words(schedules.perHead.size());
  for (auto [n, s] : llvm::enumerate(schedules.perHead)) {
    words[n] = words.size();
    for (int64_t start : s.rowStart)
      words.push_back(start);
    for (auto [tile, cls] : llvm::zip(s.keyTiles, s.classes))
      words.push_back(tile * 2 + (cls == TileClass::Full ? 1 : 0));
  }
  return words;
}

} // namespace

//===----------------------------------------------------------------------===//
// GpuKernelEmitter: what every kernel shares
//===----------------------------------------------------------------------===//

float GpuKernelEmitter::scale() {
  return op.getScale() ? op.getScale()->convertToFloat()
                       : float(1.0 / std::sqrt(double(headDim)));
}

gpu::GPUFuncOp GpuKernelEmitter::build(gpu::GPUModuleOp module) {
  auto qType = cast<RankedTensorType>(op.getQuery().getType());
  auto kType = cast<RankedTensorType>(op.getKey().getType());
  auto vType = cast<RankedTensorType>(op.getValue().getType());
  setScoreParts(op);
  batch = qType.getDimSize(0);
  queryLen = qType.getDimSize(2);
  headDim = qType.getDimSize(3);
  std::string unused;
  paged = matchPagedKeys(host, op, unused);
  if (paged) {
    auto pool = cast<RankedTensorType>(paged->keys.getPool().getType());
    auto table = cast<RankedTensorType>(paged->keys.getTable().getType());
    numPages = pool.getDimSize(0);
    pageRows = pool.getDimSize(2);
    keyLen = table.getDimSize(1) * pageRows;
  } else {
    keyLen = kType.getDimSize(2);
  }
  valueDim = vType.getDimSize(3);
  group = heads / kType.getDimSize(1);
  keyTile = plan.keyTile;
  rows = plan.queryTiling.tile;
  numQueryTiles = plan.queryTiling.numTiles(queryLen);
  numKeyTiles = (keyLen + keyTile - 1) / keyTile;
  // Decoding with GQA: one workgroup's rows hold every query head of a
  // KV head (one tile of queryLen rows per head), where the kernel can.
  if (group > 1 && numQueryTiles == 1 && queryLen * group <= rows &&
      !countTiles && (!plan.schedules || plan.schedules->sharedByHeads) &&
      packsQueryHeads())
    packedHeads = group;
  int64_t numWorkgroups = numQueryTiles * (heads / packedHeads) * batch;
  // Pipelined staging where the tiles to visit are known in advance.
  if (plan.schedules || !plan.staticPattern)
    depth = std::max<int64_t>(target.pipelineDepth, 1);
  // Split only long key ranges: each share keeps at least 4 key tiles.
  if (splitsKeys() && numWorkgroups < target.minWorkgroups && numKeyTiles >= 8)
    splits = std::min<int64_t>(
        {(target.minWorkgroups + numWorkgroups - 1) / numWorkgroups,
         numKeyTiles / 4, std::max<int64_t>(maxKeySplits, 1)});

  // Signature: the host's arguments, [schedule], [tile counts], output
  // (or, split, the partial results).
  SmallVector<Type> argTypes;
  for (Type t : host.getArgumentTypes())
    argTypes.push_back(bufferType(t));
  if (plan.schedules) {
    scheduleWords = encodeSchedules(*plan.schedules);
    scheduleArg = argTypes.size();
    argTypes.push_back(
        MemRefType::get({int64_t(scheduleWords.size())}, b.getI32Type()));
  }
  if (countTiles) {
    countArg = argTypes.size();
    argTypes.push_back(
        MemRefType::get({2 * numWorkgroups * splits}, b.getI32Type()));
  }
  auto outType = cast<RankedTensorType>(host.getResultTypes()[0]);
  argTypes.push_back(
      splits > 1 ? MemRefType::get({numWorkgroups * splits, rows, valueDim + 2},
                                   b.getF32Type())
                 : bufferType(outType));

  b.setInsertionPointToEnd(module.getBody());
  kernel = gpu::GPUFuncOp::create(b, host.getName(),
                                  b.getFunctionType(argTypes, {}));
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  int32_t size = int32_t(invocations());
  kernel.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({size, 1, 1}));
  api->prepareKernel(kernel, size);

  // The launch, for the tools (docs/Gpu.md, "Kernel descriptors").
  kernel->setAttr("attn.grid",
                  b.getDenseI64ArrayAttr(
                      {numQueryTiles * splits, heads / packedHeads, batch}));
  if (splits > 1)
    kernel->setAttr("attn.key_splits", b.getI64IntegerAttr(splits));
  if (packedHeads > 1)
    kernel->setAttr("attn.packed_heads", b.getI64IntegerAttr(packedHeads));
  kernel->setAttr("attn.tiling",
                  b.getDenseI64ArrayAttr({plan.queryTiling.tile,
                                          plan.queryTiling.period, keyTile}));
  SmallVector<Attribute> bindings;
  auto binding = [&](const Twine &name, StringRef access) {
    bindings.push_back(kernelBinding(b, name, access));
  };
  for (unsigned a = 0; a < host.getNumArguments(); ++a)
    binding("arg" + Twine(a), "read");
  if (plan.schedules) {
    binding("schedule", "constant");
    kernel->setAttr("attn.constants",
                    b.getDictionaryAttr(b.getNamedAttr(
                        "schedule", DenseIntElementsAttr::get(
                                        RankedTensorType::get(
                                            {int64_t(scheduleWords.size())},
                                            b.getI32Type()),
                                        ArrayRef<int32_t>(scheduleWords)))));
  }
  if (countTiles)
    binding("tile_counts", "write");
  binding(splits > 1 ? "partials" : "result0", "write");
  kernel->setAttr("attn.bindings", b.getArrayAttr(bindings));

  b.setInsertionPointToStart(&kernel.getBody().front());
  queryBuf = argumentFor(op.getQuery());
  keyBuf = argumentFor(paged ? paged->keys.getPool() : op.getKey());
  valueBuf = argumentFor(paged ? paged->values.getPool() : op.getValue());
  if (paged)
    tableBuf = argumentFor(paged->keys.getTable());
  if (op.getQSegments()) {
    qSegBuf = argumentFor(op.getQSegments());
    kvSegBuf = argumentFor(op.getKvSegments());
  }
  if (op.getMask())
    maskBuf = argumentFor(op.getMask());
  if (op.getBias())
    biasBuf = argumentFor(op.getBias());
  if (op.getRelTable())
    relTableBuf = argumentFor(op.getRelTable());
  if (plan.schedules)
    scheduleBuf = kernel.getArgument(scheduleArg);
  if (countTiles)
    countBuf = kernel.getArgument(countArg);
  (splits > 1 ? partialsBuf : outBuf) = kernel.getArguments().back();
  emitBody();
  gpu::ReturnOp::create(b);
  if (splits > 1)
    buildMergeKernel(module);
  return kernel;
}

std::pair<Value, Value> GpuKernelEmitter::splitRange(Value begin, Value end) {
  if (splits == 1)
    return {begin, end};
  // ceil((end - begin) / splits) each; the last shares may be empty.
  Value count = arith::SubIOp::create(b, end, begin);
  Value per = arith::DivUIOp::create(
      b, arith::AddIOp::create(b, count, idx(splits - 1)), idx(splits));
  Value lo = arith::MinUIOp::create(
      b,
      arith::AddIOp::create(b, begin, arith::MulIOp::create(b, splitIv, per)),
      end);
  Value hi = arith::MinUIOp::create(b, arith::AddIOp::create(b, lo, per), end);
  return {lo, hi};
}

void GpuKernelEmitter::buildMergeKernel(gpu::GPUModuleOp module) {
  OpBuilder::InsertionGuard guard(b);
  auto partialsType = cast<MemRefType>(partialsBuf.getType());
  auto outType = bufferType(host.getResultTypes()[0]);
  b.setInsertionPointToEnd(module.getBody());
  auto merge =
      gpu::GPUFuncOp::create(b, (host.getName() + "_merge").str(),
                             b.getFunctionType({partialsType, outType}, {}));
  merge->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  merge.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({int32_t(rows), 1, 1}));
  api->prepareKernel(merge, int32_t(rows));
  merge->setAttr("attn.grid", b.getDenseI64ArrayAttr(
                                  {numQueryTiles, heads / packedHeads, batch}));
  merge->setAttr("attn.tiling",
                 b.getDenseI64ArrayAttr({plan.queryTiling.tile,
                                         plan.queryTiling.period, keyTile}));
  merge->setAttr("attn.bindings",
                 b.getArrayAttr({kernelBinding(b, "partials", "read"),
                                 kernelBinding(b, "result0", "write")}));

  b.setInsertionPointToStart(&merge.getBody().front());
  Value partials = merge.getArgument(0), out = merge.getArgument(1);
  Value tile = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value headGroup = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value batchRow = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  Value row = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  auto [rowStart, count] =
      emitQueryTileRows(b, b.getLoc(), plan.queryTiling, tile, idx(queryLen));
  // Packed heads: row p of the tile is query row p % queryLen of head
  // headGroup * packedHeads + p / queryLen.
  Value head = headGroup, tileRow = row;
  if (packedHeads > 1) {
    count = idx(queryLen * packedHeads);
    std::tie(head, tileRow) =
        unpackRow(arith::MulIOp::create(b, headGroup, idx(packedHeads)), row);
  }
  auto active = scf::IfOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, count),
      /*withElse=*/false);
  b.setInsertionPointToStart(active.thenBlock());
  Value firstSplit = arith::MulIOp::create(
      b,
      arith::AddIOp::create(
          b,
          arith::MulIOp::create(
              b,
              arith::AddIOp::create(
                  b,
                  arith::MulIOp::create(b, batchRow, idx(heads / packedHeads)),
                  headGroup),
              idx(numQueryTiles)),
          tile),
      idx(splits));
  auto at = [&](int64_t s, int64_t c) {
    return load(partials,
                {arith::AddIOp::create(b, firstSplit, idx(s)), row, idx(c)});
  };
  // M = max m_s; w_s = exp(m_s - M) (0 for splits that kept nothing);
  // O = sum w_s acc_s / sum w_s l_s.
  Value m = f32(-INFINITY);
  for (int64_t s = 0; s < splits; ++s)
    m = arith::MaximumFOp::create(b, m, at(s, valueDim));
  Value reference = arith::SelectOp::create(
      b, arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, f32(-INFINITY)),
      f32(0.0f), m);
  SmallVector<Value> weights;
  Value l = f32(0.0f);
  for (int64_t s = 0; s < splits; ++s) {
    weights.push_back(
        exp(arith::SubFOp::create(b, at(s, valueDim), reference)));
    l = fma(weights.back(), at(s, valueDim + 1), l);
  }
  Value none =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, l, f32(0.0f));
  Value inverse = arith::DivFOp::create(b, f32(1.0f), l);
  Value queryRow = arith::AddIOp::create(b, rowStart, tileRow);
  for (int64_t c = 0; c < valueDim; ++c) {
    Value o = f32(0.0f);
    for (int64_t s = 0; s < splits; ++s)
      o = fma(weights[s], at(s, c), o);
    o = arith::SelectOp::create(b, none, f32(0.0f),
                                arith::MulFOp::create(b, o, inverse));
    memref::StoreOp::create(b, fromF32(o, outType.getElementType()), out,
                            {batchRow, head, queryRow, idx(c)});
  }
  b.setInsertionPointAfter(active);
  gpu::ReturnOp::create(b);
}

void GpuKernelEmitter::emitBody() {
  tileIv = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  if (splits > 1) {
    splitIv = arith::RemUIOp::create(b, tileIv, idx(splits));
    tileIv = arith::DivUIOp::create(b, tileIv, idx(splits));
  }
  // The last query tiles first: under a causal pattern they visit the
  // most key tiles, and launching them first keeps the tail of the launch
  // short (the diagonal tile is already the last one each visits).
  tileIv = arith::SubIOp::create(b, idx(numQueryTiles - 1), tileIv);
  Value headGroup = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  headIv = packedHeads > 1
               ? Value(arith::MulIOp::create(b, headGroup, idx(packedHeads)))
               : headGroup;
  batchIv = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  kvHead = arith::DivUIOp::create(b, headIv, idx(group));
  std::tie(first, tileRows) =
      emitQueryTileRows(b, b.getLoc(), plan.queryTiling, tileIv, idx(queryLen));
  keyCount = idx(keyLen);
  if (paged) {
    // The length, clamped to the capacity: a hostile one reads no row
    // outside the table's pages.
    if (paged->lengthArgument) {
      Value n = load(argumentFor(paged->lengthArgument), {idx(0)});
      n = arith::MinSIOp::create(b, arith::MaxSIOp::create(b, n, i32(0)),
                                 i32(keyLen));
      keyCount = arith::IndexCastOp::create(b, b.getIndexType(), n);
    } else {
      keyCount = idx(std::clamp<int64_t>(paged->constantLength, 0, keyLen));
    }
    // Queries end with the keys (bottom_right) or start with them.
    runtimeDelta = idx(op.getPositionShift());
    if (op.getAlignment() == Alignment::bottom_right)
      runtimeDelta = arith::AddIOp::create(
          b, runtimeDelta, arith::SubIOp::create(b, keyCount, idx(queryLen)));
  }
  prologue();

  SmallVector<Value> state = initialState();
  if (countTiles) // visited and partial key tiles
    state.append({idx(0), idx(0)});

  MaskAttrInterface staticPattern = plan.staticPattern;
  SmallVector<Value> final;
  if (plan.schedules) {
    // Entries [rowStart[t], rowStart[t + 1]) of this head's CSR.
    auto word = [&](Value at) {
      return arith::IndexCastOp::create(b, b.getIndexType(),
                                        load(scheduleBuf, {at}));
    };
    Value csr = word(plan.schedules->sharedByHeads ? idx(0) : headIv);
    Value start = word(arith::AddIOp::create(b, csr, tileIv));
    Value end = word(arith::AddIOp::create(
        b, csr, arith::AddIOp::create(b, tileIv, idx(1))));
    Value entries = arith::AddIOp::create(b, csr, idx(numQueryTiles + 1));
    std::tie(start, end) = splitRange(start, end);
    final = visitKeyTiles(state, start, end, [&](Value e) {
      Value entry = word(arith::AddIOp::create(b, entries, e));
      Value tile = arith::ShRUIOp::create(b, entry, idx(1));
      Value isFull = arith::CmpIOp::create(
          b, arith::CmpIPredicate::eq, arith::AndIOp::create(b, entry, idx(1)),
          idx(1));
      return std::make_pair(tile, isFull);
    });
  } else if (!staticPattern) {
    auto [lo, hi] = splitRange(idx(0), keyTileCount());
    final = visitKeyTiles(state, lo, hi, [&](Value tile) {
      return std::make_pair(tile, Value());
    });
  } else {
    auto [lo, hi] = splitRange(idx(0), keyTileCount());
    auto loop = scf::ForOp::create(
        b, lo, hi, idx(1), state,
        [&](OpBuilder &nb, Location loc, Value tile, ValueRange iter) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          // Run-time tile classes (the schedule would be too large): one
          // stage, since the next visited tile is not known in advance.
          Value j0 = arith::MulIOp::create(b, tile, idx(keyTile));
          Value j1 = arith::MinUIOp::create(
              b, arith::AddIOp::create(b, j0, idx(keyTile)), keyCount);
          std::pair<Value, Value> tileClass = emitTileClass(
              b, b.getLoc(), staticPattern, first,
              arith::AddIOp::create(b, first, tileRows), j0, j1, deltaValue());
          Value isFull = tileClass.second;
          auto skip = scf::IfOp::create(
              b, tileClass.first,
              [&](OpBuilder &tb, Location tl) {
                scf::YieldOp::create(tb, tl, iter);
              },
              [&](OpBuilder &eb, Location el) {
                OpBuilder::InsertionGuard g(b);
                b.setInsertionPoint(eb.getInsertionBlock(),
                                    eb.getInsertionPoint());
                scf::YieldOp::create(b, visitKeyTile(iter, tile, isFull));
              });
          scf::YieldOp::create(b, skip.getResults());
        });
    final = loop.getResults();
  }

  // Workgroups in the order of the grid: query tile (and split) fastest.
  Value workgroup = arith::AddIOp::create(
      b,
      arith::MulIOp::create(
          b,
          arith::AddIOp::create(
              b, arith::MulIOp::create(b, batchIv, idx(heads / packedHeads)),
              headGroup),
          idx(numQueryTiles)),
      tileIv);
  if (splits > 1)
    workgroup = arith::AddIOp::create(
        b, arith::MulIOp::create(b, workgroup, idx(splits)), splitIv);
  ValueRange softmax = ValueRange(final).drop_back(countTiles ? 2 : 0);
  if (splits > 1)
    storePartials(softmax, workgroup);
  else
    storeResult(softmax);
  if (countTiles) {
    auto count = scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, idx(0)),
        /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(count.thenBlock());
    Value at = arith::MulIOp::create(b, workgroup, idx(2));
    for (int k = 0; k < 2; ++k)
      memref::StoreOp::create(
          b,
          arith::IndexCastOp::create(b, b.getI32Type(),
                                     final[final.size() - 2 + k]),
          countBuf, {arith::AddIOp::create(b, at, idx(k))});
  }
}

std::pair<Value, Value> GpuKernelEmitter::unpackRow(Value firstHead, Value p) {
  // Row p is query row p % queryLen of head firstHead + p / queryLen
  // (clamped to the group for the tile's idle rows).
  Value head = arith::AddIOp::create(
      b, firstHead,
      arith::MinUIOp::create(b, arith::DivUIOp::create(b, p, idx(queryLen)),
                             idx(packedHeads - 1)));
  return {head, arith::RemUIOp::create(b, p, idx(queryLen))};
}

void GpuKernelEmitter::forEachShare(int64_t total,
                                    function_ref<void(Value e)> body) {
  scf::ForOp::create(b, tid, idx(total), idx(invocations()), ValueRange{},
                     [&](OpBuilder &nb, Location, Value e, ValueRange) {
                       OpBuilder::InsertionGuard guard(b);
                       b.setInsertionPoint(nb.getInsertionBlock(),
                                           nb.getInsertionPoint());
                       body(e);
                       scf::YieldOp::create(b);
                     });
}

std::pair<Value, Value> GpuKernelEmitter::keyRange(Value keyTileIndex) {
  Value j0 = arith::MulIOp::create(b, keyTileIndex, idx(keyTile));
  Value tk = arith::MinUIOp::create(b, idx(keyTile),
                                    arith::SubIOp::create(b, keyCount, j0));
  return {j0, tk};
}

Value GpuKernelEmitter::keyTileCount() {
  if (!paged)
    return idx(numKeyTiles);
  return arith::DivUIOp::create(
      b, arith::AddIOp::create(b, keyCount, idx(keyTile - 1)), idx(keyTile));
}

std::pair<Value, Value> GpuKernelEmitter::keyRowAt(Value row) {
  if (!paged)
    return {batchIv, row};
  Value entry =
      load(tableBuf, {batchIv, arith::DivUIOp::create(b, row, idx(pageRows))});
  // A table entry outside the pool reads its nearest page (docs/Dialect.md).
  Value page = arith::MinSIOp::create(
      b, arith::MaxSIOp::create(b, entry, i32(0)), i32(numPages - 1));
  return {arith::IndexCastOp::create(b, b.getIndexType(), page),
          arith::RemUIOp::create(b, row, idx(pageRows))};
}

SmallVector<Value> GpuKernelEmitter::visitKeyTile(ValueRange state,
                                                  Value keyTileIndex,
                                                  Value isFull) {
  auto [j0, tk] = keyRange(keyTileIndex);
  stageSlot = idx(0);
  gpu::BarrierOp::create(b);
  stageTile(j0, tk);
  commitStage();
  waitForStages(0);
  gpu::BarrierOp::create(b);
  return computeKeyTile(state, keyTileIndex, isFull);
}

SmallVector<Value> GpuKernelEmitter::visitKeyTiles(
    ValueRange state, Value lo, Value hi,
    function_ref<std::pair<Value, Value>(Value)> tileOf) {
  if (depth == 1) {
    auto loop = scf::ForOp::create(
        b, lo, hi, idx(1), state,
        [&](OpBuilder &nb, Location loc, Value e, ValueRange iter) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          auto [tile, isFull] = tileOf(e);
          scf::YieldOp::create(b, visitKeyTile(iter, tile, isFull));
        });
    return loop.getResults();
  }
  // A ring of `depth` stages: while tile e is computed from slot
  // (e - lo) % depth, tiles e + 1 .. e + depth - 1 are (being) copied into
  // the others. Tile e + depth - 1 goes into the slot tile e - 1 was read
  // from, which the barrier closing iteration e - 1 has freed. Every entry
  // commits one copy group, empty past `hi`, so that waiting for all but
  // the newest depth - 1 groups waits exactly for tile e.
  auto slotOf = [&](Value e) {
    return arith::RemUIOp::create(b, arith::SubIOp::create(b, e, lo),
                                  idx(depth));
  };
  auto stageEntry = [&](Value e) {
    {
      auto inRange = scf::IfOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, e, hi),
          /*withElse=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(inRange.thenBlock());
      auto [j0, tk] = keyRange(tileOf(e).first);
      stageSlot = slotOf(e);
      stageTile(j0, tk);
    }
    commitStage();
  };
  gpu::BarrierOp::create(b); // the buffers' last readers are done
  for (int64_t s = 0; s + 1 < depth; ++s)
    stageEntry(arith::AddIOp::create(b, lo, idx(s)));
  if (!stagesAsynchronously())
    gpu::BarrierOp::create(b);
  auto loop = scf::ForOp::create(
      b, lo, hi, idx(1), state,
      [&](OpBuilder &nb, Location loc, Value e, ValueRange iter) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        stageEntry(arith::AddIOp::create(b, e, idx(depth - 1)));
        if (stagesAsynchronously()) {
          // Tile e's copies are done here and, after the barrier, in
          // every invocation's view.
          waitForStages(depth - 1);
          gpu::BarrierOp::create(b);
        }
        auto [tile, isFull] = tileOf(e);
        stageSlot = slotOf(e);
        SmallVector<Value> next = computeKeyTile(iter, tile, isFull);
        gpu::BarrierOp::create(b);
        scf::YieldOp::create(b, next);
      });
  return loop.getResults();
}

SmallVector<Value> GpuKernelEmitter::computeKeyTile(ValueRange state,
                                                    Value keyTileIndex,
                                                    Value isFull) {
  auto [j0, tk] = keyRange(keyTileIndex);

  // Schedules without partial tiles (block patterns cut at their blocks)
  // need no mask code at all, nor its tables.
  bool anyPartial =
      !plan.schedules ||
      llvm::any_of(plan.schedules->perHead, [](const TileSchedule &s) {
        return s.numFull() != s.numVisited();
      });
  // Segment ids and dense masks are only known at run time.
  bool runtimeMask = plan.runtimeSegments || maskBuf;
  bool needsMask = (plan.staticPattern && anyPartial) || runtimeMask;
  ValueRange softmax = state.drop_back(countTiles ? 2 : 0);
  SmallVector<Value> next;
  if (!needsMask || !isFull) {
    next = processTile(softmax, j0, tk, needsMask);
  } else if (runtimeMask) {
    // Every tile is masked.
    next = processTile(softmax, j0, tk, /*masked=*/true);
  } else {
    auto branch = scf::IfOp::create(
        b, isFull,
        [&](OpBuilder &tb, Location) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(tb.getInsertionBlock(), tb.getInsertionPoint());
          scf::YieldOp::create(b, processTile(softmax, j0, tk, false));
        },
        [&](OpBuilder &eb, Location) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(eb.getInsertionBlock(), eb.getInsertionPoint());
          scf::YieldOp::create(b, processTile(softmax, j0, tk, true));
        });
    next = branch.getResults();
  }
  if (countTiles) {
    Value visited = state[state.size() - 2], partial = state.back();
    visited = arith::AddIOp::create(b, visited, idx(1));
    if (needsMask) {
      Value masked = isFull && !runtimeMask
                         ? arith::SelectOp::create(b, isFull, idx(0), idx(1))
                         : idx(1);
      partial = arith::AddIOp::create(b, partial, masked);
    }
    next.append({visited, partial});
  }
  return next;
}

/// The indices of element (i, j) of a dense [B?, H?, Lq, Lk] operand
/// (size-1 batch and head dimensions broadcast).
Value GpuKernelEmitter::finishScore(Value s, Value i, Value j, bool masked) {
  s = modScore(s, i, j);
  if (!op.getScore().empty())
    // Constants the canonicalizer hoisted out of the region live in the
    // host function: the kernel gets its own copies (checkGpuSupported
    // refused any other value from outside).
    s = emitScoreRegion(b, op, s, batchIv, headIv, i, j,
                        /*copyCapturedConstants=*/true);
  if (!masked)
    return s;
  return arith::SelectOp::create(b, elementMask(i, j), s, f32(-INFINITY));
}

//===----------------------------------------------------------------------===//
// ScalarFlashEmitter: one invocation per query row
//===----------------------------------------------------------------------===//

namespace {

class ScalarFlashEmitter : public GpuKernelEmitter {
public:
  using GpuKernelEmitter::GpuKernelEmitter;

private:
  /// Invocations per query row: 2 when q and the accumulator together
  /// would not fit in registers (D = Dv = 128 is 256 floats; CUDA spills
  /// past 255 registers); each holds half of both, and a shuffle adds the
  /// halves of each score.
  int64_t lanes() const {
    return headDim + valueDim > 192 && headDim % 2 == 0 && valueDim % 2 == 0
               ? 2
               : 1;
  }
  int64_t invocations() const override { return rows * lanes(); }
  void prologue() override;
  SmallVector<Value> initialState() override;
  void stageTile(Value j0, Value tk) override;
  SmallVector<Value> processTile(ValueRange state, Value j0, Value tk,
                                 bool masked) override;
  void storeResult(ValueRange state) override;
  bool splitsKeys() const override { return true; }
  void storePartials(ValueRange state, Value workgroup) override;
  SmallVector<Value> update(ValueRange state, Value s, Value jj);

  /// Column c of this invocation's share of a row of `width`.
  Value column(int64_t width, int64_t c) {
    if (lanes() == 1)
      return idx(c);
    return arith::AddIOp::create(
        b, arith::MulIOp::create(b, part, idx(width / lanes())), idx(c));
  }

  Value rowActive, rowInTile, queryRow, part, keysShared, valuesShared;
  SmallVector<Value> q;
};

void ScalarFlashEmitter::prologue() {
  rowInTile = arith::DivUIOp::create(b, tid, idx(lanes()));
  part = arith::RemUIOp::create(b, tid, idx(lanes()));
  rowActive =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rowInTile, tileRows);
  // Rows past the tile's end compute on the tile's first row and store
  // nothing; they still take part in staging and barriers.
  queryRow = arith::SelectOp::create(
      b, rowActive, arith::AddIOp::create(b, first, rowInTile), first);
  // q with the scale folded in (as the CPU kernels do).
  Value scaleValue = f32(scale());
  for (int64_t c = 0; c < headDim / lanes(); ++c)
    q.push_back(arith::MulFOp::create(
        b,
        toF32(load(queryBuf, {batchIv, headIv, queryRow, column(headDim, c)})),
        scaleValue));
  keysShared = workgroupBuffer({depth * keyTile, headDim}, b.getF32Type());
  valuesShared = workgroupBuffer({depth * keyTile, valueDim}, b.getF32Type());
}

SmallVector<Value> ScalarFlashEmitter::initialState() {
  SmallVector<Value> state = {f32(-INFINITY), f32(0.0f)};
  for (int64_t c = 0; c < valueDim / lanes(); ++c)
    state.push_back(f32(0.0f));
  return state;
}

void ScalarFlashEmitter::stageTile(Value j0, Value tk) {
  // Every invocation copies a strided share of the tile's K and V rows.
  auto stage = [&](Value source, Value shared, int64_t width) {
    forEachShare(keyTile * width, [&](Value e) {
      Value r = arith::DivUIOp::create(b, e, idx(width));
      Value c = arith::RemUIOp::create(b, e, idx(width));
      auto inside = scf::IfOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, r, tk),
          /*withElse=*/false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(inside.thenBlock());
      auto [outer, row] = keyRowAt(arith::AddIOp::create(b, j0, r));
      Value x = toF32(load(source, {outer, kvHead, row, c}));
      memref::StoreOp::create(b, x, shared, {stagedRow(r), c});
    });
  };
  stage(keyBuf, keysShared, headDim);
  stage(valueBuf, valuesShared, valueDim);
}

SmallVector<Value> ScalarFlashEmitter::processTile(ValueRange state, Value j0,
                                                   Value tk, bool masked) {
  auto loop = scf::ForOp::create(
      b, idx(0), tk, idx(1), state,
      [&](OpBuilder &nb, Location loc, Value jj, ValueRange iter) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value j = arith::AddIOp::create(b, j0, jj);
        Value s = f32(0.0f);
        for (int64_t c = 0; c < headDim / lanes(); ++c)
          s = fma(q[c], load(keysShared, {stagedRow(jj), column(headDim, c)}),
                  s);
        if (lanes() == 2) {
          // Both invocations of a row take the whole score.
          int64_t width = api->shuffleWidth();
          Value other =
              gpu::ShuffleOp::create(
                  b, s, arith::ConstantIntOp::create(b, b.getI32Type(), 1),
                  arith::ConstantIntOp::create(b, b.getI32Type(), width),
                  gpu::ShuffleMode::XOR)
                  .getShuffleResult();
          s = arith::AddFOp::create(b, s, other);
        }
        s = finishScore(s, queryRow, j, masked);
        scf::YieldOp::create(b, update(iter, s, jj));
      });
  return loop.getResults();
}

SmallVector<Value> ScalarFlashEmitter::update(ValueRange state, Value s,
                                              Value jj) {
  Value dropped =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, s, f32(-INFINITY));
  auto branch = scf::IfOp::create(
      b, dropped,
      [&](OpBuilder &tb, Location tl) { scf::YieldOp::create(tb, tl, state); },
      [&](OpBuilder &eb, Location) {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPoint(eb.getInsertionBlock(), eb.getInsertionPoint());
        Value m = state[0], l = state[1];
        Value diff = arith::SubFOp::create(b, s, m);
        // -|s - m| as min(d, -d): math.absf is a libdevice call on NVVM.
        Value e = exp(
            arith::MinimumFOp::create(b, diff, arith::NegFOp::create(b, diff)));
        Value raises =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, s, m);
        Value one = f32(1.0f);
        Value alpha = arith::SelectOp::create(b, raises, e, one);
        Value p = arith::SelectOp::create(b, raises, one, e);
        SmallVector<Value> next = {arith::SelectOp::create(b, raises, s, m),
                                   fma(l, alpha, p)};
        for (int64_t c = 0; c < valueDim / lanes(); ++c) {
          Value v = load(valuesShared, {stagedRow(jj), column(valueDim, c)});
          next.push_back(
              fma(p, v, arith::MulFOp::create(b, state[2 + c], alpha)));
        }
        scf::YieldOp::create(b, next);
      });
  return branch.getResults();
}

void ScalarFlashEmitter::storeResult(ValueRange final) {
  // O = acc / l, 0 for rows that kept nothing.
  Type outElement = cast<MemRefType>(outBuf.getType()).getElementType();
  auto store = scf::IfOp::create(b, rowActive, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(store.thenBlock());
  Value l = final[1];
  Value none =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, l, f32(0.0f));
  Value inverse = arith::DivFOp::create(b, f32(1.0f), l);
  for (int64_t c = 0; c < valueDim / lanes(); ++c) {
    Value o = arith::SelectOp::create(
        b, none, f32(0.0f), arith::MulFOp::create(b, final[2 + c], inverse));
    memref::StoreOp::create(b, fromF32(o, outElement), outBuf,
                            {batchIv, headIv, queryRow, column(valueDim, c)});
  }
}

void ScalarFlashEmitter::storePartials(ValueRange final, Value workgroup) {
  auto store = scf::IfOp::create(b, rowActive, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(store.thenBlock());
  for (int64_t c = 0; c < valueDim / lanes(); ++c)
    memref::StoreOp::create(b, final[2 + c], partialsBuf,
                            {workgroup, rowInTile, column(valueDim, c)});
  // m and l: the same in both invocations of a row.
  memref::StoreOp::create(b, final[0], partialsBuf,
                          {workgroup, rowInTile, idx(valueDim)});
  memref::StoreOp::create(b, final[1], partialsBuf,
                          {workgroup, rowInTile, idx(valueDim + 1)});
}

} // namespace

std::unique_ptr<GpuKernelEmitter> mlir::attn::makeScalarFlashEmitter(
    func::FuncOp host, TiledAttention attention, const KernelPlan &plan,
    const TargetDescription &target, bool countTiles) {
  return std::make_unique<ScalarFlashEmitter>(host, attention, plan, target,
                                              countTiles);
}

std::optional<PagedKeys> mlir::attn::matchPagedKeys(func::FuncOp host,
                                                    OnlineAttentionOp op,
                                                    std::string &why) {
  auto keys = op.getKey().getDefiningOp<PagedKvOp>();
  auto values = op.getValue().getDefiningOp<PagedKvOp>();
  if (!keys && !values)
    return std::nullopt;
  auto refuse = [&](const Twine &reason) -> std::optional<PagedKeys> {
    why = reason.str();
    return std::nullopt;
  };
  if (!keys || !values || keys.getTable() != values.getTable() ||
      keys.getLength() != values.getLength())
    return refuse("K and V read through a page table must both come from "
                  "attn.paged_kv with one table and length");
  if (!isHostArgument(host, keys.getPool()) ||
      !isHostArgument(host, values.getPool()) ||
      !isHostArgument(host, keys.getTable()))
    return refuse("the pools and the page table of attn.paged_kv must be "
                  "arguments of the function");
  auto keyPool = cast<ShapedType>(keys.getPool().getType());
  auto valuePool = cast<ShapedType>(values.getPool().getType());
  if (keyPool.getDimSize(0) != valuePool.getDimSize(0) ||
      keyPool.getDimSize(2) != valuePool.getDimSize(2))
    return refuse("K and V pools of different pages or rows per page");
  if (!cast<ShapedType>(keys.getTable().getType())
           .getElementType()
           .isInteger(32))
    return refuse("a page table of i64 (the kernels read i32 tables)");
  PagedKeys paged;
  paged.keys = keys;
  paged.values = values;
  APInt constant;
  if (matchPattern(keys.getLength(), m_ConstantInt(&constant))) {
    paged.constantLength = constant.getSExtValue();
    return paged;
  }
  // arith.index_cast(tensor.extract %length[%c0]), %length a [1] i32
  // argument: the form the layer runtime's kv_length takes.
  auto toIndex = keys.getLength().getDefiningOp<arith::IndexCastOp>();
  auto extract =
      toIndex ? toIndex.getIn().getDefiningOp<tensor::ExtractOp>() : nullptr;
  if (!extract || !isHostArgument(host, extract.getTensor()) ||
      extract.getTensor().getType() !=
          RankedTensorType::get({1}, IntegerType::get(host.getContext(), 32)))
    return refuse("a paged cache's length must be a constant or element 0 "
                  "of a [1] i32 argument");
  paged.lengthArgument = extract.getTensor();
  return paged;
}

LogicalResult mlir::attn::checkGpuSupported(func::FuncOp host,
                                            TiledAttention attention,
                                            const KernelPlan &plan,
                                            const TargetDescription &target) {
  OnlineAttentionOp op = attention.tile;
  auto fail = [&](const Twine &why) {
    return op.emitError() << "attn-to-gpu-kernels: " << why
                          << " (not supported by target '" << target.name
                          << "' yet)";
  };
  for (Type t : host.getArgumentTypes())
    if (!isa<RankedTensorType>(t) || !cast<ShapedType>(t).hasStaticShape())
      return fail("GPU kernels take tensors of static shape");
  if (host.getNumResults() != 1 ||
      !cast<ShapedType>(host.getResultTypes()[0]).hasStaticShape())
    return fail("GPU kernels return one tensor of static shape");
  Type element = cast<ShapedType>(op.getQuery().getType()).getElementType();
  if (!target.supportsElementType(element)) {
    std::string name;
    llvm::raw_string_ostream os(name);
    element.print(os);
    return fail("element type " + name);
  }
  std::string pagedWhy;
  std::optional<PagedKeys> paged = matchPagedKeys(host, op, pagedWhy);
  if (!pagedWhy.empty())
    return fail(pagedWhy);
  Value key = paged ? Value() : op.getKey(),
        value = paged ? Value() : op.getValue();
  for (Value v : std::initializer_list<Value>{
           op.getQuery(), key, value, op.getQSegments(), op.getKvSegments(),
           op.getMask(), op.getBias(), op.getRelTable()})
    if (v && !isHostArgument(host, v))
      return fail("Q, K, V, segment ids, mask, bias and rel_table must be "
                  "arguments of the function");
  // Operands with a key dimension would need it at run time too.
  if (paged && (op.getKvSegments() || op.getMask() || op.getBias()))
    return fail("a paged K and V with key segment ids, a mask or a bias "
                "operand");
  std::string reason;
  if (!isScoreModCodegenSupported(op.getModsAttr(), op.getMaskShape().numHeads,
                                  reason))
    return fail(reason);
  if (MaskAttrInterface pattern = op.getPatternAttr())
    if (!isMaskCodegenSupported(pattern, op.getMaskShape(),
                                /*withTensors=*/true, reason))
      return fail(reason);
  bool capturesOnlyConstants = true;
  op.getScore().walk([&](Operation *inner) {
    for (Value operand : inner->getOperands())
      if (!op.getScore().isAncestor(operand.getParentRegion()) &&
          !matchPattern(operand, m_Constant()))
        capturesOnlyConstants = false;
  });
  if (!capturesOnlyConstants)
    return fail("a score region that uses values from outside it (other "
                "than constants)");
  QueryTiling tiling = attention.queryTiling();
  if (plan.keyTile != op.getKeyTileAttr().getInt() ||
      plan.queryTiling.tile != tiling.tile ||
      plan.queryTiling.period != tiling.period)
    return op.emitError() << "attn-to-gpu-kernels: the attention is tiled "
                             "for another target (run attn-tile{target="
                          << target.name << "})";
  return success();
}

gpu::GPUFuncOp mlir::attn::buildGpuFlashKernel(
    func::FuncOp host, TiledAttention attention, const KernelPlan &plan,
    const TargetDescription &target, gpu::GPUModuleOp module,
    const GpuKernelOptions &options) {
  bool countTiles = options.countTiles;
  std::unique_ptr<GpuKernelEmitter> emitter;
  if (usesWarpgroupMmaKernel(attention, plan, target, options.emulateWgmma))
    emitter = makeWgmmaFlashEmitter(host, attention, plan, target, countTiles);
  else if (usesMmaKernel(attention, plan, target, options.emulateMma,
                         options.f32Mma))
    emitter = makeMmaFlashEmitter(host, attention, plan, target, countTiles,
                                  options.f32Mma);
  else
    emitter = makeScalarFlashEmitter(host, attention, plan, target, countTiles);
  emitter->maxKeySplits = options.maxKeySplits;
  return emitter->build(module);
}
