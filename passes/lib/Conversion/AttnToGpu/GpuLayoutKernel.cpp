//===- GpuLayoutKernel.cpp - a change of layout as a GPU kernel -----------===//
//
// A function that returns its argument through a chain of layout ops
// becomes a gather kernel: each invocation takes elements of the result,
// walks the chain back from the result's indices to the argument's
//
//   tensor.extract_slice   source index = index + offset
//   tensor.pad             source index = index - low; outside the source:
//                          the pad's value
//   linalg.transpose       source index [perm[i]] = index [i]
//   tensor.expand_shape    a source index = the group's indices linearized
//   tensor.collapse_shape  the group's source indices = the index
//                          delinearized
//
// and copies that element (16-bit elements as they are: nothing is
// converted). 128 invocations per workgroup stride over the result in
// order, so that neighbouring invocations store neighbouring words; where
// the chain keeps the last dimension (a split into heads, a merge) they
// read neighbouring words too.
//
//===----------------------------------------------------------------------===//
#include "GpuLayoutKernel.h"
#include "GpuCodegen.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::attn;

/// The value a chain op reads (its source or input).
static Value chainSource(Operation *op) {
  if (auto transpose = dyn_cast<linalg::TransposeOp>(op))
    return transpose.getInput();
  return op->getOperand(0);
}

static bool isLayoutOp(Operation *op) {
  return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
             tensor::ExtractSliceOp, tensor::PadOp, linalg::TransposeOp>(op);
}

SmallVector<Operation *> mlir::attn::matchLayoutFunction(func::FuncOp host) {
  if (host.isExternal() || !host.getBody().hasOneBlock() ||
      host.getNumArguments() != 1 || host.getNumResults() != 1)
    return {};
  SmallVector<Operation *> chain;
  Value last = host.getArgument(0);
  for (Operation &op : host.getBody().front()) {
    if (isLayoutOp(&op)) {
      // On tensors, each op reading the one before.
      if (op.getNumResults() != 1 || chainSource(&op) != last)
        return {};
      chain.push_back(&op);
      last = op.getResult(0);
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (chain.empty() || ret.getOperand(0) != last)
        return {};
      continue;
    }
    // A transpose's destination (its sizes) and a pad's value.
    if (!isa<arith::ConstantOp, tensor::EmptyOp, tensor::DimOp>(op))
      return {};
  }
  return chain;
}

LogicalResult
mlir::attn::checkGpuLayoutSupported(func::FuncOp host,
                                    ArrayRef<Operation *> chain,
                                    const TargetDescription &target) {
  auto refuse = [&](Operation *op, const Twine &why) {
    return op->emitError() << "attn-to-gpu-kernels: this change of layout "
                              "has no GPU kernel on target '"
                           << target.name << "': " << why;
  };
  Operation *last = chain.back();
  auto result = cast<RankedTensorType>(last->getResult(0).getType());
  Type element = result.getElementType();
  if (!(element.isF32() || element.isF16() || element.isBF16()))
    return refuse(last, "it takes f32, f16 and bf16 elements");
  for (Operation *op : chain) {
    for (Value v : {chainSource(op), Value(op->getResult(0))}) {
      auto type = cast<RankedTensorType>(v.getType());
      if (!type.hasStaticShape())
        return refuse(op, "it takes static sizes (compile one kernel per "
                          "size)");
      // 32-bit indices on SPIR-V.
      if (type.getNumElements() >= (int64_t(1) << 31))
        return refuse(op, "a tensor has 2^31 elements or more");
    }
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      if (!slice.hasUnitStride() ||
          slice.getSourceType().getRank() != slice.getType().getRank() ||
          ShapedType::isDynamicShape(slice.getStaticOffsets()))
        return refuse(op, "it takes slices of static offsets, unit strides "
                          "and the source's rank");
    }
    if (auto pad = dyn_cast<tensor::PadOp>(op)) {
      Value value = pad.getConstantPaddingValue();
      if (!value || !matchPattern(value, m_Constant<FloatAttr>(nullptr)) ||
          ShapedType::isDynamicShape(pad.getStaticLow()))
        return refuse(op, "it pads by a constant, with static sizes");
    }
  }
  return success();
}

namespace {

class GpuLayoutEmitter : public GpuCodegen {
public:
  GpuLayoutEmitter(func::FuncOp host, ArrayRef<Operation *> chain,
                   const TargetDescription &target)
      : GpuCodegen(host, target), chain(chain) {}

  gpu::GPUFuncOp build(gpu::GPUModuleOp module);

private:
  /// The indices of `op`'s source that its result's `indices` read;
  /// `outside` receives an i1 for a pad (whether they fall in its padding),
  /// else null.
  SmallVector<Value> sourceIndices(Operation *op, ArrayRef<Value> indices,
                                   Value &outside);
  ArrayRef<Operation *> chain;
};

SmallVector<Value> GpuLayoutEmitter::sourceIndices(Operation *op,
                                                   ArrayRef<Value> indices,
                                                   Value &outside) {
  outside = Value();
  auto add = [&](Value v, int64_t c) -> Value {
    return c == 0 ? v : arith::AddIOp::create(b, v, idx(c)).getResult();
  };
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    SmallVector<Value> from;
    for (auto [i, offset] : llvm::enumerate(slice.getStaticOffsets()))
      from.push_back(add(indices[i], offset));
    return from;
  }
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    // index - low, compared unsigned: below `low` it wraps past the size.
    SmallVector<Value> from;
    ArrayRef<int64_t> sizes = pad.getSourceType().getShape();
    for (auto [i, low] : llvm::enumerate(pad.getStaticLow())) {
      Value source =
          low == 0 ? indices[i]
                   : arith::SubIOp::create(b, indices[i], idx(low)).getResult();
      from.push_back(source);
      if (low == 0 && sizes[i] == pad.getResultType().getDimSize(i))
        continue; // no padding along this dimension
      Value out = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, source,
                                        idx(sizes[i]));
      outside =
          outside ? arith::OrIOp::create(b, outside, out).getResult() : out;
    }
    return from;
  }
  if (auto transpose = dyn_cast<linalg::TransposeOp>(op)) {
    SmallVector<Value> from(indices.size());
    for (auto [i, p] : llvm::enumerate(transpose.getPermutation()))
      from[p] = indices[i];
    return from;
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    ArrayRef<int64_t> shape = expand.getResultType().getShape();
    SmallVector<Value> from;
    for (const ReassociationIndices &group : expand.getReassociationIndices()) {
      Value linear = indices[group.front()];
      for (int64_t d : ArrayRef<int64_t>(group).drop_front())
        linear = arith::AddIOp::create(
            b, arith::MulIOp::create(b, linear, idx(shape[d])), indices[d]);
      from.push_back(linear);
    }
    return from;
  }
  auto collapse = cast<tensor::CollapseShapeOp>(op);
  ArrayRef<int64_t> shape = collapse.getSrcType().getShape();
  SmallVector<Value> from;
  for (auto [i, group] : llvm::enumerate(collapse.getReassociationIndices())) {
    SmallVector<int64_t> sizes;
    for (int64_t d : group)
      sizes.push_back(shape[d]);
    llvm::append_range(from, delinearize(indices[i], sizes));
  }
  return from;
}

gpu::GPUFuncOp GpuLayoutEmitter::build(gpu::GPUModuleOp module) {
  auto resultType = cast<RankedTensorType>(host.getResultTypes()[0]);
  scf::ForOp loop = beginElementKernel(
      module, {bufferType(host.getArgumentTypes()[0]), bufferType(resultType)},
      {kernelBinding(b, "arg0", "read"), kernelBinding(b, "result0", "write")},
      resultType.getNumElements());
  Value source = kernel.getArgument(0), result = kernel.getArgument(1);
  Type stored = cast<MemRefType>(result.getType()).getElementType();
  SmallVector<Value> indices =
      delinearize(loop.getInductionVar(), resultType.getShape());
  SmallVector<Value> at = indices;
  // Pads met from the result back, the outermost first: (outside, value).
  SmallVector<std::pair<Value, Value>> pads;
  for (Operation *op : llvm::reverse(chain)) {
    Value outside;
    at = sourceIndices(op, at, outside);
    if (!outside)
      continue;
    FloatAttr padValue;
    matchPattern(cast<tensor::PadOp>(op).getConstantPaddingValue(),
                 m_Constant(&padValue));
    pads.push_back(
        {outside, fromF32(f32(float(padValue.getValueAsDouble())), stored)});
  }
  Value element;
  if (pads.empty()) {
    element = load(source, at);
  } else {
    Value anyOutside = pads.front().first;
    for (auto [outside, value] : llvm::drop_begin(pads))
      anyOutside = arith::OrIOp::create(b, anyOutside, outside);
    // Read only inside every pad; outside, the outermost pad's value.
    auto read = scf::IfOp::create(b, stored, anyOutside,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(read.thenBlock());
      Value value = pads.back().second;
      for (auto [outside, padded] : llvm::drop_begin(llvm::reverse(pads)))
        value = arith::SelectOp::create(b, outside, padded, value);
      scf::YieldOp::create(b, value);
      b.setInsertionPointToStart(read.elseBlock());
      scf::YieldOp::create(b, load(source, at));
    }
    element = read.getResult(0);
  }
  memref::StoreOp::create(b, element, result, indices);
  b.setInsertionPointAfter(loop);
  gpu::ReturnOp::create(b);
  return kernel;
}

} // namespace

gpu::GPUFuncOp mlir::attn::buildGpuLayoutKernel(func::FuncOp host,
                                                ArrayRef<Operation *> chain,
                                                const TargetDescription &target,
                                                gpu::GPUModuleOp module) {
  return GpuLayoutEmitter(host, chain, target).build(module);
}
