//===- KernelizedToCpu.cpp - attn.kernelized to the CPU linear kernels ----===//
//
// attn-kernelized-to-cpu: every attn.kernelized that CpuLinearKernel covers
// (CpuLinearKernel.h: the feature maps, the non-causal and causal forms)
// is replaced by its kernel; the rest is left for attn-decompose-kernelized.
//
//===----------------------------------------------------------------------===//
#include "CpuLinearKernel.h"
#include "attn/Analysis/TargetDescription.h"
#include "attn/Conversion/Passes.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNKERNELIZEDTOCPU
#include "attn/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

struct AttnKernelizedToCpuPass
    : attn::impl::AttnKernelizedToCpuBase<AttnKernelizedToCpuPass> {
  void runOnOperation() override {
    std::optional<TargetDescription> target =
        TargetDescription::cpuOf(getOperation());
    if (!target)
      return;
    int64_t lanes = target->f32Lanes();
    SmallVector<KernelizedOp> ops;
    getOperation()->walk([&](KernelizedOp op) {
      if (CpuLinearKernel::covers(op, lanes))
        ops.push_back(op);
    });
    for (KernelizedOp op : ops) {
      Value result = CpuLinearKernel(op, lanes).build(getOperation());
      op.replaceAllUsesWith(result);
      op.erase();
    }
  }
};

} // namespace
