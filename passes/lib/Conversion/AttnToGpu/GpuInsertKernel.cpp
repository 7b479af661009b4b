//===- GpuInsertKernel.cpp - rows inserted in place as a GPU kernel -------===//
//
// Each invocation takes elements of the inserted tensor, in order (128 per
// workgroup, striding as the layout kernels do), and stores each at its
// index plus the slice's offsets in the destination, the run-time offsets
// read from their arguments once per invocation. One unsigned comparison
// per dimension with a run-time offset keeps every store inside the
// destination: an index below 0 wraps past its size.
//
//===----------------------------------------------------------------------===//
#include "GpuInsertKernel.h"
#include "GpuCodegen.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::attn;

/// The extract that a run-time offset reads: index_cast(tensor.extract of
/// an i32 argument of static shape, at constant indices inside it), else
/// null.
static tensor::ExtractOp offsetRead(Value offset) {
  auto toIndex = offset.getDefiningOp<arith::IndexCastOp>();
  if (!toIndex)
    return nullptr;
  auto extract = toIndex.getIn().getDefiningOp<tensor::ExtractOp>();
  if (!extract || !isa<BlockArgument>(extract.getTensor()) ||
      !extract.getType().isInteger(32))
    return nullptr;
  // The kernel loads there unguarded: each index a constant inside the
  // argument (tensor.extract's verifier does not check them).
  auto type = cast<RankedTensorType>(extract.getTensor().getType());
  if (!type.hasStaticShape())
    return nullptr;
  for (auto [index, size] : llvm::zip(extract.getIndices(), type.getShape())) {
    IntegerAttr constant;
    if (!matchPattern(index, m_Constant(&constant)) ||
        constant.getValue().isNegative() || constant.getInt() >= size)
      return nullptr;
  }
  return extract;
}

tensor::InsertSliceOp mlir::attn::matchInsertFunction(func::FuncOp host) {
  if (host.isExternal() || !host.getBody().hasOneBlock() ||
      host.getNumResults() != 1)
    return nullptr;
  tensor::InsertSliceOp insert;
  for (Operation &op : host.getBody().front()) {
    if (auto found = dyn_cast<tensor::InsertSliceOp>(op)) {
      if (insert)
        return nullptr;
      insert = found;
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (!insert || ret.getOperand(0) != insert.getResult())
        return nullptr;
      continue;
    }
    // The offsets' reads, sizes and constants (checkGpuInsertSupported
    // says which offsets the kernel takes).
    if (!isa<arith::ArithDialect>(op.getDialect()) &&
        !isa<tensor::ExtractOp, tensor::DimOp>(op))
      return nullptr;
  }
  if (!insert || !isa<BlockArgument>(insert.getSource()) ||
      !isa<BlockArgument>(insert.getDest()) ||
      insert.getSource() == insert.getDest())
    return nullptr;
  return insert;
}

LogicalResult
mlir::attn::checkGpuInsertSupported(func::FuncOp host,
                                    tensor::InsertSliceOp insert,
                                    const TargetDescription &target) {
  auto refuse = [&](const Twine &why) {
    return insert.emitError() << "attn-to-gpu-kernels: this insertion has no "
                                 "GPU kernel on target '"
                              << target.name << "': " << why;
  };
  RankedTensorType source = insert.getSourceType(),
                   dest = insert.getResultType();
  Type element = dest.getElementType();
  if (!(element.isF32() || element.isF16() || element.isBF16()))
    return refuse("it takes f32, f16 and bf16 elements");
  if (!source.hasStaticShape() || !dest.hasStaticShape())
    return refuse("it takes static sizes (compile one kernel per size)");
  if (source.getRank() != dest.getRank() || !insert.hasUnitStride())
    return refuse("it takes unit strides and a source of the destination's "
                  "rank");
  // 32-bit indices on SPIR-V.
  if (dest.getNumElements() >= (int64_t(1) << 31))
    return refuse("the destination has 2^31 elements or more");
  // (The offsets' argument cannot be the source or the destination: its
  // elements are i32.)
  for (Value offset : insert.getOffsets())
    if (!offsetRead(offset))
      return refuse("its run-time offsets are i32 elements of an argument "
                    "at constant indices inside it, cast to index");
  return success();
}

namespace {

class GpuInsertEmitter : public GpuCodegen {
public:
  GpuInsertEmitter(func::FuncOp host, tensor::InsertSliceOp insert,
                   const TargetDescription &target)
      : GpuCodegen(host, target), insert(insert) {}

  gpu::GPUFuncOp build(gpu::GPUModuleOp module) {
    auto destArg = cast<BlockArgument>(insert.getDest());
    auto sourceArg = cast<BlockArgument>(insert.getSource());
    SmallVector<Type> argTypes;
    SmallVector<Attribute> bindings;
    for (auto [i, type] : llvm::enumerate(host.getArgumentTypes())) {
      argTypes.push_back(bufferType(type));
      bindings.push_back(
          kernelBinding(b, "arg" + Twine(i),
                        i == destArg.getArgNumber() ? "readwrite" : "read"));
    }
    RankedTensorType sourceType = insert.getSourceType();
    scf::ForOp loop = beginElementKernel(module, argTypes, bindings,
                                         sourceType.getNumElements());
    // The run-time offsets, read once per invocation.
    SmallVector<Value> offsets;
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(loop);
      unsigned dynamic = 0;
      for (int64_t offset : insert.getStaticOffsets()) {
        if (!ShapedType::isDynamic(offset)) {
          offsets.push_back(Value());
          continue;
        }
        tensor::ExtractOp read = offsetRead(insert.getOffsets()[dynamic++]);
        SmallVector<Value> at;
        for (Value i : read.getIndices()) {
          IntegerAttr constant;
          matchPattern(i, m_Constant(&constant));
          at.push_back(idx(constant.getInt()));
        }
        Value word =
            load(kernel.getArgument(
                     cast<BlockArgument>(read.getTensor()).getArgNumber()),
                 at);
        offsets.push_back(
            arith::IndexCastOp::create(b, b.getIndexType(), word));
      }
    }
    Value source = kernel.getArgument(sourceArg.getArgNumber()),
          dest = kernel.getArgument(destArg.getArgNumber());
    SmallVector<Value> indices =
        delinearize(loop.getInductionVar(), sourceType.getShape());
    SmallVector<Value> to;
    Value inside;
    ArrayRef<int64_t> destSizes = insert.getResultType().getShape();
    for (auto [d, offset] : llvm::enumerate(insert.getStaticOffsets())) {
      if (!offsets[d]) {
        to.push_back(offset == 0
                         ? indices[d]
                         : arith::AddIOp::create(b, indices[d], idx(offset))
                               .getResult());
        continue;
      }
      to.push_back(arith::AddIOp::create(b, indices[d], offsets[d]));
      Value in = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, to.back(),
                                       idx(destSizes[d]));
      inside = inside ? arith::AndIOp::create(b, inside, in).getResult() : in;
    }
    if (inside) {
      auto guarded = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
      b.setInsertionPointToStart(guarded.thenBlock());
    }
    memref::StoreOp::create(b, load(source, indices), dest, to);
    b.setInsertionPointAfter(loop);
    gpu::ReturnOp::create(b);
    return kernel;
  }

private:
  tensor::InsertSliceOp insert;
};

} // namespace

gpu::GPUFuncOp mlir::attn::buildGpuInsertKernel(func::FuncOp host,
                                                tensor::InsertSliceOp insert,
                                                const TargetDescription &target,
                                                gpu::GPUModuleOp module) {
  return GpuInsertEmitter(host, insert, target).build(module);
}
