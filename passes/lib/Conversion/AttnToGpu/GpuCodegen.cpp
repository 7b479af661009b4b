//===- GpuCodegen.cpp - what every GPU kernel of attn emits alike ---------===//
#include "GpuCodegen.h"
#include "attn/Transforms/MaskCodegen.h"
#include "attn/Transforms/ScoreModCodegen.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

MemRefType mlir::attn::gpuBufferType(Type tensorType,
                                     const TargetDescription &target) {
  auto t = cast<RankedTensorType>(tensorType);
  Type element = t.getElementType();
  if (element.isBF16() && target.api == TargetDescription::Api::Vulkan)
    element = IntegerType::get(t.getContext(), 16);
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

/// exp(x): math.exp (GLSL Exp) for SPIR-V; for NVVM ex2.approx.f32 of
/// x log2(e) (math.exp / math.exp2 become libdevice calls unless a CUDA
/// toolkit is named at compile time, and libdevice is not always there).
Value GpuCodegen::exp(Value x) {
  if (isVulkan())
    return math::ExpOp::create(b, x);
  Value scaled = arith::MulFOp::create(b, x, f32(M_LOG2E));
  return LLVM::CallIntrinsicOp::create(b, b.getF32Type(),
                                       b.getStringAttr("llvm.nvvm.ex2.approx"),
                                       ValueRange{scaled})
      .getResult(0);
}

/// a * b + c: math.fma (GLSL Fma) for SPIR-V; for NVVM, where math.fma
/// becomes a libdevice call, a multiply and an add that ptxas contracts.
Value GpuCodegen::fma(Value a, Value x, Value c) {
  if (isVulkan())
    return math::FmaOp::create(b, a, x, c);
  return arith::AddFOp::create(b, arith::MulFOp::create(b, a, x), c);
}

/// Workgroup memory of `shape`: a workgroup attribution for NVVM, an alloc
/// in address space 3 for SPIR-V (docs/Gpu.md, "Memory spaces").
Value GpuCodegen::workgroupBuffer(ArrayRef<int64_t> shape, Type element) {
  if (target.api == TargetDescription::Api::Cuda) {
    auto space = gpu::AddressSpaceAttr::get(b.getContext(),
                                            gpu::AddressSpace::Workgroup);
    auto type = MemRefType::get(shape, element, AffineMap(), space);
    return kernel.addWorkgroupAttribution(type, b.getLoc());
  }
  auto type =
      MemRefType::get(shape, element, AffineMap(), b.getI64IntegerAttr(3));
  return memref::AllocOp::create(b, type);
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
        arith::SubIOp::create(b, j, arith::AddIOp::create(b, i, idx(delta)));
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
    MaskContext context{idx(delta), headIv,    batchIv, Value(),
                        Value(),    maskShape, evaluate};
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
