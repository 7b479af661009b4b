//===- GpuBackwardKernel.cpp - the backward as two GPU kernels ------------===//
//
// FlashAttention-2's backward in two kernels over square T x T tiles, one
// invocation per row, f32 arithmetic (16-bit inputs widened as loaded):
//
//   <name>: workgroup (key tile, key/value head, batch), invocation = key j
//     k, v = K[j], V[j]; dk = dv = 0                      // registers
//     for each query head h of the group, each query tile the pattern
//     keeps something of (the forward's schedule transposed, or tile
//     classes at run time):
//       barrier; Q, dO rows, lse, D = rowsum(dO o O) -> workgroup memory
//       barrier; for each row i of the tile, where x(i, j) is kept:
//         p = exp(x - lse_i), dp = dO_i . v, dS = scale p (dp - D_i) cap'
//         dv += p dO_i;  dk += dS Q_i
//     dK[j] = dk, dV[j] = dv
//   <name>_query_grad: workgroup (query tile, query head, batch),
//     invocation = query row i; q, dO, lse, D in registers; dq = 0
//     for each key tile the schedule lists: K, V rows -> workgroup memory
//       for each kept key j: the same p and dS;  dq += dS K_j
//     dQ[i] = dq
//
// Each dK / dV row has one writer (its key's invocation, which sums over
// the heads of its group), each dQ row one (its query's), so nothing races
// and nothing is accumulated in memory. Dropped keys (x = -inf) are
// skipped, so a masked key's NaN K or V reaches no gradient. cap' is the
// soft-cap's derivative 1 - tanh^2. Score regions and operand gradients
// are refused (the CPU computes them).
//
//===----------------------------------------------------------------------===//
#include "GpuBackwardKernel.h"
#include "GpuCodegen.h"
#include "attn/Dialect/Attn/IR/TileSchedule.h"
#include "attn/Transforms/MaskCodegen.h"
#include "attn/Transforms/ScoreModCodegen.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Schedules past this many entries are classified at run time instead.
constexpr int64_t kMaxScheduleEntries = int64_t(1) << 22;

/// A CSR list in one i32 buffer: start[n + 1], then per entry
/// `tile * 2 + isFull`.
std::vector<int32_t> encodeCsr(ArrayRef<std::vector<int32_t>> lists) {
  std::vector<int32_t> words;
  int32_t start = 0;
  for (const std::vector<int32_t> &list : lists) {
    words.push_back(start);
    start += int32_t(list.size());
  }
  words.push_back(start);
  for (const std::vector<int32_t> &list : lists)
    words.insert(words.end(), list.begin(), list.end());
  return words;
}

class GpuBackwardEmitter : public GpuCodegen {
public:
  GpuBackwardEmitter(func::FuncOp host, AttentionGradOp op,
                     const TargetDescription &target);

  SmallVector<gpu::GPUFuncOp> build(gpu::GPUModuleOp module);

private:
  /// The gpu.func `name` over a grid of `grid` workgroups of `tile`
  /// invocations: the host's arguments, the schedule (when not empty),
  /// then the host results `results`; buffers bound to the op's operands.
  gpu::GPUFuncOp createKernel(gpu::GPUModuleOp module, StringRef name,
                              std::array<int64_t, 3> grid,
                              const std::vector<int32_t> &schedule,
                              ArrayRef<unsigned> results);
  void emitKeyValueGradKernel();
  void emitQueryGradKernel();
  /// Calls visit(tile, isFull) for each tile of the `own` tile's list
  /// (per key tile its query tiles, or the reverse): from the schedule
  /// buffer, else every tile not empty by its run-time class.
  SmallVector<Value>
  visitTiles(ValueRange state, Value own, bool byKey,
             function_ref<SmallVector<Value>(ValueRange, Value, Value)> visit);
  /// `use`(p, dS) of the pair (i, j) from the raw q.k, emitted in an
  /// scf.if on the pair being kept (`state` unchanged when it is dropped).
  SmallVector<Value>
  withKeptPair(ValueRange state, Value dot, Value i, Value j, bool masked,
               Value lse, function_ref<Value()> valueDot, Value rowDelta,
               function_ref<SmallVector<Value>(Value p, Value ds)> use);
  /// Runs `body(masked)` in an scf.if on isFull (or once, when the tile's
  /// mask is known at compile time).
  SmallVector<Value>
  dispatchMasked(ValueRange state, Value isFull,
                 function_ref<SmallVector<Value>(bool)> body);
  SmallVector<Value>
  forLoop(Value lo, Value hi, ValueRange init,
          function_ref<SmallVector<Value>(Value, ValueRange)> body);
  SmallVector<Value> ifThen(Value cond, ValueRange state,
                            function_ref<SmallVector<Value>()> then);
  /// The kernel's argument `n` from the end of its signature (CUDA's
  /// workgroup attributions follow the arguments in the entry block).
  Value resultArgument(int64_t n) {
    return kernel.getArgument(kernel.getFunctionType().getNumInputs() + n);
  }
  Value argumentFor(Value value) {
    return kernel.getArgument(cast<BlockArgument>(value).getArgNumber());
  }
  Value minIndex(Value x, Value y) { return arith::MinUIOp::create(b, x, y); }
  /// The first row of tile t and its number of rows (of `length`).
  std::pair<Value, Value> tileRows(Value t, int64_t length) {
    Value first = mul(t, idx(tile));
    return {first,
            minIndex(idx(tile), arith::SubIOp::create(b, idx(length), first))};
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value lessThan(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, x, y);
  }
  /// sum_{c < n} x(c) y(c), in f32 FMAs.
  Value sumOfProducts(int64_t n, function_ref<Value(int64_t)> x,
                      function_ref<Value(int64_t)> y) {
    Value sum = f32(0.0f);
    for (int64_t c = 0; c < n; ++c)
      sum = fma(x(c), y(c), sum);
    return sum;
  }

  AttentionGradOp op;
  int64_t batch, queryLen, keyLen, headDim, valueDim, kvHeads, group;
  int64_t tile = 0, numQueryTiles = 0, numKeyTiles = 0;
  float scaleValue;
  std::optional<float> cap;
  /// The positional part of the pattern that tiles are classified by (null:
  /// every tile is visited), whether every visited tile evaluates the mask
  /// per pair (segment ids, a mask operand), and the schedules (both
  /// directions) when known at compile time.
  MaskAttrInterface classPattern;
  bool maskEveryTile = false;
  std::vector<int32_t> byQueryTile, byKeyTile;
  Value queryBuf, keyBuf, valueBuf, outputBuf, outputGradBuf, lseBuf,
      scheduleBuf, tid;
};

GpuBackwardEmitter::GpuBackwardEmitter(func::FuncOp host, AttentionGradOp op,
                                       const TargetDescription &target)
    : GpuCodegen(host, target), op(op) {
  setScoreParts(op);
  auto q = cast<ShapedType>(op.getQuery().getType());
  auto k = cast<ShapedType>(op.getKey().getType());
  batch = q.getDimSize(0);
  queryLen = q.getDimSize(2);
  headDim = q.getDimSize(3);
  kvHeads = k.getDimSize(1);
  keyLen = k.getDimSize(2);
  valueDim = cast<ShapedType>(op.getValue().getType()).getDimSize(3);
  group = heads / kvHeads;
  scaleValue = op.getScale() ? op.getScale()->convertToFloat()
                             : float(1.0 / std::sqrt(double(headDim)));
  if (ArrayAttr list = op.getModsAttr())
    for (Attribute mod : list)
      if (auto softcap = dyn_cast<SoftcapAttr>(mod))
        cap = softcap.getCap().convertToFloat();

  // Segment ids are known at run time only; a union with them cannot be
  // classified per tile: such patterns evaluate every pair.
  auto [segmentsTested, rest] = splitRuntimeSegments(pattern);
  classPattern = rest;
  if (classPattern && classPattern.usesSegments())
    classPattern = nullptr, segmentsTested = true;
  maskEveryTile = segmentsTested || op.getMask();

  // Square tiles as large as the target's key tile, while one tile's rows
  // fit the workgroup memory: Q, dO, lse and D, and the invocations' own
  // padded V rows in the dK / dV kernel (K, V and own dO rows in the dQ
  // kernel: fewer).
  tile = std::max<int64_t>(target.maxKeyTile, 1);
  while (tile > 1 &&
         tile * (headDim + 2 * valueDim + 3) * 4 > target.workgroupMemoryBytes)
    tile /= 2;
  if (classPattern)
    tile = keyTileFor(classPattern, tile);
  numQueryTiles = (queryLen + tile - 1) / tile;
  numKeyTiles = (keyLen + tile - 1) / tile;

  if (!classPattern || dependsOnHead(classPattern))
    return;
  int64_t delta = this->delta;
  TileSchedule schedule = buildTileSchedule(
      classPattern, MaskQuery{queryLen, keyLen, delta, 0, {}, {}},
      QueryTiling{tile, 0}, tile, kMaxScheduleEntries);
  if (!schedule.complete)
    return;
  byQueryTile = encodeCsr(scheduleLists(schedule, /*byKey=*/false));
  byKeyTile = encodeCsr(scheduleLists(schedule, /*byKey=*/true));
}

SmallVector<gpu::GPUFuncOp> GpuBackwardEmitter::build(gpu::GPUModuleOp module) {
  SmallVector<gpu::GPUFuncOp> kernels;
  createKernel(module, host.getName(), {numKeyTiles, kvHeads, batch}, byKeyTile,
               {1, 2});
  emitKeyValueGradKernel();
  kernels.push_back(kernel);
  createKernel(module, (host.getName() + "_query_grad").str(),
               {numQueryTiles, heads, batch}, byQueryTile, {0});
  emitQueryGradKernel();
  kernels.push_back(kernel);
  return kernels;
}

gpu::GPUFuncOp GpuBackwardEmitter::createKernel(
    gpu::GPUModuleOp module, StringRef name, std::array<int64_t, 3> grid,
    const std::vector<int32_t> &schedule, ArrayRef<unsigned> results) {
  SmallVector<Type> argTypes;
  SmallVector<Attribute> bindings;
  auto binding = [&](const Twine &bindingName, StringRef access) {
    bindings.push_back(kernelBinding(b, bindingName, access));
  };
  for (auto [a, type] : llvm::enumerate(host.getArgumentTypes())) {
    argTypes.push_back(bufferType(type));
    binding("arg" + Twine(a), "read");
  }
  auto scheduleType =
      RankedTensorType::get({int64_t(schedule.size())}, b.getI32Type());
  if (!schedule.empty()) {
    argTypes.push_back(
        MemRefType::get(scheduleType.getShape(), b.getI32Type()));
    binding("schedule", "constant");
  }
  for (unsigned r : results) {
    argTypes.push_back(bufferType(host.getResultTypes()[r]));
    binding("result" + Twine(r), "write");
  }

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  kernel = gpu::GPUFuncOp::create(b, name, b.getFunctionType(argTypes, {}));
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  kernel.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({int32_t(tile), 1, 1}));
  api->prepareKernel(kernel, int32_t(tile));
  kernel->setAttr("attn.grid", b.getDenseI64ArrayAttr(grid));
  kernel->setAttr("attn.tiling", b.getDenseI64ArrayAttr({tile, 0, tile}));
  kernel->setAttr("attn.bindings", b.getArrayAttr(bindings));
  if (!schedule.empty())
    kernel->setAttr(
        "attn.constants",
        b.getDictionaryAttr(b.getNamedAttr(
            "schedule", DenseIntElementsAttr::get(
                            scheduleType, ArrayRef<int32_t>(schedule)))));

  queryBuf = argumentFor(op.getQuery());
  keyBuf = argumentFor(op.getKey());
  valueBuf = argumentFor(op.getValue());
  outputBuf = argumentFor(op.getOutput());
  outputGradBuf = argumentFor(op.getOutputGrad());
  lseBuf = argumentFor(op.getLse());
  qSegBuf = op.getQSegments() ? argumentFor(op.getQSegments()) : Value();
  kvSegBuf = op.getKvSegments() ? argumentFor(op.getKvSegments()) : Value();
  maskBuf = op.getMask() ? argumentFor(op.getMask()) : Value();
  biasBuf = op.getBias() ? argumentFor(op.getBias()) : Value();
  relTableBuf = op.getRelTable() ? argumentFor(op.getRelTable()) : Value();
  scheduleBuf =
      schedule.empty() ? Value() : kernel.getArgument(host.getNumArguments());
  return kernel;
}

SmallVector<Value> GpuBackwardEmitter::forLoop(
    Value lo, Value hi, ValueRange init,
    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(
      b, lo, hi, idx(1), init,
      [&](OpBuilder &nb, Location, Value iv, ValueRange iter) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        scf::YieldOp::create(b, body(iv, iter));
      });
  return loop.getResults();
}

SmallVector<Value>
GpuBackwardEmitter::ifThen(Value cond, ValueRange state,
                           function_ref<SmallVector<Value>()> then) {
  auto branch = scf::IfOp::create(
      b, cond,
      [&](OpBuilder &tb, Location) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(tb.getInsertionBlock(), tb.getInsertionPoint());
        scf::YieldOp::create(b, then());
      },
      [&](OpBuilder &eb, Location loc) {
        scf::YieldOp::create(eb, loc, state);
      });
  return branch.getResults();
}

SmallVector<Value> GpuBackwardEmitter::dispatchMasked(
    ValueRange state, Value isFull,
    function_ref<SmallVector<Value>(bool)> body) {
  if (maskEveryTile)
    return body(/*masked=*/true);
  if (!isFull) // no pattern: every pair is kept
    return body(/*masked=*/false);
  auto branch = scf::IfOp::create(
      b, isFull,
      [&](OpBuilder &tb, Location) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(tb.getInsertionBlock(), tb.getInsertionPoint());
        scf::YieldOp::create(b, body(/*masked=*/false));
      },
      [&](OpBuilder &eb, Location) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(eb.getInsertionBlock(), eb.getInsertionPoint());
        scf::YieldOp::create(b, body(/*masked=*/true));
      });
  return branch.getResults();
}

SmallVector<Value> GpuBackwardEmitter::visitTiles(
    ValueRange state, Value own, bool byKey,
    function_ref<SmallVector<Value>(ValueRange, Value, Value)> visit) {
  int64_t ownCount = byKey ? numKeyTiles : numQueryTiles;
  int64_t otherCount = byKey ? numQueryTiles : numKeyTiles;
  if (scheduleBuf) {
    auto word = [&](Value at) {
      return arith::IndexCastOp::create(b, b.getIndexType(),
                                        load(scheduleBuf, {at}));
    };
    Value begin = word(own), end = word(add(own, idx(1)));
    return forLoop(begin, end, state, [&](Value e, ValueRange iter) {
      Value entry = word(add(e, idx(ownCount + 1)));
      Value other = arith::ShRUIOp::create(b, entry, idx(1));
      Value isFull = arith::CmpIOp::create(
          b, arith::CmpIPredicate::eq, arith::AndIOp::create(b, entry, idx(1)),
          idx(1));
      return visit(iter, other, isFull);
    });
  }
  return forLoop(
      idx(0), idx(otherCount), state, [&](Value other, ValueRange iter) {
        if (!classPattern)
          return visit(iter, other, Value());
        Value queryTile = byKey ? other : own, keyTile = byKey ? own : other;
        Value i0 = mul(queryTile, idx(tile)), j0 = mul(keyTile, idx(tile));
        Value i1 = minIndex(add(i0, idx(tile)), idx(queryLen));
        Value j1 = minIndex(add(j0, idx(tile)), idx(keyLen));
        std::pair<Value, Value> tileClass = emitTileClass(
            b, b.getLoc(), classPattern, i0, i1, j0, j1, idx(delta));
        Value isEmpty = tileClass.first, isFull = tileClass.second;
        Value visited = arith::XOrIOp::create(
            b, isEmpty, arith::ConstantIntOp::create(b, b.getI1Type(), 1));
        return ifThen(visited, iter,
                      [&] { return visit(iter, other, isFull); });
      });
}

SmallVector<Value> GpuBackwardEmitter::withKeptPair(
    ValueRange state, Value dotQK, Value i, Value j, bool masked, Value lse,
    function_ref<Value()> valueDot, Value rowDelta,
    function_ref<SmallVector<Value>(Value, Value)> use) {
  Value scaled = arith::MulFOp::create(b, dotQK, f32(scaleValue));
  Value capped;
  Value x = modScore(scaled, i, j, &capped);
  if (masked)
    x = arith::SelectOp::create(b, elementMask(i, j), x, f32(-INFINITY));
  // NaN logits count as kept, so that they reach the gradients.
  Value kept =
      arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, x, f32(-INFINITY));
  return ifThen(kept, state, [&] {
    Value p = exp(arith::SubFOp::create(b, x, lse));
    Value dx = arith::MulFOp::create(
        b, p, arith::SubFOp::create(b, valueDot(), rowDelta));
    Value factor = f32(scaleValue);
    if (cap) {
      // d(c tanh(a / c)) / da = 1 - tanh^2(a / c).
      Value t = arith::DivFOp::create(b, capped, f32(*cap));
      factor = arith::MulFOp::create(
          b, factor,
          arith::SubFOp::create(b, f32(1.0f), arith::MulFOp::create(b, t, t)));
    }
    return use(p, arith::MulFOp::create(b, dx, factor));
  });
}

void GpuBackwardEmitter::emitKeyValueGradKernel() {
  b.setInsertionPointToStart(&kernel.getBody().front());
  Value keyTileIv = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value kvHead = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  batchIv = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value j0 = mul(keyTileIv, idx(tile));
  Value j = add(j0, tid);
  Value active = lessThan(j, idx(keyLen));
  // Invocations past the last key load the tile's first and store nothing;
  // they still stage rows and meet the barriers.
  Value key = arith::SelectOp::create(b, active, j, j0);
  // k in registers; v in this invocation's row of workgroup memory (rows
  // padded by one word against bank conflicts), which leaves registers
  // for the dk and dv sums.
  SmallVector<Value> k, state;
  for (int64_t c = 0; c < headDim; ++c)
    k.push_back(toF32(load(keyBuf, {batchIv, kvHead, key, idx(c)})));
  Value ownValues = workgroupBuffer({tile, valueDim + 1}, b.getF32Type());
  for (int64_t c = 0; c < valueDim; ++c)
    memref::StoreOp::create(
        b, toF32(load(valueBuf, {batchIv, kvHead, key, idx(c)})), ownValues,
        {tid, idx(c)});
  state.assign(headDim + valueDim, f32(0.0f)); // dk, then dv
  Value queries = workgroupBuffer({tile, headDim}, b.getF32Type());
  Value grads = workgroupBuffer({tile, valueDim}, b.getF32Type());
  Value rowStats = workgroupBuffer({tile, 2}, b.getF32Type()); // lse, D

  state = forLoop(idx(0), idx(group), state, [&](Value g, ValueRange perHead) {
    headIv = add(mul(kvHead, idx(group)), g);
    return visitTiles(
        perHead, keyTileIv, /*byKey=*/true,
        [&](ValueRange iter, Value queryTile, Value isFull) {
          Value i0, tq;
          std::tie(i0, tq) = tileRows(queryTile, queryLen);
          // Invocation r stages query row i0 + r.
          gpu::BarrierOp::create(b);
          ifThen(lessThan(tid, tq), {}, [&] {
            Value i = add(i0, tid);
            Value rowDelta = f32(0.0f);
            for (int64_t c = 0; c < headDim; ++c)
              memref::StoreOp::create(
                  b, toF32(load(queryBuf, {batchIv, headIv, i, idx(c)})),
                  queries, {tid, idx(c)});
            for (int64_t c = 0; c < valueDim; ++c) {
              Value dO =
                  toF32(load(outputGradBuf, {batchIv, headIv, i, idx(c)}));
              memref::StoreOp::create(b, dO, grads, {tid, idx(c)});
              rowDelta =
                  fma(dO, toF32(load(outputBuf, {batchIv, headIv, i, idx(c)})),
                      rowDelta);
            }
            memref::StoreOp::create(b, load(lseBuf, {batchIv, headIv, i}),
                                    rowStats, {tid, idx(0)});
            memref::StoreOp::create(b, rowDelta, rowStats, {tid, idx(1)});
            return SmallVector<Value>();
          });
          gpu::BarrierOp::create(b);
          return ifThen(active, iter, [&] {
            return dispatchMasked(iter, isFull, [&](bool masked) {
              return forLoop(idx(0), tq, iter, [&](Value r, ValueRange sums) {
                Value i = add(i0, r);
                Value qk = sumOfProducts(
                    headDim, [&](int64_t c) { return k[c]; },
                    [&](int64_t c) { return load(queries, {r, idx(c)}); });
                return withKeptPair(
                    sums, qk, i, j, masked, load(rowStats, {r, idx(0)}),
                    [&] {
                      return sumOfProducts(
                          valueDim,
                          [&](int64_t c) {
                            return load(ownValues, {tid, idx(c)});
                          },
                          [&](int64_t c) { return load(grads, {r, idx(c)}); });
                    },
                    load(rowStats, {r, idx(1)}),
                    [&](Value p, Value ds) {
                      SmallVector<Value> next;
                      for (int64_t c = 0; c < headDim; ++c)
                        next.push_back(
                            fma(ds, load(queries, {r, idx(c)}), sums[c]));
                      for (int64_t c = 0; c < valueDim; ++c)
                        next.push_back(fma(p, load(grads, {r, idx(c)}),
                                           sums[headDim + c]));
                      return next;
                    });
              });
            });
          });
        });
  });

  ifThen(active, {}, [&] {
    // The kernel's last two arguments: dK, then dV.
    auto store = [&](Value value, int64_t result, int64_t c) {
      Value out = resultArgument(result - 2);
      Type element = cast<MemRefType>(out.getType()).getElementType();
      memref::StoreOp::create(b, fromF32(value, element), out,
                              {batchIv, kvHead, j, idx(c)});
    };
    for (int64_t c = 0; c < headDim; ++c)
      store(state[c], 0, c);
    for (int64_t c = 0; c < valueDim; ++c)
      store(state[headDim + c], 1, c);
    return SmallVector<Value>();
  });
  gpu::ReturnOp::create(b);
}

void GpuBackwardEmitter::emitQueryGradKernel() {
  b.setInsertionPointToStart(&kernel.getBody().front());
  Value queryTileIv = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  headIv = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  batchIv = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value kvHead = arith::DivUIOp::create(b, headIv, idx(group));
  Value i0 = mul(queryTileIv, idx(tile));
  Value i = add(i0, tid);
  Value active = lessThan(i, idx(queryLen));
  Value row = arith::SelectOp::create(b, active, i, i0);
  // q in registers, dO in this invocation's (padded) row of workgroup
  // memory, as the dK / dV kernel keeps v.
  SmallVector<Value> q;
  Value rowDelta = f32(0.0f);
  for (int64_t c = 0; c < headDim; ++c)
    q.push_back(toF32(load(queryBuf, {batchIv, headIv, row, idx(c)})));
  Value ownGrads = workgroupBuffer({tile, valueDim + 1}, b.getF32Type());
  for (int64_t c = 0; c < valueDim; ++c) {
    Value dO = toF32(load(outputGradBuf, {batchIv, headIv, row, idx(c)}));
    memref::StoreOp::create(b, dO, ownGrads, {tid, idx(c)});
    rowDelta = fma(dO, toF32(load(outputBuf, {batchIv, headIv, row, idx(c)})),
                   rowDelta);
  }
  Value lse = load(lseBuf, {batchIv, headIv, row});
  Value keys = workgroupBuffer({tile, headDim}, b.getF32Type());
  Value values = workgroupBuffer({tile, valueDim}, b.getF32Type());

  SmallVector<Value> state(headDim, f32(0.0f));
  state = visitTiles(
      state, queryTileIv, /*byKey=*/false,
      [&](ValueRange iter, Value keyTile, Value isFull) {
        Value j0, tk;
        std::tie(j0, tk) = tileRows(keyTile, keyLen);
        // Invocation r stages key row j0 + r.
        gpu::BarrierOp::create(b);
        ifThen(lessThan(tid, tk), {}, [&] {
          Value j = add(j0, tid);
          for (int64_t c = 0; c < headDim; ++c)
            memref::StoreOp::create(
                b, toF32(load(keyBuf, {batchIv, kvHead, j, idx(c)})), keys,
                {tid, idx(c)});
          for (int64_t c = 0; c < valueDim; ++c)
            memref::StoreOp::create(
                b, toF32(load(valueBuf, {batchIv, kvHead, j, idx(c)})), values,
                {tid, idx(c)});
          return SmallVector<Value>();
        });
        gpu::BarrierOp::create(b);
        return ifThen(active, iter, [&] {
          return dispatchMasked(iter, isFull, [&](bool masked) {
            return forLoop(idx(0), tk, iter, [&](Value r, ValueRange sums) {
              Value qk = sumOfProducts(
                  headDim, [&](int64_t c) { return q[c]; },
                  [&](int64_t c) { return load(keys, {r, idx(c)}); });
              return withKeptPair(
                  sums, qk, i, add(j0, r), masked, lse,
                  [&] {
                    return sumOfProducts(
                        valueDim,
                        [&](int64_t c) {
                          return load(ownGrads, {tid, idx(c)});
                        },
                        [&](int64_t c) { return load(values, {r, idx(c)}); });
                  },
                  rowDelta,
                  [&](Value, Value ds) {
                    SmallVector<Value> next;
                    for (int64_t c = 0; c < headDim; ++c)
                      next.push_back(fma(ds, load(keys, {r, idx(c)}), sums[c]));
                    return next;
                  });
            });
          });
        });
      });

  Value out = resultArgument(-1);
  Type element = cast<MemRefType>(out.getType()).getElementType();
  ifThen(active, {}, [&] {
    for (int64_t c = 0; c < headDim; ++c)
      memref::StoreOp::create(b, fromF32(state[c], element), out,
                              {batchIv, headIv, i, idx(c)});
    return SmallVector<Value>();
  });
  gpu::ReturnOp::create(b);
}

} // namespace

AttentionGradOp mlir::attn::matchAttentionGradFunction(func::FuncOp host) {
  if (host.isExternal() || !host.getBody().hasOneBlock())
    return nullptr;
  AttentionGradOp found;
  for (Operation &op : host.getBody().front()) {
    if (auto grad = dyn_cast<AttentionGradOp>(op)) {
      if (found)
        return nullptr;
      found = grad;
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (!found || ret.getOperands() != ValueRange(found.getResults()))
        return nullptr;
      continue;
    }
    // Constants (the canonicalizer hoists them out of regions).
    if (!(isPure(&op) && op.getNumRegions() == 0 &&
          isa<arith::ArithDialect, tensor::TensorDialect>(op.getDialect())))
      return nullptr;
  }
  return found;
}

LogicalResult
mlir::attn::checkGpuBackwardSupported(func::FuncOp host, AttentionGradOp op,
                                      const TargetDescription &target) {
  auto fail = [&](const Twine &why) {
    return op.emitError() << "attn-to-gpu-kernels: " << why
                          << " (not supported by target '" << target.name
                          << "' yet; the CPU computes it)";
  };
  for (Type t :
       llvm::concat<const Type>(host.getArgumentTypes(), host.getResultTypes()))
    if (!isa<RankedTensorType>(t) || !cast<ShapedType>(t).hasStaticShape())
      return fail("the backward's GPU kernels take tensors of static shape");
  Type element = cast<ShapedType>(op.getQuery().getType()).getElementType();
  if (!target.supportsElementType(element))
    return fail("the backward in this element type");
  for (Value v : op->getOperands())
    if (auto arg = dyn_cast<BlockArgument>(v);
        !arg || arg.getOwner() != &host.getBody().front())
      return fail("the backward of operands that are not arguments of the "
                  "function");
  if (!op.getScore().empty())
    return fail("the backward of a score region");
  if (!op.getOperandGrads().empty())
    return fail("gradients of the bias, rel_table or captured operands");
  std::string reason;
  if (!isScoreModCodegenSupported(op.getModsAttr(), op.getMaskShape().numHeads,
                                  reason))
    return fail(reason);
  if (ArrayAttr mods = op.getModsAttr())
    for (Attribute mod : mods)
      if (isa<DistanceWeightAttr>(mod))
        return fail("the backward of distance_weight");
  if (MaskAttrInterface pattern = op.getPatternAttr())
    if (!isMaskCodegenSupported(pattern, op.getMaskShape(),
                                /*withTensors=*/true, reason))
      return fail(reason);
  return success();
}

SmallVector<gpu::GPUFuncOp>
mlir::attn::buildGpuBackwardKernels(func::FuncOp host, AttentionGradOp op,
                                    const TargetDescription &target,
                                    gpu::GPUModuleOp module) {
  return GpuBackwardEmitter(host, op, target).build(module);
}
