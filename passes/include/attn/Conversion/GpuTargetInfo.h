//===- GpuTargetInfo.h - what differs between GPU APIs ----------*- C++ -*-===//
//
// Every place the GPU kernels differ by API (Vulkan's SPIR-V, CUDA's NVVM)
// asks this interface, one implementation per API (GpuTargetInfo.cpp), so
// that a third API is one more class rather than if/else chains whose
// default branches disagree. The facts (workgroup memory, subgroup size,
// matrix shapes) stay in the module's #attn.target; this is how to emit
// for them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_GPUTARGETINFO_H
#define ATTN_CONVERSION_GPUTARGETINFO_H

#include "attn/Analysis/TargetDescription.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Pass/PassManager.h"
#include <memory>

namespace mlir::attn {

class GpuTargetInfo {
public:
  virtual ~GpuTargetInfo() = default;
  /// The implementation for `target`'s API; null for a CPU target.
  static std::shared_ptr<const GpuTargetInfo>
  get(const TargetDescription &target);

  const TargetDescription &description() const { return target; }

  /// Attributes the kernels' gpu.module needs (Vulkan: its
  /// spirv.target_env).
  virtual void prepareModule(gpu::GPUModuleOp module) const = 0;
  /// Attributes a kernel of `invocations` invocations needs (Vulkan: the
  /// SPIR-V entry point ABI).
  virtual void prepareKernel(gpu::GPUFuncOp kernel,
                             int32_t invocations) const = 0;
  /// The element type a kernel buffer holds `element` as (Vulkan: bf16 as
  /// i16 words, since SPIR-V has no bf16).
  virtual Type bufferElementType(Type element) const = 0;
  /// exp(x), 2^x and a * x + c in f32.
  virtual Value exp(ImplicitLocOpBuilder &b, Value x) const = 0;
  virtual Value exp2(ImplicitLocOpBuilder &b, Value x) const = 0;
  virtual Value fma(ImplicitLocOpBuilder &b, Value a, Value x,
                    Value c) const = 0;
  /// Workgroup memory of `shape` for `kernel`, its address a multiple of
  /// `alignment` bytes where the API lets the kernel choose (CUDA).
  virtual Value workgroupBuffer(ImplicitLocOpBuilder &b, gpu::GPUFuncOp kernel,
                                ArrayRef<int64_t> shape, Type element,
                                int64_t alignment) const = 0;
  /// Lanes a subgroup shuffle spans.
  virtual int64_t shuffleWidth() const = 0;
  /// Whether mma.sync, ldmatrix and cp.async run on the device (else the
  /// tensor-core kernel emulates them through workgroup memory).
  virtual bool hasNativeMma() const = 0;
  /// The last rewrites of a finished kernel (NVVM: math ops libdevice
  /// would otherwise provide).
  virtual void finishKernel(gpu::GPUFuncOp kernel) const {}
  /// The passes from gpu.func kernels to the API's dialect: a
  /// spirv.module, or a gpu.binary of PTX.
  virtual void addLoweringPasses(OpPassManager &pm) const = 0;

  explicit GpuTargetInfo(const TargetDescription &target) : target(target) {}

protected:
  TargetDescription target;
};

} // namespace mlir::attn

#endif // ATTN_CONVERSION_GPUTARGETINFO_H
