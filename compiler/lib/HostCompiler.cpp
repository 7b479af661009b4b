//===- HostCompiler.cpp - compile attn IR for this machine ----------------===//
#include "attn/Compiler/HostCompiler.h"
#include "attn/Pipelines/Pipelines.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/TargetParser/Host.h"
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

using namespace attnrt;

bool attnrt::enableAmxTiles() {
#if defined(__linux__) && defined(__x86_64__)
  static const bool granted = [] {
    if (!llvm::sys::getHostCPUFeatures().lookup("amx-bf16"))
      return false;
    constexpr long kRequestPermission = 0x1023; // ARCH_REQ_XCOMP_PERM
    constexpr long kTileData = 18;              // XFEATURE_XTILEDATA
    return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
  }();
  return granted;
#else
  return false;
#endif
}

llvm::Expected<mlir::attn::TargetDescription>
attnrt::hostTarget(const HostCompileOptions &options) {
  using mlir::attn::TargetDescription;
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  TargetDescription target = TargetDescription::forCpuFeatures(host);
  if (!options.target.empty()) {
    std::optional<TargetDescription> named =
        TargetDescription::lookup(options.target);
    if (!named || !named->isCpu())
      return llvm::createStringError(
          "unknown CPU target '" + options.target +
          "' (cpu-avx2, cpu-avx512, cpu-avx512-bf16, cpu-amx, host)");
    // The JIT runs the code here: the target may use nothing this CPU
    // lacks.
    for (const std::string &feature : named->features)
      if (!host.lookup(feature))
        return llvm::createStringError("target '" + options.target + "' uses " +
                                       feature +
                                       ", which this CPU does not have");
    target = *named;
  }
  switch (options.bf16Products) {
  case Bf16Products::Widen:
    llvm::erase(target.features, "amx-bf16");
    llvm::erase(target.features, "avx512bf16");
    break;
  case Bf16Products::Dot:
    llvm::erase(target.features, "amx-bf16");
    if (!target.bf16ProductsByDot())
      return llvm::createStringError(
          "bf16 products by vdpbf16ps need AVX-512 BF16 and 512-bit "
          "blocking (target '" +
          target.name + "')");
    break;
  case Bf16Products::Amx:
  case Bf16Products::Auto:
    break;
  }
  if (target.hasFeature("amx-bf16") && !enableAmxTiles()) {
    if (!options.target.empty() || options.bf16Products == Bf16Products::Amx)
      return llvm::createStringError(
          "bf16 products on AMX: the OS does not allow AMX tiles");
    llvm::erase(target.features, "amx-bf16");
  }
  if (options.bf16Products == Bf16Products::Amx && !target.bf16ProductsOnAmx())
    return llvm::createStringError("bf16 products on AMX: target '" +
                                   target.name +
                                   "' has no AMX tiles or 512-bit blocking");
  return target;
}

llvm::Expected<std::unique_ptr<JitKernel>>
attnrt::compileForHost(mlir::ModuleOp module,
                       const HostCompileOptions &options) {
  mlir::MLIRContext *ctx = module->getContext();
  module.walk([&](mlir::func::FuncOp fn) {
    if (fn.isPublic() && !fn.isExternal())
      fn->setAttr(mlir::LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  mlir::UnitAttr::get(ctx));
  });
  mlir::attn::CpuPipelineOptions pipeline;
  pipeline.queryTile = options.genericQueryTile;
  pipeline.keyTile = options.genericKeyTile;
  pipeline.cpuKeyTile = options.cpuKeyTile;
  // Kernels for this machine's registers and ISA extensions.
  llvm::Expected<mlir::attn::TargetDescription> target = hostTarget(options);
  if (!target)
    return target.takeError();
  module->setAttr(mlir::attn::TargetAttr::getAttrName(), target->toAttr(ctx));
  pipeline.cpuKernels = options.cpuKernels;
  pipeline.numThreads = options.numThreads;
  pipeline.countTiles = options.countTiles;
  mlir::PassManager pm(ctx);
  mlir::attn::buildCpuPipeline(pm, pipeline);
  if (mlir::failed(pm.run(module)))
    return llvm::createStringError("lowering for the host CPU failed");
  return JitKernel::create(module);
}
