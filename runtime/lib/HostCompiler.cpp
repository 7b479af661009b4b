//===- HostCompiler.cpp - compile attn IR for this machine ----------------===//
#include "attn/Runtime/HostCompiler.h"
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

/// The vector width kernels are blocked for under `options`.
static int64_t vectorBitsFor(const HostCompileOptions &options,
                             const llvm::StringMap<bool> &features) {
  return options.vectorBits ? options.vectorBits
                            : (features.lookup("avx512f") ? 512 : 256);
}

int64_t attnrt::hostVectorBits(const HostCompileOptions &options) {
  return vectorBitsFor(options, llvm::sys::getHostCPUFeatures());
}

bool attnrt::bf16ProductsOnAmx(const HostCompileOptions &options) {
  return (options.bf16Products == Bf16Products::Auto ||
          options.bf16Products == Bf16Products::Amx) &&
         vectorBitsFor(options, llvm::sys::getHostCPUFeatures()) == 512 &&
         enableAmxTiles();
}

bool attnrt::bf16ProductsByDot(const HostCompileOptions &options) {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  bool wanted = options.bf16Products == Bf16Products::Dot ||
                (options.bf16Products == Bf16Products::Auto &&
                 !bf16ProductsOnAmx(options));
  return wanted && vectorBitsFor(options, features) == 512 &&
         features.lookup("avx512bf16");
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
  // Block the kernels for the vector registers this machine has.
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  pipeline.vectorBits = vectorBitsFor(options, features);
  pipeline.cpuKernels = options.cpuKernels;
  // bf16 products: AMX where the OS grants the tile state, else vdpbf16ps
  // (AVX-512 BF16), else widened (docs/Pipeline.md); the same choice
  // LinearPanels packs weights for.
  pipeline.amx = bf16ProductsOnAmx(options);
  pipeline.bf16Dot = bf16ProductsByDot(options);
  if (options.bf16Products == Bf16Products::Amx && !pipeline.amx)
    return llvm::createStringError(
        "bf16 products on AMX: this CPU, its 512-bit blocking or the OS "
        "does not allow AMX tiles");
  if (options.bf16Products == Bf16Products::Dot && !pipeline.bf16Dot)
    return llvm::createStringError(
        "bf16 products by vdpbf16ps need AVX-512 BF16 and 512-bit "
        "blocking");
  // Without a native f32 -> bf16 conversion LLVM would call a compiler-rt
  // builtin the JIT does not find.
  pipeline.expandBf16 =
      !features.lookup("avx512bf16") && !features.lookup("avxneconvert");
  pipeline.numThreads = options.numThreads;
  pipeline.countTiles = options.countTiles;
  mlir::PassManager pm(ctx);
  mlir::attn::buildCpuPipeline(pm, pipeline);
  if (mlir::failed(pm.run(module)))
    return llvm::createStringError("lowering for the host CPU failed");
  return JitKernel::create(module);
}
