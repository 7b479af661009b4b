//===- GpuTargetInfo.cpp - Vulkan (SPIR-V) and CUDA (NVVM) ----------------===//
//
// The two implementations of GpuTargetInfo.h. Vulkan kernels become SPIR-V
// for any Vulkan 1.1 device (lavapipe in the suite); CUDA kernels PTX for
// the target's chip.
//
//===----------------------------------------------------------------------===//
#include "attn/Conversion/GpuTargetInfo.h"
#include "GpuFlashKernel.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {

class VulkanTargetInfo : public GpuTargetInfo {
public:
  using GpuTargetInfo::GpuTargetInfo;

  /// Vulkan 1.1 (SPIR-V 1.3), 64-bit integers for i64 segment ids, 16-bit
  /// storage for f16 and bf16 inputs, 8-bit storage for boolean masks,
  /// subgroup shuffles (row sums of the tensor-core kernel), the target's
  /// workgroup limits. spirv-update-vce keeps only the capabilities a
  /// kernel uses.
  void prepareModule(gpu::GPUModuleOp module) const override {
    std::string text =
        "#spirv.target_env<#spirv.vce<v1.3, [Shader, Int64, Int16, Int8, "
        "Float16, StorageBuffer16BitAccess, StorageBuffer8BitAccess, "
        "GroupNonUniformShuffle], [SPV_KHR_storage_buffer_storage_class, "
        "SPV_KHR_16bit_storage, SPV_KHR_8bit_storage]>, api=Vulkan, "
        "#spirv.resource_limits<max_compute_shared_memory_size = " +
        std::to_string(target.workgroupMemoryBytes) +
        ", max_compute_workgroup_invocations = 128, "
        "max_compute_workgroup_size = [128, 128, 64], subgroup_size = " +
        std::to_string(target.subgroupSize) + ">>";
    // Parsed, so the dialect must be loaded (a pattern driver's pass may
    // not have declared it).
    module.getContext()->getOrLoadDialect<spirv::SPIRVDialect>();
    module->setAttr(spirv::getTargetEnvAttrName(),
                    parseAttribute(text, module.getContext()));
  }

  void prepareKernel(gpu::GPUFuncOp kernel,
                     int32_t invocations) const override {
    kernel->setAttr(
        spirv::getEntryPointABIAttrName(),
        spirv::getEntryPointABIAttr(kernel.getContext(), {invocations, 1, 1}));
  }

  void finishKernel(gpu::GPUFuncOp kernel) const override {
    guardZeroTripLoops(kernel);
  }

  Type bufferElementType(Type element) const override {
    return element.isBF16() ? IntegerType::get(element.getContext(), 16)
                            : element;
  }

  /// math.exp and math.fma become GLSL Exp and Fma.
  Value exp(ImplicitLocOpBuilder &b, Value x) const override {
    return math::ExpOp::create(b, x);
  }
  /// math.exp2 has no SPIR-V (GLSL) lowering upstream: exp(x ln 2).
  Value exp2(ImplicitLocOpBuilder &b, Value x) const override {
    return math::ExpOp::create(
        b, arith::MulFOp::create(
               b, x, arith::ConstantOp::create(b, b.getF32FloatAttr(M_LN2))));
  }
  Value fma(ImplicitLocOpBuilder &b, Value a, Value x, Value c) const override {
    return math::FmaOp::create(b, a, x, c);
  }

  /// An alloc in address space 3 (docs/Gpu.md, "Memory spaces"); its
  /// placement is the driver's (the emulated kernels address within it).
  Value workgroupBuffer(ImplicitLocOpBuilder &b, gpu::GPUFuncOp,
                        ArrayRef<int64_t> shape, Type element,
                        int64_t) const override {
    auto type =
        MemRefType::get(shape, element, AffineMap(), b.getI64IntegerAttr(3));
    return memref::AllocOp::create(b, type);
  }

  int64_t shuffleWidth() const override { return target.subgroupSize; }
  bool hasNativeMma() const override { return false; }

  /// bf16 conversions as integer operations (SPIR-V has no bf16); math.exp
  /// has no pattern in convert-gpu-to-spirv itself. 32-bit indices (the
  /// pass's default): every buffer is under 2^31 words.
  void addLoweringPasses(OpPassManager &pm) const override {
    OpPassManager &kernelPm = pm.nest<gpu::GPUModuleOp>();
    arith::ArithExpandOpsPassOptions expand;
    expand.includeBf16 = true;
    kernelPm.addPass(arith::createArithExpandOpsPass(expand));
    kernelPm.addPass(createCanonicalizerPass());
    kernelPm.addPass(createConvertMathToSPIRVPass());
    pm.addPass(createConvertGPUToSPIRVPass(/*mapMemorySpace=*/true));
    OpPassManager &spirvPm = pm.nest<spirv::ModuleOp>();
    spirvPm.addPass(spirv::createSPIRVLowerABIAttributesPass());
    spirvPm.addPass(spirv::createSPIRVUpdateVCEPass());
    spirvPm.addPass(createCanonicalizerPass());
  }
};

class NvvmTargetInfo : public GpuTargetInfo {
public:
  using GpuTargetInfo::GpuTargetInfo;

  /// Shared memory a CUDA block may declare statically.
  static constexpr int64_t kStaticSharedBytes = 48 << 10;
  /// Dynamic shared memory starts 16-byte aligned; buffers are placed from
  /// its first 1024-byte boundary (wgmma's swizzle atoms), so the launch
  /// asks for this much more.
  static constexpr int64_t kDynamicSharedSlack = 1024;

  /// `type` at the next free offset of the kernel's dynamic shared memory
  /// (`attn.shared_bytes` on the kernel: what the launch asks for).
  static Value dynamicSharedBuffer(ImplicitLocOpBuilder &b,
                                   gpu::GPUFuncOp kernel, MemRefType type,
                                   int64_t alignment) {
    MLIRContext *ctx = b.getContext();
    auto bytesAttr = kernel->getAttrOfType<IntegerAttr>("attn.shared_bytes");
    int64_t used = bytesAttr ? bytesAttr.getInt() : kDynamicSharedSlack;
    int64_t offset = llvm::alignTo(used - kDynamicSharedSlack, alignment);
    int64_t bytes =
        type.getNumElements() * int64_t(type.getElementTypeBitWidth() / 8);
    kernel->setAttr("attn.shared_bytes",
                    IntegerAttr::get(IntegerType::get(ctx, 32),
                                     kDynamicSharedSlack + offset + bytes));
    // The start and its padding to 1024 bytes, at the kernel's entry (CSE
    // merges those of several buffers).
    auto space = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    auto bytesType = MemRefType::get(
        {ShapedType::kDynamic}, IntegerType::get(ctx, 8), AffineMap(), space);
    Value arena, pad;
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&kernel.front());
      arena = gpu::DynamicSharedMemoryOp::create(b, bytesType);
      Value start = memref::ExtractAlignedPointerAsIndexOp::create(b, arena);
      Value atom = arith::ConstantIndexOp::create(b, kDynamicSharedSlack);
      pad = arith::RemUIOp::create(
          b,
          arith::SubIOp::create(b, atom,
                                arith::RemUIOp::create(b, start, atom)),
          atom);
    }
    Value shift = arith::AddIOp::create(
        b, pad, arith::ConstantIndexOp::create(b, offset));
    return memref::ViewOp::create(b, type, arena, shift, ValueRange{});
  }

  void prepareModule(gpu::GPUModuleOp) const override {}
  /// `.minnctapersm 1`: without an occupancy goal ptxas may cap registers
  /// to fit more blocks and spill (f16 D = 64 on sm_90: 96 registers and
  /// 4 bytes spilled; with the goal 126 registers and none).
  void prepareKernel(gpu::GPUFuncOp kernel, int32_t) const override {
    kernel->setAttr(
        NVVM::NVVMDialect::getMinctasmAttrName(),
        IntegerAttr::get(IntegerType::get(kernel.getContext(), 32), 1));
  }
  Type bufferElementType(Type element) const override { return element; }

  /// ex2.approx.f32 (of x log2(e) for exp): math.exp / math.exp2 become
  /// libdevice calls unless a CUDA toolkit is named at compile time, and
  /// libdevice is not always there.
  Value exp(ImplicitLocOpBuilder &b, Value x) const override {
    return exp2(
        b, arith::MulFOp::create(b, x,
                                 arith::ConstantOp::create(
                                     b, b.getF32FloatAttr(float(M_LOG2E)))));
  }
  Value exp2(ImplicitLocOpBuilder &b, Value x) const override {
    return LLVM::CallIntrinsicOp::create(
               b, b.getF32Type(), b.getStringAttr("llvm.nvvm.ex2.approx"),
               ValueRange{x})
        .getResult(0);
  }
  /// LLVM's fma intrinsic, PTX's fma.rn.f32 (math.fma would become a
  /// libdevice call; a multiply and an add become mul.rn and add.rn, which
  /// ptxas does not contract).
  Value fma(ImplicitLocOpBuilder &b, Value a, Value x, Value c) const override {
    return LLVM::FMAOp::create(b, a, x, c);
  }

  /// A workgroup attribution of the kernel; on targets that give a
  /// workgroup more than the static 48 KiB, a view of dynamic shared memory.
  Value workgroupBuffer(ImplicitLocOpBuilder &b, gpu::GPUFuncOp kernel,
                        ArrayRef<int64_t> shape, Type element,
                        int64_t alignment) const override {
    auto space = gpu::AddressSpaceAttr::get(b.getContext(),
                                            gpu::AddressSpace::Workgroup);
    auto type = MemRefType::get(shape, element, AffineMap(), space);
    if (target.workgroupMemoryBytes > kStaticSharedBytes)
      return dynamicSharedBuffer(b, kernel, type, alignment);
    Value buffer = kernel.addWorkgroupAttribution(type, b.getLoc());
    // cp.async's 16-byte copies and ldmatrix's rows need 16-byte aligned
    // shared addresses (the element type alone would give 2), wgmma's
    // 128-byte swizzle atoms 1024-byte aligned ones.
    kernel.setWorkgroupAttributionAttr(kernel.getNumWorkgroupAttributions() - 1,
                                       LLVM::LLVMDialect::getAlignAttrName(),
                                       b.getI64IntegerAttr(alignment));
    return buffer;
  }

  int64_t shuffleWidth() const override { return 32; }
  bool hasNativeMma() const override { return true; }
  void finishKernel(gpu::GPUFuncOp kernel) const override {
    lowerMathForNvvm(kernel);
  }

  /// NVVM wants unstructured control flow; static memrefs are passed as
  /// bare pointers (one kernel parameter per buffer).
  void addLoweringPasses(OpPassManager &pm) const override {
    OpPassManager &kernelPm = pm.nest<gpu::GPUModuleOp>();
    kernelPm.addPass(createSCFToControlFlowPass());
    // ldmatrix and cp.async (nvgpu) first: their lowering wants memrefs.
    kernelPm.addPass(createConvertNVGPUToNVVMPass());
    ConvertGpuOpsToNVVMOpsOptions nvvm;
    nvvm.useBarePtrCallConv = true;
    kernelPm.addPass(createConvertGpuOpsToNVVMOps(nvvm));
    kernelPm.addPass(createCanonicalizerPass());
    kernelPm.addPass(createReconcileUnrealizedCastsPass());
    GpuNVVMAttachTargetOptions attach;
    attach.chip = target.chip;
    attach.features = "+ptx80";
    attach.optLevel = 3;
    pm.addPass(createGpuNVVMAttachTarget(attach));
    GpuModuleToBinaryPassOptions binary;
    binary.compilationTarget = "isa";
    pm.addPass(createGpuModuleToBinaryPass(binary));
  }
};

} // namespace

std::shared_ptr<const GpuTargetInfo>
GpuTargetInfo::get(const TargetDescription &target) {
  switch (target.api) {
  case TargetDescription::Api::Vulkan:
    return std::make_shared<VulkanTargetInfo>(target);
  case TargetDescription::Api::Cuda:
    return std::make_shared<NvvmTargetInfo>(target);
  case TargetDescription::Api::None:
    break;
  }
  return nullptr;
}
