//===- GpuElementwiseKernel.cpp - an element-wise generic as a GPU kernel -===//
//
// 128 invocations per workgroup stride over the result's elements in
// order; for each, the loop indices are the result's (its map is the
// identity), each input is loaded where its map puts it (the map's
// expressions expanded into index arithmetic), linalg.index is the loop
// index, and the generic's body is cloned once per element. Every input
// map is checked against its input's bounds when the kernel is built, by
// evaluating each of its expressions over all values of the loops it
// uses, so that no load is out of bounds and none needs a guard.
//
//===----------------------------------------------------------------------===//
#include "GpuElementwiseKernel.h"
#include "GpuCodegen.h"
#include "mlir/Dialect/Affine/Utils.h"

using namespace mlir;
using namespace mlir::attn;

linalg::GenericOp mlir::attn::matchElementwiseFunction(func::FuncOp host) {
  if (host.isExternal() || !host.getBody().hasOneBlock() ||
      host.getNumResults() != 1)
    return {};
  linalg::GenericOp found;
  for (Operation &op : host.getBody().front()) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (found || generic->getNumResults() != 1)
        return {};
      found = generic;
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (!found || ret.getOperand(0) != found->getResult(0))
        return {};
      continue;
    }
    if (!isa<arith::ConstantOp, tensor::EmptyOp>(op))
      return {};
  }
  return found;
}

LogicalResult mlir::attn::checkGpuElementwiseSupported(
    func::FuncOp host, linalg::GenericOp op, const TargetDescription &target) {
  auto refuse = [&](const Twine &why) {
    return op.emitError() << "attn-to-gpu-kernels: this element-wise generic "
                             "has no GPU kernel on target '"
                          << target.name << "': " << why;
  };
  if (op.getNumDpsInits() != 1 || op.getNumParallelLoops() != op.getNumLoops())
    return refuse("its loops must all be parallel, with one result");
  auto resultType = dyn_cast<RankedTensorType>(op.getResult(0).getType());
  if (!resultType || !resultType.hasStaticShape())
    return refuse("it takes static sizes (compile one kernel per size)");
  if (resultType.getNumElements() >= (int64_t(1) << 31))
    return refuse("its result has 2^31 elements or more");
  if (!op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity())
    return refuse("its result must be written at the loops' indices");
  if (!op.getDpsInitOperand(0)->get().getDefiningOp<tensor::EmptyOp>())
    return refuse("its result must start from a tensor.empty (the kernel "
                  "does not read it)");
  ArrayRef<int64_t> loops = resultType.getShape();
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto argument = dyn_cast<BlockArgument>(input->get());
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    if (!argument || argument.getOwner()->getParentOp() != host || !type ||
        !type.hasStaticShape())
      return refuse("its inputs must be the function's arguments, of static "
                    "sizes");
    if (!type.getElementType().isF32() ||
        type.getNumElements() >= (int64_t(1) << 31))
      return refuse("it takes f32 elements, fewer than 2^31 per operand");
    AffineMap map = op.getMatchingIndexingMap(input);
    for (auto [d, expr] : llvm::enumerate(map.getResults()))
      if (!affineExprStaysWithin(expr, loops, type.getDimSize(d)))
        return refuse("input " + Twine(input->getOperandNumber()) +
                      "'s map reads outside it (checked over every value "
                      "of the loops each expression uses, at most 2^20)");
  }
  if (!resultType.getElementType().isF32())
    return refuse("it takes f32 elements, fewer than 2^31 per operand");
  return checkElementBody(op.getRegion().front(), /*allowIndex=*/true,
                          "its body", refuse);
}

namespace {

class GpuElementwiseEmitter : public GpuCodegen {
public:
  GpuElementwiseEmitter(func::FuncOp host, linalg::GenericOp op,
                        const TargetDescription &target)
      : GpuCodegen(host, target), op(op) {}

  gpu::GPUFuncOp build(gpu::GPUModuleOp module) {
    auto resultType = cast<RankedTensorType>(op.getResult(0).getType());
    SmallVector<Type> argTypes;
    SmallVector<Attribute> bindings;
    argumentsAndResult(resultType, argTypes, bindings);
    scf::ForOp loop = beginElementKernel(module, argTypes, bindings,
                                         resultType.getNumElements());
    SmallVector<Value> indices =
        delinearize(loop.getInductionVar(), resultType.getShape());
    Block &body = op.getRegion().front();
    IRMapping map;
    for (OpOperand *input : op.getDpsInputOperands()) {
      Value buffer =
          kernel.getArgument(cast<BlockArgument>(input->get()).getArgNumber());
      SmallVector<Value> at;
      for (AffineExpr expr : op.getMatchingIndexingMap(input).getResults())
        at.push_back(
            affine::expandAffineExpr(b, b.getLoc(), expr, indices, {}));
      map.map(body.getArgument(input->getOperandNumber()), load(buffer, at));
    }
    memref::StoreOp::create(b, cloneElementBody(body, map, indices),
                            kernel.getArgument(host.getNumArguments()),
                            indices);
    b.setInsertionPointAfter(loop);
    gpu::ReturnOp::create(b);
    return kernel;
  }

private:
  linalg::GenericOp op;
};

} // namespace

gpu::GPUFuncOp
mlir::attn::buildGpuElementwiseKernel(func::FuncOp host, linalg::GenericOp op,
                                      const TargetDescription &target,
                                      gpu::GPUModuleOp module) {
  return GpuElementwiseEmitter(host, op, target).build(module);
}
