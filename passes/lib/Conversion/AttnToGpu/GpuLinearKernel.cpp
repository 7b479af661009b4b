//===- GpuLinearKernel.cpp - a layer's product as a GPU kernel ------------===//
//
// Y[M, N] = X[M, K] W (W [K, N]) or X W^T (W [N, K]) as a tiled GEMM that
// every GPU target runs (scalar f32 arithmetic, 16-bit inputs widened as
// they are loaded):
//
//   128 invocations per workgroup, a 16 x 8 grid of them; the workgroup
//   owns a TM x 64 tile of Y (TM = 8 RM, RM = 4 rows per invocation, fewer
//   when M is smaller: a decode step's product has few rows), invocation
//   (tx, ty) rows ty + 8i and columns tx + 16j of it.
//   for each 16-deep block of K:
//     stage X's TM x 16 and W's 64 x 16 blocks in workgroup memory, both
//       k-major (xs[k][row], ws[k][col]), zeros past M, N and K
//     barrier; per k, RM + 4 loads and 4 RM FMAs into registers; barrier
//   store the invocation's outputs within M and N.
//
// A k-major block makes every read of the inner loop either a broadcast
// (xs: the 16 invocations of a row lane read one word) or 16 consecutive
// words (ws): no bank conflicts. Loads from global memory run along K for
// X and for W [N, K] (rows of 16 consecutive elements), along N for W
// [K, N].
//
// Products of at most 8 rows with W [N, K] (a decoding step's, where the
// time goes in reading W once) take a skinny form instead, with 8 times the
// workgroups of the tiled one, so that W's reads spread over the device:
//
//   a workgroup owns 8 columns of Y; invocation t reads column t / 16's row
//   of W at k = t mod 16, + 16, + 32, ... (16 consecutive words per column
//   per step) and keeps one sum per row of X;
//   the 16 partial sums of each (row, column) meet in workgroup memory,
//   and M x 8 invocations add them up and store Y.
//
// Both forms apply the function's epilogue, if it has one, to each sum
// before storing it (GpuLinearEmitter::finish): a layer's bias,
// activation, SwiGLU gate or residual sum costs no pass of its own.
//
//===----------------------------------------------------------------------===//
#include "GpuLinearKernel.h"
#include "GpuCodegen.h"
#include "attn/Transforms/ContractionMatch.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::attn;

linalg::MatmulOp mlir::attn::matchLinearFunction(func::FuncOp host) {
  if (host.isExternal() || !host.getBody().hasOneBlock())
    return {};
  linalg::MatmulOp found;
  linalg::GenericOp epilogue;
  for (Operation &op : host.getBody().front()) {
    if (auto matmul = dyn_cast<linalg::MatmulOp>(op)) {
      // On tensors (a product on buffers has no result to return).
      if (found || matmul->getNumResults() != 1)
        return {};
      found = matmul;
      continue;
    }
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (!found || epilogue || generic.getNumDpsInits() != 1 ||
          generic.getDpsInits()[0] != found->getResult(0))
        return {};
      epilogue = generic;
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      Operation *last = epilogue ? epilogue.getOperation() : found;
      if (!found || ret.getNumOperands() != 1 ||
          ret.getOperand(0) != last->getResult(0))
        return {};
      continue;
    }
    if (!isa<arith::ConstantOp, tensor::EmptyOp, linalg::FillOp>(op))
      return {};
  }
  return found;
}

linalg::GenericOp mlir::attn::linearEpilogue(linalg::MatmulOp op) {
  for (Operation *user : op->getResult(0).getUsers())
    if (auto generic = dyn_cast<linalg::GenericOp>(user))
      return generic;
  return {};
}

namespace {

/// How W is stored.
enum class WeightLayout { KN, NK };

std::optional<WeightLayout> classify(linalg::MatmulOp op) {
  std::optional<bool> transposed = matmulTransposesB(op);
  if (!transposed)
    return std::nullopt;
  return *transposed ? WeightLayout::NK : WeightLayout::KN;
}

/// Whether `init` is a fill of zero (of anything: the fill's destination
/// is not read).
bool isZeroFill(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
}

bool isGemmElement(Type t) { return t.isF32() || t.isF16() || t.isBF16(); }

// The tile (see the file comment).
constexpr int64_t kColumnLanes = 16, kRowLanes = 8, kColumnsPerLane = 4,
                  kDepth = 16;
constexpr int64_t kTileColumns = kColumnLanes * kColumnsPerLane;
constexpr int64_t kInvocations = kColumnLanes * kRowLanes;

class GpuLinearEmitter : public GpuCodegen {
public:
  GpuLinearEmitter(func::FuncOp host, linalg::MatmulOp op,
                   const TargetDescription &target)
      : GpuCodegen(host, target), op(op) {}

  gpu::GPUFuncOp build(gpu::GPUModuleOp module);

private:
  /// The kernel's signature, launch and bindings (grid `grid`, tiling
  /// `tiling`), the builder at its start; returns (X, W, Y).
  std::tuple<Value, Value, Value> beginKernel(gpu::GPUModuleOp module,
                                              ArrayRef<int64_t> grid,
                                              ArrayRef<int64_t> tiling);
  /// The tiled form's body and the skinny form's (see the file comment).
  void emitTiled(Value x, Value w, Value y);
  void emitSkinny(Value x, Value w, Value y);
  /// Stores `value` (f32, the product) finished at y[row][col] where
  /// `inside` (null: always).
  void storeResult(Value y, Value row, Value col, Value value, Value inside);
  /// The epilogue of element (row, col) of the product `sum`.
  Value finish(Value sum, Value row, Value col);
  /// i1: lo <= v < bound, or null where the sizes make it always true
  /// (`alwaysIn`).
  Value below(Value v, int64_t bound, bool alwaysIn) {
    if (alwaysIn)
      return Value();
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, v, idx(bound));
  }
  Value both(Value a, Value c) {
    if (!a)
      return c;
    if (!c)
      return a;
    return arith::AndIOp::create(b, a, c);
  }
  /// buffer[r][c] widened to f32, or 0 where `inside` is false.
  Value loadOrZero(Value buffer, Value r, Value c, Value inside) {
    if (!inside)
      return toF32(load(buffer, {r, c}));
    auto guarded = scf::IfOp::create(b, b.getF32Type(), inside,
                                     /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(guarded.thenBlock());
    scf::YieldOp::create(b, toF32(load(buffer, {r, c})));
    b.setInsertionPointToStart(guarded.elseBlock());
    scf::YieldOp::create(b, f32(0.0f));
    return guarded.getResult(0);
  }

  linalg::MatmulOp op;
  linalg::GenericOp epilogue;
  int64_t m = 0, n = 0, k = 0, rowsPerLane = 0, tileRows = 0;
  WeightLayout layout = WeightLayout::NK;
};

/// The skinny form: columns of Y per workgroup, and the invocations that
/// share one column's k range.
constexpr int64_t kSkinnyColumns = 8, kSkinnyLanes = kInvocations / 8;
/// The most rows the skinny form takes.
constexpr int64_t kSkinnyRows = 8;

gpu::GPUFuncOp GpuLinearEmitter::build(gpu::GPUModuleOp module) {
  auto xType = cast<RankedTensorType>(op.getInputs()[0].getType());
  auto yType = cast<RankedTensorType>(op.getResult(0).getType());
  m = xType.getDimSize(0);
  k = xType.getDimSize(1);
  n = yType.getDimSize(1);
  layout = *classify(op);
  epilogue = linearEpilogue(op);
  if (m <= kSkinnyRows && layout == WeightLayout::NK) {
    auto [x, w, y] =
        beginKernel(module, {(n + kSkinnyColumns - 1) / kSkinnyColumns, 1, 1},
                    {m, kSkinnyColumns, kSkinnyLanes});
    emitSkinny(x, w, y);
  } else {
    rowsPerLane = std::min<int64_t>(4, (m + kRowLanes - 1) / kRowLanes);
    tileRows = kRowLanes * rowsPerLane;
    auto [x, w, y] = beginKernel(module,
                                 {(n + kTileColumns - 1) / kTileColumns,
                                  (m + tileRows - 1) / tileRows, 1},
                                 {tileRows, kTileColumns, kDepth});
    emitTiled(x, w, y);
  }
  gpu::ReturnOp::create(b);
  return kernel;
}

std::tuple<Value, Value, Value>
GpuLinearEmitter::beginKernel(gpu::GPUModuleOp module, ArrayRef<int64_t> grid,
                              ArrayRef<int64_t> tiling) {
  // Signature: X and W as the host takes them, then Y.
  unsigned xArg = cast<BlockArgument>(op.getInputs()[0]).getArgNumber();
  unsigned wArg = cast<BlockArgument>(op.getInputs()[1]).getArgNumber();
  SmallVector<Type> argTypes;
  SmallVector<Attribute> bindings;
  argumentsAndResult(host.getResultTypes()[0], argTypes, bindings);
  createKernel(module, argTypes, bindings, grid, kInvocations);
  // For the tools: (rows, columns, depth) of a tile.
  kernel->setAttr("attn.tiling", b.getDenseI64ArrayAttr(tiling));
  return {kernel.getArgument(xArg), kernel.getArgument(wArg),
          kernel.getArgument(host.getNumArguments())};
}

void GpuLinearEmitter::storeResult(Value y, Value row, Value col, Value value,
                                   Value inside) {
  OpBuilder::InsertionGuard guard(b);
  if (inside) {
    auto guarded = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
    b.setInsertionPointToStart(guarded.thenBlock());
  }
  Type stored = cast<MemRefType>(y.getType()).getElementType();
  value = fromF32(finish(value, row, col), stored);
  memref::StoreOp::create(b, value, y, ValueRange{row, col});
}

Value GpuLinearEmitter::finish(Value sum, Value row, Value col) {
  if (!epilogue)
    return sum;
  // The generic's body on this element: its inputs loaded where its maps
  // place them (a [N] bias at the column, a [M, N] operand at the
  // element), its output the product.
  Block &body = epilogue.getRegion().front();
  IRMapping map;
  for (OpOperand *input : epilogue.getDpsInputOperands()) {
    Value buffer =
        kernel.getArgument(cast<BlockArgument>(input->get()).getArgNumber());
    Value element = cast<MemRefType>(buffer.getType()).getRank() == 1
                        ? load(buffer, {col})
                        : load(buffer, {row, col});
    map.map(body.getArgument(input->getOperandNumber()), toF32(element));
  }
  map.map(body.getArgument(epilogue.getNumDpsInputs()), sum);
  return cloneElementBody(body, map);
}

void GpuLinearEmitter::emitSkinny(Value x, Value w, Value y) {
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value column = arith::DivUIOp::create(b, tid, idx(kSkinnyLanes));
  Value lane = arith::RemUIOp::create(b, tid, idx(kSkinnyLanes));
  Value n0 = arith::MulIOp::create(
      b, gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(kSkinnyColumns));
  Value col = arith::AddIOp::create(b, n0, column);
  // The last workgroup's columns past N read W's last row (their sums are
  // not stored): no guard in the loop.
  Value wRow = n % kSkinnyColumns == 0
                   ? col
                   : arith::MinUIOp::create(b, col, idx(n - 1)).getResult();
  SmallVector<Value> zeros(m, f32(0.0f));
  auto loop = scf::ForOp::create(b, lane, idx(k), idx(kSkinnyLanes), zeros);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kk = loop.getInductionVar();
    Value weight = toF32(load(w, {wRow, kk}));
    SmallVector<Value> sums;
    for (int64_t r = 0; r < m; ++r)
      sums.push_back(fma(toF32(load(x, {idx(r), kk})), weight,
                         loop.getRegionIterArgs()[r]));
    scf::YieldOp::create(b, sums);
  }
  // Partial sums [row][invocation], then one invocation per (row, column).
  Value partials = workgroupBuffer({m, kInvocations}, b.getF32Type());
  for (int64_t r = 0; r < m; ++r)
    memref::StoreOp::create(b, loop.getResult(r), partials,
                            ValueRange{idx(r), tid});
  gpu::BarrierOp::create(b);
  Value adds = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, tid,
                                     idx(m * kSkinnyColumns));
  auto adding = scf::IfOp::create(b, adds, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(adding.thenBlock());
  Value row = arith::DivUIOp::create(b, tid, idx(kSkinnyColumns));
  Value ownColumn = arith::RemUIOp::create(b, tid, idx(kSkinnyColumns));
  Value first = arith::MulIOp::create(b, ownColumn, idx(kSkinnyLanes));
  Value sum = f32(0.0f);
  for (int64_t l = 0; l < kSkinnyLanes; ++l)
    sum = arith::AddFOp::create(
        b, sum, load(partials, {row, arith::AddIOp::create(b, first, idx(l))}));
  Value outColumn = arith::AddIOp::create(b, n0, ownColumn);
  storeResult(y, row, outColumn, sum,
              n % kSkinnyColumns == 0 ? Value() : below(outColumn, n, false));
}

void GpuLinearEmitter::emitTiled(Value x, Value w, Value y) {
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value tx = arith::RemUIOp::create(b, tid, idx(kColumnLanes));
  Value ty = arith::DivUIOp::create(b, tid, idx(kColumnLanes));
  Value row0 = arith::MulIOp::create(
      b, gpu::BlockIdOp::create(b, gpu::Dimension::y), idx(tileRows));
  Value col0 = arith::MulIOp::create(
      b, gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(kTileColumns));
  Type f32Type = b.getF32Type();
  Value xs = workgroupBuffer({kDepth, tileRows}, f32Type);
  Value ws = workgroupBuffer({kDepth, kTileColumns}, f32Type);
  bool rowsWhole = m % tileRows == 0, columnsWhole = n % kTileColumns == 0,
       depthWhole = k % kDepth == 0;

  SmallVector<Value> zeros(rowsPerLane * kColumnsPerLane, f32(0.0f));
  auto depthLoop = scf::ForOp::create(b, idx(0), idx(k), idx(kDepth), zeros);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(depthLoop.getBody());
    Value k0 = depthLoop.getInductionVar();
    // Stage X's block: element e of tileRows x kDepth, row e / kDepth.
    for (int64_t s = 0; s < rowsPerLane; ++s) {
      Value e = arith::AddIOp::create(b, tid, idx(s * kInvocations));
      Value r = arith::DivUIOp::create(b, e, idx(kDepth));
      Value c = arith::RemUIOp::create(b, e, idx(kDepth));
      Value row = arith::AddIOp::create(b, row0, r);
      Value col = arith::AddIOp::create(b, k0, c);
      Value v =
          loadOrZero(x, row, col,
                     both(below(row, m, rowsWhole), below(col, k, depthWhole)));
      memref::StoreOp::create(b, v, xs, ValueRange{c, r});
    }
    // Stage W's block: 64 columns of Y by kDepth, read along W's rows.
    for (int64_t s = 0; s < kTileColumns * kDepth / kInvocations; ++s) {
      Value e = arith::AddIOp::create(b, tid, idx(s * kInvocations));
      bool nk = layout == WeightLayout::NK;
      Value r = nk ? arith::DivUIOp::create(b, e, idx(kDepth)).getResult()
                   : arith::RemUIOp::create(b, e, idx(kTileColumns));
      Value c = nk ? arith::RemUIOp::create(b, e, idx(kDepth)).getResult()
                   : arith::DivUIOp::create(b, e, idx(kTileColumns));
      Value column = arith::AddIOp::create(b, col0, r);
      Value depth = arith::AddIOp::create(b, k0, c);
      Value inside =
          both(below(column, n, columnsWhole), below(depth, k, depthWhole));
      Value v = nk ? loadOrZero(w, column, depth, inside)
                   : loadOrZero(w, depth, column, inside);
      memref::StoreOp::create(b, v, ws, ValueRange{c, r});
    }
    gpu::BarrierOp::create(b);
    SmallVector<Value> acc(depthLoop.getRegionIterArgs());
    for (int64_t kk = 0; kk < kDepth; ++kk) {
      SmallVector<Value> a, bv;
      for (int64_t i = 0; i < rowsPerLane; ++i)
        a.push_back(load(
            xs, {idx(kk), arith::AddIOp::create(b, ty, idx(i * kRowLanes))}));
      for (int64_t j = 0; j < kColumnsPerLane; ++j)
        bv.push_back(load(ws, {idx(kk), arith::AddIOp::create(
                                            b, tx, idx(j * kColumnLanes))}));
      for (int64_t i = 0; i < rowsPerLane; ++i)
        for (int64_t j = 0; j < kColumnsPerLane; ++j) {
          Value &sum = acc[i * kColumnsPerLane + j];
          sum = fma(a[i], bv[j], sum);
        }
    }
    gpu::BarrierOp::create(b);
    scf::YieldOp::create(b, acc);
  }

  for (int64_t i = 0; i < rowsPerLane; ++i)
    for (int64_t j = 0; j < kColumnsPerLane; ++j) {
      Value row = arith::AddIOp::create(
          b, row0, arith::AddIOp::create(b, ty, idx(i * kRowLanes)));
      Value col = arith::AddIOp::create(
          b, col0, arith::AddIOp::create(b, tx, idx(j * kColumnLanes)));
      storeResult(y, row, col, depthLoop.getResult(i * kColumnsPerLane + j),
                  both(below(row, m, rowsWhole), below(col, n, columnsWhole)));
    }
}

} // namespace

/// Whether the kernel can apply `epilogue` per element of `op`'s result
/// (GpuLinearEmitter::finish); `refuse` reports why not.
static LogicalResult
checkEpilogue(func::FuncOp host, linalg::MatmulOp op,
              linalg::GenericOp epilogue,
              function_ref<InFlightDiagnostic(const Twine &)> refuse) {
  auto yType = cast<RankedTensorType>(op.getResult(0).getType());
  MLIRContext *ctx = op.getContext();
  AffineExpr m, n;
  bindDims(ctx, m, n);
  AffineMap element = AffineMap::get(2, 0, {m, n}, ctx),
            column = AffineMap::get(2, 0, {n}, ctx);
  if (!yType.getElementType().isF32() ||
      epilogue.getResult(0).getType() != yType || epilogue.getNumLoops() != 2 ||
      epilogue.getNumParallelLoops() != 2 ||
      epilogue.getMatchingIndexingMap(epilogue.getDpsInitOperand(0)) != element)
    return refuse("its epilogue must be element-wise on an f32 product");
  for (OpOperand *input : epilogue.getDpsInputOperands()) {
    auto argument = dyn_cast<BlockArgument>(input->get());
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    AffineMap map = epilogue.getMatchingIndexingMap(input);
    bool bias = map == column && type &&
                type.getShape() == ArrayRef<int64_t>{yType.getDimSize(1)};
    bool same = map == element && type && type.getShape() == yType.getShape();
    if (!argument || argument.getOwner()->getParentOp() != host ||
        !type.getElementType().isF32() || !(bias || same))
      return refuse("its epilogue reads f32 arguments of the function per "
                    "column ([N]) or per element ([M, N])");
  }
  return checkElementBody(epilogue.getRegion().front(), /*allowIndex=*/false,
                          "its epilogue", refuse);
}

LogicalResult
mlir::attn::checkGpuLinearSupported(func::FuncOp host, linalg::MatmulOp op,
                                    const TargetDescription &target) {
  auto refuse = [&](const Twine &why) {
    return op.emitError() << "attn-to-gpu-kernels: this product has no GPU "
                             "kernel on target '"
                          << target.name << "': " << why;
  };
  for (Value input : op.getInputs())
    if (!isa<BlockArgument>(input) ||
        cast<BlockArgument>(input).getOwner()->getParentOp() != host)
      return refuse("its operands must be the function's arguments");
  SmallVector<RankedTensorType> types;
  for (Value v : {op.getInputs()[0], op.getInputs()[1], op.getResult(0)}) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || !type.hasStaticShape())
      return refuse("it takes static sizes (compile one kernel per size)");
    if (!isGemmElement(type.getElementType()))
      return refuse("it takes f32, f16 and bf16 elements");
    // 32-bit indices on SPIR-V.
    if (type.getNumElements() >= (int64_t(1) << 31))
      return refuse("an operand has 2^31 elements or more");
    types.push_back(type);
  }
  if (!classify(op))
    return refuse("it takes X [M, K] and W [K, N] or [N, K] (indexing maps "
                  "(m, k), (k, n) or (n, k), (m, n))");
  if (!isZeroFill(op.getOutputs()[0]))
    return refuse("it starts from zeros (a linalg.fill of 0): an "
                  "accumulating product is not lowered");
  if (linalg::GenericOp epilogue = linearEpilogue(op))
    return checkEpilogue(host, op, epilogue, refuse);
  return success();
}

gpu::GPUFuncOp mlir::attn::buildGpuLinearKernel(func::FuncOp host,
                                                linalg::MatmulOp op,
                                                const TargetDescription &target,
                                                gpu::GPUModuleOp module) {
  return GpuLinearEmitter(host, op, target).build(module);
}
