//===- LayerArtifact.h - the kernels of a layer spec ------------*- C++ -*-===//
//
// `attn-compile LAYER.yaml --emit=so` builds what the C API's attn_stack_*
// needs to run a layer stack without a compiler: the attention kernels of
// its blocks, its products on attn's GEMM (one kernel per distinct (in,
// out, epilogue), weights in packed panels), and a manifest (the layer's
// description and the kernel tables, runtime/lib/CApiStack.cpp) exported
// as `_attn_layer_manifest`.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTN_COMPILE_LAYERARTIFACT_H
#define ATTN_TOOLS_ATTN_COMPILE_LAYERARTIFACT_H

#include "attn/Analysis/TargetDescription.h"
#include "attn/Spec/LayerSpec.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include <string>
#include <utility>
#include <vector>

namespace attntools {

/// The module of `spec`'s attention kernels (one taking any batch and
/// length where the kind allows it: softmax, every cross-attention; else
/// one per (batch, length) of `shapes`) and of its products, packed for
/// `target` (an AMX-free CPU target); where its bf16 products run by
/// vdpbf16ps, a bf16 layer's products take x rounded to bf16 and weights in
/// k pairs. `manifest` receives the text the
/// artifact exports. Errors are reported on `sourceMgr`'s buffer.
mlir::OwningOpRef<mlir::ModuleOp>
buildLayerModule(const attnspec::LayerSpec &spec,
                 const std::vector<std::pair<int64_t, int64_t>> &shapes,
                 const mlir::attn::TargetDescription &target,
                 llvm::SourceMgr &sourceMgr, mlir::MLIRContext *context,
                 std::string &manifest);

} // namespace attntools

#endif // ATTN_TOOLS_ATTN_COMPILE_LAYERARTIFACT_H
