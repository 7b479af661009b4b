//===- GpuCompiler.cpp - attn IR to SPIR-V / PTX, and Vulkan calls --------===//
#include "attn/Compiler/GpuCompiler.h"
#include "attn/Compiler/TileCounters.h"
#include "attn/Pipelines/Pipelines.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "llvm/ADT/STLExtras.h"
#include <atomic>

using namespace mlir;
using namespace attnrt;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The launch of `kernel` from the attributes attn-to-gpu-kernels put on it.
static GpuKernelDescriptor describeKernel(gpu::GPUFuncOp kernel) {
  GpuKernelDescriptor d;
  d.name = kernel.getName().str();
  auto grid = kernel->getAttrOfType<DenseI64ArrayAttr>("attn.grid");
  for (int i = 0; i < 3; ++i)
    d.grid[i] = uint32_t(grid[i]);
  if (std::optional<llvm::ArrayRef<int32_t>> block = kernel.getKnownBlockSize())
    for (int i = 0; i < 3; ++i)
      d.workgroup[i] = uint32_t((*block)[i]);
  if (auto tiling = kernel->getAttrOfType<DenseI64ArrayAttr>("attn.tiling"))
    for (int i = 0; i < 3; ++i)
      d.tiling[i] = tiling[i];
  if (auto bytes = kernel->getAttrOfType<IntegerAttr>("attn.shared_bytes"))
    d.sharedBytes = uint32_t(bytes.getInt());
  auto bindings = kernel->getAttrOfType<ArrayAttr>("attn.bindings");
  for (auto [attr, type] :
       llvm::zip(bindings, kernel.getFunctionType().getInputs())) {
    auto dict = cast<DictionaryAttr>(attr);
    auto memref = cast<MemRefType>(type);
    llvm::StringRef access = dict.getAs<StringAttr>("access").getValue();
    d.bindings.push_back({dict.getAs<StringAttr>("name").str(),
                          access == "write" || access == "readwrite",
                          uint64_t(memref.getNumElements()) *
                              (memref.getElementTypeBitWidth() / 8)});
  }
  if (auto constants = kernel->getAttrOfType<DictionaryAttr>("attn.constants"))
    for (NamedAttribute constant : constants) {
      std::vector<uint32_t> words;
      auto values = cast<DenseElementsAttr>(constant.getValue());
      if (values.getElementType().isF32()) {
        for (const APFloat &v : values.getValues<APFloat>())
          words.push_back(uint32_t(v.bitcastToAPInt().getZExtValue()));
      } else {
        for (const APInt &v : values.getValues<APInt>())
          words.push_back(uint32_t(v.getZExtValue()));
      }
      d.constants.emplace_back(constant.getName().str(), std::move(words));
    }
  return d;
}

llvm::Expected<GpuArtifact>
attnrt::compileForGpu(ModuleOp module, const GpuCompileOptions &options) {
  MLIRContext *ctx = module.getContext();
  // CUDA kernels go through LLVM IR (gpu-module-to-binary): the context
  // needs the translations of every dialect in them.
  DialectRegistry translations;
  registerAllToLLVMIRTranslations(translations);
  ctx->appendDialectRegistry(translations);
  mlir::attn::GpuPipelineOptions pipeline;
  pipeline.target = options.target;
  pipeline.countTiles = options.countTiles;
  pipeline.emulateMma = options.emulateMma;
  pipeline.emulateWgmma = options.emulateWgmma;
  pipeline.workgroupRows = options.workgroupRows;
  pipeline.tf32 = options.tf32;
  pipeline.tf32x3 = options.tf32x3;
  PassManager kernels(ctx);
  mlir::attn::buildGpuKernelPipeline(kernels, pipeline);
  if (failed(kernels.run(module)))
    return makeError("compiling for target '" + options.target + "' failed");

  GpuArtifact artifact;
  module.walk([&](gpu::GPUFuncOp kernel) {
    if (kernel.isKernel())
      artifact.kernels.push_back(describeKernel(kernel));
  });
  if (artifact.kernels.empty())
    return makeError("the module has no function to compile for target '" +
                     options.target + "'");

  PassManager lower(ctx);
  mlir::attn::buildGpuLoweringPipeline(lower, pipeline);
  if (failed(lower.run(module)))
    return makeError("lowering kernels for target '" + options.target +
                     "' failed");
  for (Operation &op : module.getBody()->getOperations()) {
    if (auto spirvModule = dyn_cast<spirv::ModuleOp>(op)) {
      SmallVector<uint32_t> words;
      if (failed(spirv::serialize(spirvModule, words)))
        return makeError("serializing SPIR-V failed");
      artifact.isSpirv = true;
      artifact.spirv.assign(words.begin(), words.end());
      return artifact;
    }
    if (auto binary = dyn_cast<gpu::BinaryOp>(op)) {
      auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
      artifact.isSpirv = false;
      artifact.ptx = object.getObject().getValue().str();
      return artifact;
    }
  }
  return makeError("lowering for target '" + options.target +
                   "' produced no kernel module");
}

llvm::Expected<std::unique_ptr<GpuKernel>>
GpuKernel::create(GpuArtifact artifact) {
  std::unique_ptr<GpuKernel> kernel(new GpuKernel(std::move(artifact)));
  std::string error;
  kernel->device = sharedGpuDevice(kernel->artifact.isSpirv, error);
  if (!kernel->device)
    return makeError(error);
  return kernel;
}

llvm::Error GpuKernel::call(llvm::StringRef function,
                            llvm::ArrayRef<MemRefDescriptor *> arguments) {
  std::vector<GpuOperand> operands;
  for (MemRefDescriptor *argument : arguments)
    operands.push_back({argument->alignedData(), /*bytes=*/0});
  return call(function, operands);
}

static std::atomic<uint64_t> hostBytes{0};

uint64_t GpuKernel::hostBytesTransferred() { return hostBytes.load(); }

void GpuKernel::countHostBytes(uint64_t bytes) { hostBytes += bytes; }

llvm::Expected<GpuFunction *>
GpuKernel::preparedFunction(llvm::StringRef function) {
  for (auto &[name, f] : prepared)
    if (name == function)
      return f.get();
  std::string error;
  std::unique_ptr<GpuFunction> f =
      GpuFunction::prepare(artifact, *device, function.str(), error);
  if (!f)
    return makeError(error);
  prepared.emplace_back(function.str(), std::move(f));
  return prepared.back().second.get();
}

llvm::Error GpuKernel::launchesOn(llvm::StringRef function,
                                  const std::vector<GpuOperand> &operands,
                                  std::vector<GpuLaunch> &launches) {
  llvm::Expected<GpuFunction *> ready = preparedFunction(function);
  if (!ready)
    return ready.takeError();
  std::string error;
  if (!(*ready)->launchesOn(operands, launches, error))
    return makeError(error);
  return llvm::Error::success();
}

llvm::Error GpuKernel::call(llvm::StringRef function,
                            const std::vector<GpuOperand> &operands) {
  std::vector<int32_t> tileCounts;
  std::string error;
  llvm::Expected<GpuFunction *> prepared = preparedFunction(function);
  if (!prepared)
    return prepared.takeError();
  GpuFunction *ready = *prepared;
  if (!ready->call(operands, repeats, &times, &tileCounts, error))
    return makeError(error);
  for (size_t i = 0; i < operands.size(); ++i)
    if (!operands[i].buffer && i < ready->operandBytes().size())
      hostBytes += ready->operandBytes()[i];
  // Per workgroup: visited and partial key tiles.
  for (const GpuKernelDescriptor &d : artifact.kernels)
    if (d.name == function)
      for (size_t w = 0; w + 1 < tileCounts.size(); w += 2)
        attn_record_tiles(d.tiling[0], d.tiling[1], d.tiling[2], tileCounts[w],
                          tileCounts[w + 1]);
  return llvm::Error::success();
}
