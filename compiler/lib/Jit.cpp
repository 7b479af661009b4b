//===- Jit.cpp - run compiled attn kernels in process ---------------------===//
#include "attn/Compiler/Jit.h"
#include "attn/Compiler/TileCounters.h"
#include "attn/Runtime/FourierMix.h"
#include "attn/Runtime/KernelAllocator.h"
#include "attn/Runtime/MemRefCopy.h"
#include "attn/Runtime/Selection.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/TargetSelect.h"

using namespace attnrt;

llvm::Expected<std::unique_ptr<JitKernel>>
JitKernel::create(mlir::ModuleOp module) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  mlir::MLIRContext *ctx = module->getContext();
  mlir::registerBuiltinDialectTranslation(*ctx);
  mlir::registerLLVMDialectTranslation(*ctx);
  mlir::registerOpenMPDialectTranslation(*ctx);

  // LLVM's O3 middle end, tuned for the host CPU (its cost model decides
  // unrolling and vector widths): codegen alone leaves loops unoptimized.
  auto hostBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!hostBuilder)
    return hostBuilder.takeError();
  auto hostMachine = hostBuilder->createTargetMachine();
  if (!hostMachine)
    return hostMachine.takeError();
  std::function<llvm::Error(llvm::Module *)> optimize =
      mlir::makeOptimizingTransformer(/*optLevel=*/3, /*sizeLevel=*/0,
                                      hostMachine->get());
  mlir::ExecutionEngineOptions options;
  options.transformer = optimize;
  // Parallel loops call the OpenMP runtime. memref.copy's strided case
  // calls memrefCopy, which libattn_support provides (registered below).
  llvm::SmallVector<llvm::StringRef> libs = {ATTN_OPENMP_LIB};
  options.sharedLibPaths = libs;
  // ATTN_JIT_PERF=1 lets `perf record -k 1` + `perf inject --jit` name
  // the compiled functions.
  options.enablePerfNotificationListener = std::getenv("ATTN_JIT_PERF");
  // Code generation for the host too: without an explicit machine the JIT
  // targets a baseline x86-64 (no AVX-512, 16 vector registers).
  auto codegenMachine = hostBuilder->createTargetMachine();
  if (!codegenMachine)
    return codegenMachine.takeError();
  // Functions to look up once the engine exists (below); read first:
  // the engine takes the module over.
  std::string firstFunction;
  module.walk([&](mlir::LLVM::LLVMFuncOp fn) {
    if (firstFunction.empty() && !fn.isExternal())
      firstFunction = fn.getSymName().str();
  });
  auto engine = mlir::ExecutionEngine::create(module, options,
                                              std::move(*codegenMachine));
  if (!engine)
    return engine.takeError();
  // Kernels built with count-tiles report to this process's counters.
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    symbols[interner("attn_record_tiles")] = {
        llvm::orc::ExecutorAddr::fromPtr(&attn_record_tiles),
        llvm::JITSymbolFlags::Exported};
    symbols[interner("attn_record_backward_tiles")] = {
        llvm::orc::ExecutorAddr::fromPtr(&attn_record_backward_tiles),
        llvm::JITSymbolFlags::Exported};
    symbols[interner("attn_record_backward_fused_tiles")] = {
        llvm::orc::ExecutorAddr::fromPtr(&attn_record_backward_fused_tiles),
        llvm::JITSymbolFlags::Exported};
    // attn.fourier_mix, attn.lsh and attn.routing call the runtime's
    // support functions.
    auto add = [&](llvm::StringRef name, void *function) {
      symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(function),
                                 llvm::JITSymbolFlags::Exported};
    };
    add("_mlir_ciface_attn_fourier_mix_f32",
        reinterpret_cast<void *>(&_mlir_ciface_attn_fourier_mix_f32));
    add("_mlir_ciface_attn_counting_sort",
        reinterpret_cast<void *>(&_mlir_ciface_attn_counting_sort));
    add("_mlir_ciface_attn_top_k_f32",
        reinterpret_cast<void *>(&_mlir_ciface_attn_top_k_f32));
    add("memrefCopy", reinterpret_cast<void *>(&memrefCopy));
    // memref.alloc / dealloc (KernelAllocator.h).
    add("_mlir_memref_to_llvm_alloc",
        reinterpret_cast<void *>(&_mlir_memref_to_llvm_alloc));
    add("_mlir_memref_to_llvm_aligned_alloc",
        reinterpret_cast<void *>(&_mlir_memref_to_llvm_aligned_alloc));
    add("_mlir_memref_to_llvm_free",
        reinterpret_cast<void *>(&_mlir_memref_to_llvm_free));
    return symbols;
  });
  // The JIT generates machine code at a module's first lookup: done here,
  // so that a kernel compiled ahead of its first call (a decoder's
  // per-KV-head kernel, compiled with the prompt's) does not make that
  // call wait for code generation.
  if (!firstFunction.empty())
    if (auto address = (*engine)->lookup(firstFunction); !address)
      return address.takeError();
  return std::unique_ptr<JitKernel>(new JitKernel(std::move(*engine)));
}

llvm::Error JitKernel::call(llvm::StringRef function,
                            llvm::ArrayRef<MemRefDescriptor *> arguments) {
  // Each packed argument points at the value passed: here a descriptor
  // pointer.
  std::vector<void *> pointers, packed;
  pointers.reserve(arguments.size());
  for (MemRefDescriptor *descriptor : arguments)
    pointers.push_back(descriptor->get());
  for (void *&pointer : pointers)
    packed.push_back(&pointer);
  return engine->invokePacked(("_mlir_ciface_" + function).str(), packed);
}
