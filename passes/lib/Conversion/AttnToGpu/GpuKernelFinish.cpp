//===- GpuKernelFinish.cpp - what no GPU API lowers as emitted ------------===//
//
// The last steps of every kernel attn-to-gpu-kernels builds (forward and
// backward): tensor.extract from constant tables (mask patterns' and score
// mods' tables) becomes select chains or a constant buffer, and for NVVM
// the math ops that would become libdevice calls become arithmetic or
// LLVM intrinsics PTX has; for SPIR-V, loops with results that may run no
// iteration are guarded.
//
//===----------------------------------------------------------------------===//
#include "GpuCodegen.h"
#include "GpuFlashKernel.h"
#include "attn/Conversion/GpuTargetInfo.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::attn;

/// A constant table as a kernel buffer: a new argument (and binding) whose
/// contents go in the kernel's `attn.constants`; i1 entries become i32.
static Value tableBuffer(gpu::GPUFuncOp func, DenseElementsAttr table) {
  MLIRContext *ctx = func.getContext();
  Builder b(ctx);
  Type element = table.getElementType();
  Type stored = element.isInteger(1) ? b.getI32Type() : element;
  auto type = RankedTensorType::get({table.getNumElements()}, stored);
  DenseElementsAttr contents;
  if (element.isInteger(1)) {
    SmallVector<int32_t> words;
    for (bool bit : table.getValues<bool>())
      words.push_back(bit);
    contents = DenseIntElementsAttr::get(type, ArrayRef<int32_t>(words));
  } else {
    contents = table.reshape(type);
  }
  auto bindings = llvm::to_vector(
      func->getAttrOfType<ArrayAttr>("attn.bindings").getValue());
  NamedAttrList constants;
  if (auto existing = func->getAttrOfType<DictionaryAttr>("attn.constants"))
    constants.append(existing.getValue());
  std::string name = "table" + std::to_string(llvm::size(constants.getAttrs()));
  constants.append(name, contents);
  bindings.push_back(kernelBinding(b, name, "constant"));
  func->setAttr("attn.constants", constants.getDictionary(ctx));
  func->setAttr("attn.bindings", b.getArrayAttr(bindings));
  unsigned index = func.getNumArguments();
  if (failed(func.insertArgument(
          index, MemRefType::get({table.getNumElements()}, stored),
          DictionaryAttr(), func.getLoc())))
    return Value();
  return func.getArgument(index);
}

LogicalResult mlir::attn::lowerConstantTableLookups(gpu::GPUFuncOp func) {
  SmallVector<tensor::ExtractOp> lookups;
  func.walk([&](tensor::ExtractOp e) { lookups.push_back(e); });
  DenseMap<Attribute, Value> buffers;
  for (tensor::ExtractOp lookup : lookups) {
    DenseElementsAttr table;
    if (!matchPattern(lookup.getTensor(), m_Constant(&table)))
      return lookup.emitError("attn-to-gpu-kernels: a table lookup that is "
                              "not of a constant");
    Type element = table.getElementType();
    if (!element.isInteger(1) && !element.isInteger(32) && !element.isF32())
      return lookup.emitError("attn-to-gpu-kernels: a constant table of ")
             << element << " (GPU kernels take i1, i32 and f32 tables)";
    ImplicitLocOpBuilder b(lookup.getLoc(), lookup);
    ArrayRef<int64_t> shape = table.getType().getShape();
    Value linear = arith::ConstantIndexOp::create(b, 0);
    for (auto [d, index] : llvm::enumerate(lookup.getIndices()))
      linear = arith::AddIOp::create(
          b,
          arith::MulIOp::create(b, linear,
                                arith::ConstantIndexOp::create(b, shape[d])),
          index);
    Value result;
    if (table.getNumElements() <= 64) {
      // Small tables (per-head slopes, T5 buckets): selects, no memory.
      auto values = llvm::to_vector(table.getValues<Attribute>());
      result = arith::ConstantOp::create(b, cast<TypedAttr>(values[0]));
      for (size_t n = 1; n < values.size(); ++n) {
        if (values[n] == values[n - 1])
          continue; // equal neighbours share one select
        Value at = arith::CmpIOp::create(
            b, arith::CmpIPredicate::uge, linear,
            arith::ConstantIndexOp::create(b, int64_t(n)));
        result = arith::SelectOp::create(
            b, at, arith::ConstantOp::create(b, cast<TypedAttr>(values[n])),
            result);
      }
    } else {
      // Larger ones (block tables of random and layout patterns): a buffer.
      Value &buffer = buffers[table];
      if (!buffer)
        buffer = tableBuffer(func, table);
      if (!buffer)
        return lookup.emitError("attn-to-gpu-kernels: cannot add a buffer");
      result = memref::LoadOp::create(b, buffer, ValueRange{linear});
      if (element.isInteger(1))
        result = arith::CmpIOp::create(
            b, arith::CmpIPredicate::ne, result,
            arith::ConstantIntOp::create(b, b.getI32Type(), 0));
    }
    lookup.replaceAllUsesWith(result);
    lookup.erase();
  }
  return success();
}

void mlir::attn::lowerMathForNvvm(gpu::GPUFuncOp func) {
  // Polynomials for tanh, erf, ... of score mods.
  RewritePatternSet patterns(func.getContext());
  populateMathPolynomialApproximationPatterns(patterns);
  (void)applyPatternsGreedily(func, std::move(patterns));
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<math::FmaOp, math::AbsFOp, math::FloorOp, math::CopySignOp,
            math::SqrtOp, math::RsqrtOp, arith::MinNumFOp, arith::MaxNumFOp>(
            op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    ImplicitLocOpBuilder b(op->getLoc(), op);
    Value result;
    if (auto fma = dyn_cast<math::FmaOp>(op))
      result = LLVM::FMAOp::create(b, fma.getA(), fma.getB(), fma.getC());
    else if (isa<math::FloorOp, math::CopySignOp, arith::MinNumFOp,
                 arith::MaxNumFOp>(op))
      // The exp polynomial's floor (cvt.rmi), GELU's copysign and a
      // reduction's minnum / maxnum (min.f32, max.f32) as the intrinsics
      // PTX has: gpu-to-nvvm would make them libdevice calls, unresolved
      // where no libdevice is linked.
      result = LLVM::CallIntrinsicOp::create(
                   b, op->getResult(0).getType(),
                   b.getStringAttr(isa<math::FloorOp>(op)      ? "llvm.floor"
                                   : isa<math::CopySignOp>(op) ? "llvm.copysign"
                                   : isa<arith::MinNumFOp>(op) ? "llvm.minnum"
                                                               : "llvm.maxnum"),
                   op->getOperands())
                   .getResult(0);
    else if (isa<math::SqrtOp, math::RsqrtOp>(op)) {
      // A norm's square root as sqrt.rn.f32 (the intrinsic called: the
      // NVVM conversion marks llvm.intr.sqrt illegal), its reciprocal
      // divided (div.rn.f32): rounded as the host's.
      Type type = op->getResult(0).getType();
      result = LLVM::CallIntrinsicOp::create(
                   b, type, b.getStringAttr("llvm.sqrt"), op->getOperands())
                   .getResult(0);
      if (isa<math::RsqrtOp>(op))
        result = arith::DivFOp::create(
            b, arith::ConstantOp::create(b, b.getFloatAttr(type, 1.0)), result);
    } else
      result = arith::MaximumFOp::create(
          b, op->getOperand(0), arith::NegFOp::create(b, op->getOperand(0)));
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
  }
}

void mlir::attn::guardZeroTripLoops(gpu::GPUFuncOp func) {
  SmallVector<scf::ForOp> loops;
  func.walk([&](scf::ForOp loop) {
    std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound()),
                           upper = getConstantIntValue(loop.getUpperBound());
    if (loop.getNumResults() > 0 && !(lower && upper && *lower < *upper))
      loops.push_back(loop);
  });
  for (scf::ForOp loop : loops) {
    ImplicitLocOpBuilder b(loop.getLoc(), loop);
    Value runs =
        arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                              loop.getLowerBound(), loop.getUpperBound());
    auto guard = scf::IfOp::create(b, loop.getResultTypes(), runs,
                                   /*withElseRegion=*/true);
    loop->replaceAllUsesWith(guard.getResults());
    loop->moveBefore(guard.thenBlock(), guard.thenBlock()->end());
    b.setInsertionPointToEnd(guard.thenBlock());
    scf::YieldOp::create(b, loop.getResults());
    b.setInsertionPointToEnd(guard.elseBlock());
    scf::YieldOp::create(b, loop.getInitArgs());
  }
}

LogicalResult mlir::attn::finishGpuKernel(gpu::GPUFuncOp kernel,
                                          const TargetDescription &target) {
  if (failed(lowerConstantTableLookups(kernel)))
    return failure();
  GpuTargetInfo::get(target)->finishKernel(kernel);
  return success();
}
