//===- GpuCodegen.cpp - what every GPU kernel of attn emits alike ---------===//
#include "GpuCodegen.h"
#include "attn/Transforms/MaskCodegen.h"
#include "attn/Transforms/ScoreModCodegen.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

DictionaryAttr mlir::attn::kernelBinding(Builder &b, const Twine &name,
                                         StringRef access) {
  return b.getDictionaryAttr(
      {b.getNamedAttr("name", b.getStringAttr(name)),
       b.getNamedAttr("access", b.getStringAttr(access))});
}

/// The value of `expr` at `dims`, or nothing for symbols and divisions by
/// zero or negatives (affine semantics: mod and floordiv round down).
static std::optional<int64_t> evaluate(AffineExpr expr,
                                       ArrayRef<int64_t> dims) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return dims[dim.getPosition()];
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return constant.getValue();
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return std::nullopt;
  std::optional<int64_t> l = evaluate(binary.getLHS(), dims),
                         r = evaluate(binary.getRHS(), dims);
  if (!l || !r)
    return std::nullopt;
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return *l + *r;
  case AffineExprKind::Mul:
    return *l * *r;
  case AffineExprKind::Mod:
    if (*r <= 0)
      return std::nullopt;
    return ((*l % *r) + *r) % *r;
  case AffineExprKind::FloorDiv:
    if (*r <= 0)
      return std::nullopt;
    return *l >= 0 ? *l / *r : -((-*l + *r - 1) / *r);
  case AffineExprKind::CeilDiv:
    if (*r <= 0)
      return std::nullopt;
    return *l >= 0 ? (*l + *r - 1) / *r : -(-*l / *r);
  default:
    return std::nullopt;
  }
}

bool mlir::attn::affineExprStaysWithin(AffineExpr expr, ArrayRef<int64_t> loops,
                                       int64_t size) {
  SmallVector<unsigned> used;
  for (unsigned d = 0; d < loops.size(); ++d)
    if (expr.isFunctionOfDim(d))
      used.push_back(d);
  int64_t combinations = 1;
  for (unsigned d : used) {
    combinations *= loops[d];
    if (combinations > (int64_t(1) << 20))
      return false;
  }
  SmallVector<int64_t> dims(loops.size(), 0);
  for (int64_t c = 0; c < combinations; ++c) {
    int64_t rest = c;
    for (unsigned d : used) {
      dims[d] = rest % loops[d];
      rest /= loops[d];
    }
    std::optional<int64_t> v = evaluate(expr, dims);
    if (!v || *v < 0 || *v >= size)
      return false;
  }
  return true;
}

MemRefType GpuCodegen::bufferType(Type tensorType) const {
  auto t = cast<RankedTensorType>(tensorType);
  Type element = api->bufferElementType(t.getElementType());
  // Boolean masks arrive as one byte per element.
  if (element.isInteger(1))
    element = IntegerType::get(t.getContext(), 8);
  return MemRefType::get(t.getShape(), element);
}

/// A loaded element as f32 (f16 and bf16 are widened; i16 holds bf16).
Value GpuCodegen::toF32(Value v) {
  if (v.getType().isInteger(16))
    v = arith::BitcastOp::create(b, b.getBF16Type(), v);
  return v.getType().isF32() ? v : arith::ExtFOp::create(b, b.getF32Type(), v);
}

/// An f32 as an element of type `stored` (rounded to nearest even).
Value GpuCodegen::fromF32(Value v, Type stored) {
  if (stored.isF32())
    return v;
  if (stored.isInteger(16))
    return arith::BitcastOp::create(
        b, stored, arith::TruncFOp::create(b, b.getBF16Type(), v));
  return arith::TruncFOp::create(b, stored, v);
}

void GpuCodegen::createKernel(gpu::GPUModuleOp module, ArrayRef<Type> argTypes,
                              ArrayRef<Attribute> bindings,
                              ArrayRef<int64_t> grid, int64_t invocations) {
  b.setInsertionPointToEnd(module.getBody());
  kernel = gpu::GPUFuncOp::create(b, host.getName(),
                                  b.getFunctionType(argTypes, {}));
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  kernel.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(invocations), 1, 1}));
  api->prepareKernel(kernel, int32_t(invocations));
  kernel->setAttr("attn.grid", b.getDenseI64ArrayAttr(grid));
  kernel->setAttr("attn.bindings", b.getArrayAttr(bindings));
  b.setInsertionPointToStart(&kernel.getBody().front());
}

void GpuCodegen::argumentsAndResult(Type resultType,
                                    SmallVectorImpl<Type> &argTypes,
                                    SmallVectorImpl<Attribute> &bindings) {
  for (auto [a, type] : llvm::enumerate(host.getArgumentTypes())) {
    argTypes.push_back(bufferType(type));
    bindings.push_back(kernelBinding(b, "arg" + Twine(a), "read"));
  }
  argTypes.push_back(bufferType(resultType));
  bindings.push_back(kernelBinding(b, "result0", "write"));
}

scf::ForOp GpuCodegen::beginElementKernel(gpu::GPUModuleOp module,
                                          ArrayRef<Type> argTypes,
                                          ArrayRef<Attribute> bindings,
                                          int64_t elements) {
  constexpr int64_t invocations = 128;
  // Vulkan's grid stops at 65535 workgroups per dimension.
  constexpr int64_t maxWorkgroups = 8192;
  int64_t workgroups = std::clamp<int64_t>(
      (elements + invocations - 1) / invocations, 1, maxWorkgroups);
  createKernel(module, argTypes, bindings, {workgroups, 1, 1}, invocations);
  Value first = arith::AddIOp::create(
      b,
      arith::MulIOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x),
                            idx(invocations)),
      gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  auto loop = scf::ForOp::create(b, first, idx(elements),
                                 idx(workgroups * invocations));
  b.setInsertionPointToStart(loop.getBody());
  return loop;
}

SmallVector<Value> GpuCodegen::delinearize(Value linear,
                                           ArrayRef<int64_t> shape) {
  SmallVector<Value> indices(shape.size());
  for (int64_t d = int64_t(shape.size()) - 1; d > 0; --d) {
    indices[d] = arith::RemUIOp::create(b, linear, idx(shape[d]));
    linear = arith::DivUIOp::create(b, linear, idx(shape[d]));
  }
  if (!shape.empty())
    indices[0] = linear;
  return indices;
}

LogicalResult mlir::attn::checkElementBody(
    Block &body, bool allowIndex, StringRef what,
    function_ref<InFlightDiagnostic(const Twine &)> refuse) {
  for (Operation &inner : body.without_terminator()) {
    if (!isa<arith::ArithDialect, math::MathDialect>(inner.getDialect()) &&
        !(allowIndex && isa<linalg::IndexOp>(inner)))
      return refuse(what + " computes with arith and math ops" +
                    (allowIndex ? " and linalg.index" : "") + " only");
    // Values from outside the body: constants only (canonicalization
    // hoists the body's own).
    for (Value operand : inner.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if ((def && def->getBlock() != &body &&
           !def->hasTrait<OpTrait::ConstantLike>()) ||
          (!def && cast<BlockArgument>(operand).getOwner() != &body))
        return refuse(what + " reads values from outside it");
    }
  }
  return success();
}

Value GpuCodegen::cloneElementBody(Block &body, IRMapping &map,
                                   ArrayRef<Value> indices) {
  for (Operation &op : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      map.map(index.getResult(), indices[index.getDim()]);
      continue;
    }
    for (Value operand : op.getOperands())
      if (!map.contains(operand))
        if (Operation *constant = operand.getDefiningOp();
            constant && constant->hasTrait<OpTrait::ConstantLike>())
          b.clone(*constant, map);
    b.clone(op, map);
  }
  return map.lookup(body.getTerminator()->getOperand(0));
}

SmallVector<Value> GpuCodegen::denseIndices(Value buffer, Value i, Value j) {
  auto type = cast<MemRefType>(buffer.getType());
  // Size-1 dims broadcast (a per-key bias has one row for every query).
  return {type.getDimSize(0) == 1 ? idx(0) : batchIv,
          type.getDimSize(1) == 1 ? idx(0) : headIv,
          type.getDimSize(2) == 1 ? idx(0) : i, j};
}

Value GpuCodegen::modScore(Value s, Value i, Value j, Value *capped) {
  s = emitSoftcap(b, b.getLoc(), mods, s);
  if (capped)
    *capped = s;
  if (biasBuf)
    s = arith::AddFOp::create(
        b, s, toF32(load(biasBuf, denseIndices(biasBuf, i, j))));
  if (mods && !mods.empty()) {
    // r = j - (i + delta), the signed distance of docs/Dialect.md.
    Value distance =
        arith::SubIOp::create(b, j, arith::AddIOp::create(b, i, deltaValue()));
    s = emitScoreMods(b, b.getLoc(), mods, s, distance, headIv, relTableBuf,
                      heads);
  }
  return s;
}

Value GpuCodegen::elementMask(Value i, Value j) {
  auto segmentsEqual = [&]() -> Value {
    auto id = [&](Value ids, Value position) -> Value {
      Value v = load(ids, {batchIv, position});
      return v.getType().isInteger(64)
                 ? v
                 : arith::ExtSIOp::create(b, b.getI64Type(), v);
    };
    return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, id(qSegBuf, i),
                                 id(kvSegBuf, j));
  };
  Value kept;
  if (isa_and_nonnull<SegmentsAttr>(pattern)) {
    kept = segmentsEqual();
  } else if (pattern) {
    auto evaluate = [&](MaskAttrInterface member) -> Value {
      return isa<SegmentsAttr>(member) ? segmentsEqual() : Value();
    };
    MaskContext context{deltaValue(), headIv,    batchIv, Value(),
                        Value(),      maskShape, evaluate};
    kept = emitElementMask(b, b.getLoc(), pattern, i, j, context);
  }
  if (maskBuf) {
    Value byte = load(maskBuf, denseIndices(maskBuf, i, j));
    Value set = arith::CmpIOp::create(
        b, arith::CmpIPredicate::ne, byte,
        arith::ConstantIntOp::create(b, byte.getType(), 0));
    kept = kept ? arith::AndIOp::create(b, kept, set) : set;
  }
  return kept;
}
