//===- FourierMixToCall.cpp - attn.fourier_mix to the runtime's FFT -------===//
//
//   %y = attn.fourier_mix %x : tensor<BxLxDmxf32> -> tensor<BxLxDmxf32>
//
// becomes a call of `attn_fourier_mix_f32(x, y)` (C interface, declared
// here, defined by the attn runtime with FFTW: runtime/lib/FourierMix.cpp)
// on the input's buffer and a fresh output buffer. An FFT has no good
// expression as linalg; a well-kept library runs it in O(L Dm log(L Dm)).
//
//===----------------------------------------------------------------------===//
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNFOURIERMIXTOCALL
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr StringLiteral kFunction = "attn_fourier_mix_f32";

/// The runtime function, declared once per module with dynamic sizes.
func::FuncOp declareRuntimeFunction(ModuleOp module) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(kFunction))
    return existing;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Type buffer = MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic,
                                 ShapedType::kDynamic},
                                b.getF32Type());
  auto func = b.create<func::FuncOp>(module.getLoc(), kFunction,
                                     b.getFunctionType({buffer, buffer}, {}));
  func.setPrivate();
  func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  return func;
}

struct AttnFourierMixToCallPass
    : attn::impl::AttnFourierMixToCallBase<AttnFourierMixToCallPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<FourierMixOp> ops;
    module.walk([&](FourierMixOp op) { ops.push_back(op); });
    for (FourierMixOp op : ops) {
      auto type = cast<RankedTensorType>(op.getType());
      if (!type.getElementType().isF32()) {
        op.emitOpError("attn-fourier-mix-to-call handles f32 only for now, "
                       "got ")
            << type.getElementType();
        return signalPassFailure();
      }
      func::FuncOp callee = declareRuntimeFunction(module);
      OpBuilder b(op);
      Location loc = op.getLoc();
      Type dynamic = callee.getFunctionType().getInput(0);
      Value input = b.create<bufferization::ToBufferOp>(
          loc, MemRefType::get(type.getShape(), type.getElementType()),
          op.getInput(), /*read_only=*/true);
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d))
          sizes.push_back(b.create<tensor::DimOp>(loc, op.getInput(), d));
      Value output = b.create<memref::AllocOp>(
          loc, MemRefType::get(type.getShape(), type.getElementType()), sizes,
          b.getI64IntegerAttr(64));
      b.create<func::CallOp>(
          loc, callee,
          ValueRange{b.create<memref::CastOp>(loc, dynamic, input),
                     b.create<memref::CastOp>(loc, dynamic, output)});
      Value result = b.create<bufferization::ToTensorOp>(
          loc, type, output, /*restrict=*/b.getUnitAttr(),
          /*writable=*/b.getUnitAttr());
      op.replaceAllUsesWith(result);
      op.erase();
    }
  }
};

} // namespace
