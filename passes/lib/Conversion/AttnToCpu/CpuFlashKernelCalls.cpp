//===- CpuFlashKernelCalls.cpp - the calls of the flash kernel's tiles ---===//
//
// CpuFlashKernel::build: the op's operands as buffers, the result (and lse)
// allocated, then the forall of calls to the tile function per (batch,
// head, query tile), or, for decoding shapes, per (batch, key/value head)
// to the packed-heads kernel, split over key ranges and merged when the
// groups are too few for the threads (chosen at run time when sizes are
// dynamic).
//
//===----------------------------------------------------------------------===//
#include "CpuFlashKernel.h"
#include "LoopBuilder.h"

using namespace mlir;
using namespace mlir::attn;

SmallVector<Value, 2> CpuFlashKernel::build(ModuleOp moduleOp,
                                            CpuFlashKernel *packed,
                                            CpuFlashKernel *splitter) {
  assert((!lseType || (!packed && !splitter)) &&
         "lse results come from the per-query-tile kernel only");
  module = moduleOp;

  auto toBuffer = [&](Value tensor) -> Value {
    return bufferization::ToBufferOp::create(b, bufferTypeOf(tensor), tensor,
                                             /*read_only=*/true);
  };
  // A paged cache is read in place only when every kernel built here can.
  bool pages = readsPages && (!packed || packed->readsPages) &&
               (!splitter || splitter->readsPages);
  for (CpuFlashKernel *kernel : {this, packed, splitter})
    if (kernel)
      kernel->readsPages = pages;
  Value q = toBuffer(op.getQuery());
  Value k = toBuffer(pages ? pagedKeys.getPool() : op.getKey()),
        v = toBuffer(pages ? pagedValues.getPool() : op.getValue());
  // What the tile functions take after their other arguments.
  SmallVector<Value> pagedArgs;
  if (pages)
    pagedArgs = {toBuffer(pagedKeys.getTable()), pagedKeys.getLength()};
  Value keyCount = pages ? pagedKeys.getLength() : dim(k, 2);
  Value batch = dim(q, 0), queryHeads = dim(q, 1);
  Value numQueryTiles =
      plan.queryTiling.period
          ? index(plan.queryTiling.numTiles(op.getMaskShape().lq))
          : arith::CeilDivUIOp::create(b, dim(q, 2), index(kQueryTile));

  SmallVector<Value> dynamicSizes;
  Value resultDims[4] = {batch, queryHeads, dim(q, 2), dim(v, 3)};
  for (int64_t d = 0; d < 4; ++d)
    if (resultType.isDynamicDim(d))
      dynamicSizes.push_back(resultDims[d]);
  Value result = memref::AllocOp::create(
      b, MemRefType::get(resultType.getShape(), resultType.getElementType()),
      dynamicSizes, b.getI64IntegerAttr(64));

  // Segment ids and the relative-position table, as the tile function takes
  // them after its index arguments.
  SmallVector<Value> operandBuffers;
  if (op.getPatternAttr() && op.getPatternAttr().usesSegments())
    operandBuffers = {toBuffer(op.getQSegments()),
                      toBuffer(op.getKvSegments())};
  if (op.getRelTable())
    operandBuffers.push_back(toBuffer(op.getRelTable()));
  Value biasBuffer;
  if (op.getBias()) {
    biasBuffer = toBuffer(op.getBias());
    operandBuffers.push_back(biasBuffer);
  }
  if (op.getMask())
    operandBuffers.push_back(toBuffer(op.getMask()));
  Value lseResult;
  if (lseType) {
    SmallVector<Value> lseSizes;
    for (int64_t d = 0; d < 3; ++d)
      if (lseType.isDynamicDim(d))
        lseSizes.push_back(resultDims[d]);
    lseResult =
        memref::AllocOp::create(b, MemRefType::get(lseType.getShape(), f32),
                                lseSizes, b.getI64IntegerAttr(64));
    operandBuffers.push_back(lseResult);
  }
  // One call per (batch, head, query tile), in parallel.
  auto emitForall = [&](func::FuncOp fn, ValueRange sizes) {
    auto forall = scf::ForallOp::create(b, getAsOpFoldResult(sizes),
                                        ValueRange{}, std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    SmallVector<Value> args = {q, k, v, result};
    llvm::append_range(args, forall.getInductionVars());
    llvm::append_range(args, operandBuffers);
    llvm::append_range(args, pagedArgs);
    func::CallOp::create(b, fn, args);
  };
  // When the group's queries fit the packed kernel's vector, one call per
  // (batch, key/value head) reads each key and value row once; the sizes
  // decide at compile time when they are static, else at run time.
  Value keyHeads = dim(k, 1);
  Value fits;
  if (packed) {
    Value lanes = b.createOrFold<arith::MulIOp>(
        b.createOrFold<arith::DivUIOp>(queryHeads, keyHeads), dim(q, 2));
    fits = b.createOrFold<arith::CmpIOp>(arith::CmpIPredicate::ule, lanes,
                                         index(packed->kQueryTile));
  }
  auto emitGroups = [&] {
    Value splits = splitter ? numKeySplits(batch, keyHeads, keyCount, dim(v, 3))
                            : index(1);
    auto unsplit = [&] {
      emitForall(packed->buildTileFunction(module),
                 {batch, keyHeads, index(1)});
    };
    if (matchPattern(splits, m_One())) {
      unsplit();
      return;
    }
    // Few groups for the threads: each group's keys in `splits` ranges,
    // then a merge per group. The partial states live in this call's
    // frame for its duration (an alloca scope).
    auto emitSplit = [&] {
      auto scope = memref::AllocaScopeOp::create(b, TypeRange{});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&scope.getBodyRegion().emplaceBlock());
      Value slots = mul(mul(batch, keyHeads), splits);
      Value partialBuf = memref::AllocaOp::create(
          b,
          MemRefType::get(
              {ShapedType::kDynamic, ShapedType::kDynamic, splitter->kLanes},
              f32),
          ValueRange{slots, add(dim(v, 3), index(2))}, b.getI64IntegerAttr(64));
      func::FuncOp splitFn = splitter->buildTileFunction(module);
      func::FuncOp mergeFn = splitter->buildMergeFunction(module);
      auto callAll = [&](ValueRange sizes,
                         function_ref<SmallVector<Value>(ValueRange)> args) {
        auto forall = scf::ForallOp::create(b, getAsOpFoldResult(sizes),
                                            ValueRange{}, std::nullopt);
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(forall.getBody());
        return args(forall.getInductionVars());
      };
      callAll({batch, keyHeads, splits}, [&](ValueRange iv) {
        // Packed heads take no other operand than a bias shared by the heads.
        SmallVector<Value> args = {q, k, v, result, iv[0], iv[1], index(0)};
        if (biasBuffer)
          args.push_back(biasBuffer);
        llvm::append_range(args, ValueRange{partialBuf, iv[2], splits});
        llvm::append_range(args, pagedArgs);
        func::CallOp::create(b, splitFn, args);
        return SmallVector<Value>{};
      });
      callAll({batch, keyHeads}, [&](ValueRange iv) {
        SmallVector<Value> args = {q,          k,     v,     result,
                                   partialBuf, iv[0], iv[1], splits};
        llvm::append_range(args, pagedArgs);
        func::CallOp::create(b, mergeFn, args);
        return SmallVector<Value>{};
      });
      memref::AllocaScopeReturnOp::create(b, ValueRange{});
    };
    emitChoice(b.createOrFold<arith::CmpIOp>(arith::CmpIPredicate::ugt, splits,
                                             index(1)),
               emitSplit, unsplit);
  };
  auto emitTiles = [&] {
    // bf16 pair products read V transposed (CpuFlashKernelAmx.cpp),
    // written once here.
    if (usesPairs()) {
      auto [vT, finite] = transposeValues(v);
      operandBuffers.append({vT, finite});
    }
    emitForall(buildTileFunction(module), {batch, queryHeads, numQueryTiles});
  };
  if (packed)
    emitChoice(fits, emitGroups, emitTiles);
  else
    emitTiles();
  SmallVector<Value, 2> results = {bufferization::ToTensorOp::create(
      b, resultType, result, /*restrict=*/b.getUnitAttr(),
      /*writable=*/b.getUnitAttr())};
  if (lseResult)
    results.push_back(bufferization::ToTensorOp::create(
        b, lseType, lseResult, /*restrict=*/b.getUnitAttr(),
        /*writable=*/b.getUnitAttr()));
  return results;
}
