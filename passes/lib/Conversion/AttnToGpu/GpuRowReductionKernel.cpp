//===- GpuRowReductionKernel.cpp - row reductions as a GPU kernel ---------===//
//
// One workgroup of 128 invocations per row (at most 8192 workgroups; past
// that each takes several rows in turn). For each row, in the function's
// order: a reduction is a pass of the invocations over the row's columns
// (column c by invocation c mod 128, each folding its columns into a
// partial value that starts at the combining op's identity), then a
// butterfly of subgroup shuffles, each subgroup's total to workgroup
// memory, one barrier, and the subgroups' totals folded and shuffled again
// in every subgroup (two sets of totals, used in turn, so that no second
// barrier guards their reuse); the row's total is combined with the fill's
// value. A row generic is computed where it stands. Both stay in
// registers for the rest of the row. The last pass stores the returned
// element result. Element results are computed where they are read, at
// the column being read (a LayerNorm reads x once per pass: 3 times), so
// the kernel keeps nothing in workgroup memory but the subgroups' totals,
// whatever the row's length.
//
//===----------------------------------------------------------------------===//
#include "GpuRowReductionKernel.h"
#include "GpuCodegen.h"
#include "mlir/Dialect/Affine/Utils.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr int64_t kInvocations = 128;
/// Vulkan's grid stops at 65535 workgroups per dimension.
constexpr int64_t kMaxWorkgroups = 8192;

enum class GenericKind { Element, Reduction, Row };

/// What `g` computes over the returned result's shape `full` ([rows...,
/// N]), or nothing.
std::optional<GenericKind> kindOf(linalg::GenericOp g, ArrayRef<int64_t> full) {
  SmallVector<int64_t> loops = g.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = g.getIteratorTypesArray();
  auto parallel = [](ArrayRef<utils::IteratorType> types) {
    return llvm::all_of(types, [](utils::IteratorType t) {
      return t == utils::IteratorType::parallel;
    });
  };
  if (ArrayRef<int64_t>(loops) == full) {
    if (parallel(iterators))
      return GenericKind::Element;
    if (parallel(ArrayRef(iterators).drop_back()) &&
        iterators.back() == utils::IteratorType::reduction)
      return GenericKind::Reduction;
  }
  if (ArrayRef<int64_t>(loops) == full.drop_back() && parallel(iterators))
    return GenericKind::Row;
  return std::nullopt;
}

/// (d0, ..., d(r-1)) -> (d0, ..., d(r-2)): a row of loops over [rows..., N].
AffineMap rowOfLoops(unsigned rank, MLIRContext *context) {
  return AffineMap::getMultiDimIdentityMap(rank, context).dropResult(rank - 1);
}

/// The op that folds a reduction's accumulator with the value of the
/// element (the last op of its body: addf, mulf, maximumf, minimumf,
/// maxnumf or minnumf, the accumulator read there only), or null.
Operation *combinerOf(linalg::GenericOp g) {
  Block &body = g.getRegion().front();
  Value accumulator = body.getArgument(g.getNumDpsInputs());
  Operation *combiner = body.getTerminator()->getOperand(0).getDefiningOp();
  if (!combiner || combiner->getBlock() != &body ||
      !isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp,
           arith::MaxNumFOp, arith::MinNumFOp>(combiner) ||
      !accumulator.hasOneUse() || *accumulator.user_begin() != combiner)
    return nullptr;
  return combiner;
}

/// The value `combiner` leaves unchanged.
float identityOf(Operation *combiner) {
  if (isa<arith::AddFOp>(combiner))
    return 0.0f;
  if (isa<arith::MulFOp>(combiner))
    return 1.0f;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner))
    return -INFINITY;
  return INFINITY;
}

} // namespace

SmallVector<linalg::GenericOp>
mlir::attn::matchRowReductionFunction(func::FuncOp host) {
  if (host.isExternal() || !host.getBody().hasOneBlock() ||
      host.getNumResults() != 1)
    return {};
  SmallVector<linalg::GenericOp> generics;
  bool reduces = false;
  for (Operation &op : host.getBody().front()) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      generics.push_back(generic);
      reduces |= generic.getNumReductionLoops() > 0;
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      auto returned = ret.getOperand(0).getDefiningOp<linalg::GenericOp>();
      if (!returned || !llvm::is_contained(generics, returned))
        return {};
      continue;
    }
    if (!isa<arith::ConstantOp, tensor::EmptyOp, linalg::FillOp>(op))
      return {};
  }
  if (!reduces)
    return {};
  return generics;
}

LogicalResult
mlir::attn::checkGpuRowReductionSupported(func::FuncOp host,
                                          ArrayRef<linalg::GenericOp> generics,
                                          const TargetDescription &target) {
  auto refuseAt = [&](Operation *at, const Twine &why) {
    return at->emitError() << "attn-to-gpu-kernels: this row reduction has "
                              "no GPU kernel on target '"
                           << target.name << "': " << why;
  };
  auto returned = host.getBody()
                      .front()
                      .getTerminator()
                      ->getOperand(0)
                      .getDefiningOp<linalg::GenericOp>();
  if (returned.getNumReductionLoops() > 0)
    return refuseAt(returned, "the function must return an element-wise "
                              "result (all loops parallel, the rows' and "
                              "their last dimension's)");
  auto resultType = dyn_cast<RankedTensorType>(returned.getResult(0).getType());
  if (!resultType || !resultType.hasStaticShape() || resultType.getRank() == 0)
    return refuseAt(returned, "it returns a result of static sizes and rank "
                              "1 or more (compile one kernel per size)");
  if (resultType.getNumElements() >= (int64_t(1) << 31))
    return refuseAt(returned, "its result has 2^31 elements or more");
  ArrayRef<int64_t> full = resultType.getShape();
  unsigned rank = full.size();
  MLIRContext *context = host.getContext();
  DenseMap<Operation *, GenericKind> kinds;
  for (linalg::GenericOp g : generics) {
    auto refuse = [&](const Twine &why) { return refuseAt(g, why); };
    if (g.getNumDpsInits() != 1)
      return refuse("each generic has one result");
    std::optional<GenericKind> kind = kindOf(g, full);
    if (!kind)
      return refuse("its loops must be the returned result's ([rows..., N]: "
                    "all parallel, or the last one a reduction) or its "
                    "rows' (all parallel)");
    if (!cast<ShapedType>(g.getResult(0).getType()).getElementType().isF32())
      return refuse("its results are f32 (arguments may be f16 or bf16)");
    OpOperand *init = g.getDpsInitOperand(0);
    AffineMap written = g.getMatchingIndexingMap(init);
    Block &body = g.getRegion().front();
    if (*kind == GenericKind::Reduction) {
      if (written != rowOfLoops(rank, context))
        return refuse("a reduction's result must be written at its row (the "
                      "loops but the last)");
      auto fill = init->get().getDefiningOp<linalg::FillOp>();
      if (!fill || !fill.getInputs()[0].getDefiningOp<arith::ConstantOp>())
        return refuse("a reduction must start from a linalg.fill of a "
                      "constant");
      if (!combinerOf(g))
        return refuse("a reduction's body must end in one addf, mulf, "
                      "maximumf, minimumf, maxnumf or minnumf of its "
                      "accumulator, which it reads nowhere else");
    } else if (!written.isIdentity() ||
               !init->get().getDefiningOp<tensor::EmptyOp>() ||
               !body.getArgument(g.getNumDpsInputs()).use_empty()) {
      return refuse("an element-wise result must be written at the loops' "
                    "indices, from a tensor.empty its body does not read");
    }
    SmallVector<int64_t> loops = g.getStaticLoopRanges();
    for (OpOperand *input : g.getDpsInputOperands()) {
      std::string which = ("input " + Twine(input->getOperandNumber())).str();
      AffineMap map = g.getMatchingIndexingMap(input);
      if (auto argument = dyn_cast<BlockArgument>(input->get());
          argument && argument.getOwner()->getParentOp() == host) {
        auto type = dyn_cast<RankedTensorType>(argument.getType());
        if (!type || !type.hasStaticShape() ||
            !isa<Float32Type, Float16Type, BFloat16Type>(
                type.getElementType()) ||
            type.getNumElements() >= (int64_t(1) << 31))
          return refuse(which + " must have static sizes and f32, f16 or "
                                "bf16 elements, fewer than 2^31");
        for (auto [d, expr] : llvm::enumerate(map.getResults()))
          if (!affineExprStaysWithin(expr, loops, type.getDimSize(d)))
            return refuse(which + "'s map reads outside it (checked over "
                                  "every value of the loops each expression "
                                  "uses, at most 2^20)");
        continue;
      }
      auto producer = input->get().getDefiningOp<linalg::GenericOp>();
      auto known = producer ? kinds.find(producer) : kinds.end();
      if (known == kinds.end())
        return refuse(which + " must be an argument of the function or a "
                              "result of a generic before it");
      AffineMap expected =
          known->second == GenericKind::Element
              ? AffineMap::getMultiDimIdentityMap(rank, context)
          : *kind == GenericKind::Row
              ? AffineMap::getMultiDimIdentityMap(rank - 1, context)
              : rowOfLoops(rank, context);
      if (map != expected)
        return refuse(which + ", a result of a generic before it, must be "
                              "read at its own element (element-wise "
                              "results) or row (row and reduction results)");
    }
    if (failed(checkElementBody(body, /*allowIndex=*/true, "its body", refuse)))
      return failure();
    kinds[g] = *kind;
  }
  if (kinds[returned] != GenericKind::Element)
    return refuseAt(returned, "the function must return an element-wise "
                              "result (all loops parallel, the rows' and "
                              "their last dimension's)");
  return success();
}

namespace {

class GpuRowReductionEmitter : public GpuCodegen {
public:
  GpuRowReductionEmitter(func::FuncOp host,
                         ArrayRef<linalg::GenericOp> generics,
                         const TargetDescription &target)
      : GpuCodegen(host, target), generics(generics) {}

  gpu::GPUFuncOp build(gpu::GPUModuleOp module) {
    auto returned = host.getBody()
                        .front()
                        .getTerminator()
                        ->getOperand(0)
                        .getDefiningOp<linalg::GenericOp>();
    auto resultType = cast<RankedTensorType>(returned.getResult(0).getType());
    ArrayRef<int64_t> rowShape = resultType.getShape().drop_back();
    columns = resultType.getShape().back();
    int64_t rows = ShapedType::getNumElements(rowShape);
    int64_t workgroups = std::clamp<int64_t>(rows, 1, kMaxWorkgroups);

    SmallVector<Type> argTypes;
    SmallVector<Attribute> bindings;
    argumentsAndResult(resultType, argTypes, bindings);
    createKernel(module, argTypes, bindings, {workgroups, 1, 1}, kInvocations);

    tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    width = api->shuffleWidth();
    subgroups = kInvocations / width;
    int64_t reductions = llvm::count_if(generics, [](linalg::GenericOp g) {
      return g.getNumReductionLoops() > 0;
    });
    // Two sets of subgroup totals, used in turn by the reductions.
    if (reductions)
      partials = workgroupBuffer({2 * subgroups}, b.getF32Type());
    auto rowLoop =
        scf::ForOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x),
                           idx(rows), idx(workgroups));
    b.setInsertionPointToStart(rowLoop.getBody());
    // A workgroup that takes several rows, with an odd number of
    // reductions, would start the next row's first reduction on the set of
    // totals its last one read: a barrier at the end of each row (created
    // first; the row's ops are inserted before it).
    if (rows > workgroups && reductions % 2 == 1)
      gpu::BarrierOp::create(b);
    b.setInsertionPointToStart(rowLoop.getBody());
    rowIndices = delinearize(rowLoop.getInductionVar(), rowShape);
    for (linalg::GenericOp g : generics) {
      if (g.getNumReductionLoops() > 0)
        rowValues[g.getResult(0)] = reduceRow(g);
      else if (g.getNumLoops() < resultType.getRank()) {
        DenseMap<Operation *, Value> none;
        rowValues[g.getResult(0)] = bodyAt(g, rowIndices, Value(), none);
      }
    }
    // The last pass: the returned result, column by column.
    Value result = kernel.getArgument(host.getNumArguments());
    forEachColumn({}, [&](ArrayRef<Value> at, ValueRange) {
      DenseMap<Operation *, Value> elements;
      memref::StoreOp::create(b, bodyAt(returned, at, Value(), elements),
                              result, at);
      return SmallVector<Value>{};
    });
    b.setInsertionPointAfter(rowLoop);
    gpu::ReturnOp::create(b);
    return kernel;
  }

private:
  /// A loop of this invocation's columns of the row (c = tid, tid + 128,
  /// ...) carrying `initial`; `step` gets the loop's indices [rows..., c]
  /// and the carried values and gives their next ones. Returns the loop's
  /// results; the builder continues after it.
  ValueRange forEachColumn(
      ValueRange initial,
      function_ref<SmallVector<Value>(ArrayRef<Value>, ValueRange)> step) {
    auto loop =
        scf::ForOp::create(b, tid, idx(columns), idx(kInvocations), initial);
    OpBuilder::InsertionGuard guard(b);
    // A loop without results has its yield already.
    if (initial.empty())
      b.setInsertionPoint(loop.getBody()->getTerminator());
    else
      b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> at(rowIndices);
    at.push_back(loop.getInductionVar());
    SmallVector<Value> next = step(at, loop.getRegionIterArgs());
    if (!initial.empty())
      scf::YieldOp::create(b, next);
    return loop.getResults();
  }

  /// The reduction `g` of this row, in registers of every invocation.
  Value reduceRow(linalg::GenericOp g) {
    Operation *combiner = combinerOf(g);
    float identity = identityOf(combiner);
    Value partial = forEachColumn(
        f32(identity), [&](ArrayRef<Value> at, ValueRange carried) {
          DenseMap<Operation *, Value> elements;
          return SmallVector<Value>{bodyAt(g, at, carried[0], elements)};
        })[0];
    // Each subgroup's total, from a butterfly of shuffles, to its slot of
    // this reduction's set; after the one barrier, each subgroup folds
    // the totals (lane l those at l, l + width, ...) and shuffles again,
    // so that every invocation holds the row's total. The next reduction
    // writes the other set: its stores cannot overtake this one's loads.
    Value set = idx((reductionCount++ % 2) * subgroups);
    Value lane = arith::RemUIOp::create(b, tid, idx(width));
    Value ownTotal = subgroupReduce(combiner, partial);
    Value first =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, idx(0));
    auto storing = scf::IfOp::create(b, first, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(storing.thenBlock());
      memref::StoreOp::create(
          b, ownTotal, partials,
          ValueRange{arith::AddIOp::create(
              b, set, arith::DivUIOp::create(b, tid, idx(width)))});
    }
    gpu::BarrierOp::create(b);
    Value folded = f32(identity);
    for (int64_t k = 0; k * width < subgroups; ++k) {
      Value at = arith::AddIOp::create(b, lane, idx(k * width));
      if ((k + 1) * width <= subgroups) {
        folded = combine(combiner, folded,
                         load(partials, {arith::AddIOp::create(b, set, at)}));
        continue;
      }
      // Lanes past the last subgroup's total add the identity.
      Value inside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, at,
                                           idx(subgroups));
      Value clamped = arith::MinUIOp::create(b, at, idx(subgroups - 1));
      Value total = load(partials, {arith::AddIOp::create(b, set, clamped)});
      folded =
          combine(combiner, folded,
                  arith::SelectOp::create(b, inside, total, f32(identity)));
    }
    Value rowTotal = subgroupReduce(combiner, folded);
    auto fill = g.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
    Value start = b.clone(*fill.getInputs()[0].getDefiningOp())->getResult(0);
    return combine(combiner, rowTotal, start);
  }

  /// `value` combined over the lanes of each subgroup (xor shuffles:
  /// every lane gets the result).
  Value subgroupReduce(Operation *combiner, Value value) {
    for (int64_t offset = width / 2; offset > 0; offset /= 2) {
      Value other = gpu::ShuffleOp::create(b, value, i32(offset), i32(width),
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      value = combine(combiner, value, other);
    }
    return value;
  }

  /// `combiner` (cloned) of x and y.
  Value combine(Operation *combiner, Value x, Value y) {
    IRMapping map;
    map.map(combiner->getOperand(0), x);
    map.map(combiner->getOperand(1), y);
    return b.clone(*combiner, map)->getResult(0);
  }

  /// The body of `g` at its loop indices `at`, with `accumulator` for a
  /// reduction's: each input an argument loaded through its map, a row
  /// value of this row, or an element result computed here (once per
  /// column: `elements`).
  Value bodyAt(linalg::GenericOp g, ArrayRef<Value> at, Value accumulator,
               DenseMap<Operation *, Value> &elements) {
    Block &body = g.getRegion().front();
    IRMapping map;
    for (OpOperand *input : g.getDpsInputOperands()) {
      BlockArgument parameter = body.getArgument(input->getOperandNumber());
      Value value = input->get(), element;
      if (auto argument = dyn_cast<BlockArgument>(value)) {
        SmallVector<Value> indices;
        for (AffineExpr expr : g.getMatchingIndexingMap(input).getResults())
          indices.push_back(
              affine::expandAffineExpr(b, b.getLoc(), expr, at, {}));
        element = load(kernel.getArgument(argument.getArgNumber()), indices);
        // Vulkan keeps bf16 as i16 words.
        if (element.getType() != parameter.getType())
          element = arith::BitcastOp::create(b, parameter.getType(), element);
      } else if (auto row = rowValues.find(value); row != rowValues.end()) {
        element = row->second;
      } else {
        Operation *producer = value.getDefiningOp();
        if (!elements.count(producer)) {
          Value computed =
              bodyAt(cast<linalg::GenericOp>(producer), at, Value(), elements);
          elements[producer] = computed;
        }
        element = elements[producer];
      }
      map.map(parameter, element);
    }
    if (accumulator)
      map.map(body.getArgument(g.getNumDpsInputs()), accumulator);
    return cloneElementBody(body, map, at);
  }

  ArrayRef<linalg::GenericOp> generics;
  int64_t columns = 0;
  /// Lanes of a subgroup shuffle, subgroups of the workgroup, and the
  /// reductions emitted so far (which set of totals the next one uses).
  int64_t width = 0, subgroups = 0, reductionCount = 0;
  Value tid, partials;
  SmallVector<Value> rowIndices;
  /// The row and reduction results of the row being computed.
  DenseMap<Value, Value> rowValues;
};

} // namespace

gpu::GPUFuncOp mlir::attn::buildGpuRowReductionKernel(
    func::FuncOp host, ArrayRef<linalg::GenericOp> generics,
    const TargetDescription &target, gpu::GPUModuleOp module) {
  return GpuRowReductionEmitter(host, generics, target).build(module);
}
