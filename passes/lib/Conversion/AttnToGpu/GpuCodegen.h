//===- GpuCodegen.h - what every GPU kernel of attn emits alike -*- C++ -*-===//
//
// The base of the GPU kernel emitters (the forward's, GpuKernelEmitter.h,
// and the backward's, GpuBackwardKernel.cpp): element conversions, exp and
// fma per API, workgroup memory, and the logit of one (query row, key) with
// its soft-cap, bias, mods and mask.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOGPU_GPUCODEGEN_H
#define ATTN_CONVERSION_ATTNTOGPU_GPUCODEGEN_H

#include "attn/Analysis/KernelPlan.h"
#include "attn/Conversion/GpuTargetInfo.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::attn {

/// A kernel binding's entry in its `attn.bindings` (docs/Gpu.md, "Kernel
/// descriptors"): the name (argN, resultN, a scratch or table name) and
/// the access (read, write, constant).
DictionaryAttr kernelBinding(Builder &b, const Twine &name, StringRef access);

/// Whether a linalg.generic's `body`, cloned per element into a kernel
/// (GpuCodegen::cloneElementBody), computes with arith and math ops (and
/// linalg.index where `allowIndex`) on its own values and constants only;
/// otherwise an error through `refuse` that names it `what` ("its body",
/// "its epilogue").
LogicalResult
checkElementBody(Block &body, bool allowIndex, StringRef what,
                 function_ref<InFlightDiagnostic(const Twine &)> refuse);

/// Whether `expr` stays within [0, size) over the loop ranges `loops`:
/// every combination of the loops it uses is tried (at most 2^20, else
/// false). How the kernels that read an input through a generic's
/// indexing map know, when they are built, that no load needs a guard.
bool affineExprStaysWithin(AffineExpr expr, ArrayRef<int64_t> loops,
                           int64_t size);

/// What every GPU kernel emits the same way (see the file comment).
class GpuCodegen {
public:
  GpuCodegen(func::FuncOp host, const TargetDescription &target)
      : host(host), target(target), api(GpuTargetInfo::get(target)),
        b(host.getLoc(), host.getContext()) {}

protected:
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, b.getI32Type(), v);
  }
  Value f32(float v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value toF32(Value v);
  Value fromF32(Value v, Type stored);
  Value exp(Value x) { return api->exp(b, x); }
  Value fma(Value a, Value x, Value c) { return api->fma(b, a, x, c); }
  /// The memref type a kernel takes a tensor argument as: the API's
  /// element type for it (Vulkan: bf16 as i16 words, converted as they are
  /// loaded and stored); boolean masks arrive as one byte per element.
  MemRefType bufferType(Type tensorType) const;
  Value load(Value memref, ValueRange indices) {
    return memref::LoadOp::create(b, memref, indices);
  }
  /// 16-byte aligned by default, as cp.async and ldmatrix need.
  Value workgroupBuffer(ArrayRef<int64_t> shape, Type element,
                        int64_t alignment = 16) {
    return api->workgroupBuffer(b, kernel, shape, element, alignment);
  }
  /// The op's score parts, read by modScore and elementMask.
  template <typename OpT> void setScoreParts(OpT op) {
    mods = op.getModsAttr();
    pattern = op.getPatternAttr();
    maskShape = op.getMaskShape();
    auto q = cast<ShapedType>(op.getQuery().getType());
    auto k = cast<ShapedType>(op.getKey().getType());
    heads = q.getDimSize(1);
    // Keys of a length known at run time (paged) set runtimeDelta instead.
    delta = k.isDynamicDim(2)
                ? 0
                : getAlignmentDelta(op.getAlignment(), q.getDimSize(2),
                                    k.getDimSize(2)) +
                      op.getPositionShift();
  }
  /// s after the soft-cap, the bias operand and the mods (query row i,
  /// key j of head headIv, batch row batchIv); `capped` receives s after
  /// the soft-cap alone (the backward's derivative reads it).
  Value modScore(Value s, Value i, Value j, Value *capped = nullptr);
  /// i1: whether the pattern, segment ids and mask operand keep (i, j).
  Value elementMask(Value i, Value j);
  SmallVector<Value> denseIndices(Value buffer, Value i, Value j);

  /// Creates `kernel`, named as `host`, taking `argTypes` with `bindings`
  /// (`attn.bindings`), with `invocations` per workgroup and `grid`
  /// workgroups (`attn.grid`); the builder at the start of its body.
  void createKernel(gpu::GPUModuleOp module, ArrayRef<Type> argTypes,
                    ArrayRef<Attribute> bindings, ArrayRef<int64_t> grid,
                    int64_t invocations);
  /// The kernel arguments of a function of its arguments with one result
  /// of `resultType`: each argument read (`argN`), then the result written
  /// (`result0`).
  void argumentsAndResult(Type resultType, SmallVectorImpl<Type> &argTypes,
                          SmallVectorImpl<Attribute> &bindings);
  /// The kernel of an element-wise function (a layout change, an
  /// element-wise generic): `kernel`, named as `host`, with `argTypes`
  /// and `bindings`, 128 invocations striding over `elements` elements in
  /// order (at most 8192 workgroups; past that each invocation takes
  /// several). Returns the loop, the builder at the start of its body:
  /// its induction variable is the element's linear index. Emit
  /// gpu.return after it.
  scf::ForOp beginElementKernel(gpu::GPUModuleOp module,
                                ArrayRef<Type> argTypes,
                                ArrayRef<Attribute> bindings, int64_t elements);
  /// `linear` as indices into `shape`, row-major.
  SmallVector<Value> delinearize(Value linear, ArrayRef<int64_t> shape);
  /// Clones the ops of a linalg.generic's `body` (checked by
  /// checkElementBody) at the builder, its arguments as `map` maps them
  /// and linalg.index d as `indices[d]`, with the constants
  /// canonicalization hoisted out of it; returns the value it yields.
  Value cloneElementBody(Block &body, IRMapping &map,
                         ArrayRef<Value> indices = {});

  func::FuncOp host;
  const TargetDescription &target;
  /// How to emit for the target's API.
  std::shared_ptr<const GpuTargetInfo> api;
  ImplicitLocOpBuilder b;
  gpu::GPUFuncOp kernel;
  // The score parts (setScoreParts) and their buffers in the kernel.
  ArrayAttr mods;
  MaskAttrInterface pattern;
  MaskShape maskShape;
  int64_t heads = 0, delta = 0;
  /// The delta read at run time (keys of a paged cache whose length is an
  /// operand), else null and `delta` holds.
  Value runtimeDelta;
  Value deltaValue() { return runtimeDelta ? runtimeDelta : idx(delta); }
  Value qSegBuf, kvSegBuf, maskBuf, biasBuf, relTableBuf;
  Value headIv, batchIv;
};

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOGPU_GPUCODEGEN_H
