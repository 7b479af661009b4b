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
#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Transforms/RuntimeCall.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNFOURIERMIXTOCALL
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr StringLiteral kFunction = "attn_fourier_mix_f32";

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
      OpBuilder b(op);
      Location loc = op.getLoc();
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d))
          sizes.push_back(tensor::DimOp::create(b, loc, op.getInput(), d));
      Value result = createRuntimeCall(b, loc, kFunction, op.getInput(),
                                       type, {sizes})
                         .front();
      op.replaceAllUsesWith(result);
      op.erase();
    }
  }
};

} // namespace
