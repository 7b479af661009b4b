//===- HostCompiler.cpp - compile attn IR for this machine ----------------===//
#include "attn/Runtime/HostCompiler.h"
#include "attn/Pipelines/Pipelines.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/TargetParser/Host.h"

using namespace attnrt;

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
  pipeline.vectorBits = options.vectorBits
                            ? options.vectorBits
                            : (features.lookup("avx512f") ? 512 : 256);
  pipeline.cpuKernels = options.cpuKernels;
  pipeline.numThreads = options.numThreads;
  pipeline.countTiles = options.countTiles;
  mlir::PassManager pm(ctx);
  mlir::attn::buildCpuPipeline(pm, pipeline);
  if (mlir::failed(pm.run(module)))
    return llvm::createStringError("lowering for the host CPU failed");
  return JitKernel::create(module);
}
