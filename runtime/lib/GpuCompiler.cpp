//===- GpuCompiler.cpp - attn IR to SPIR-V / PTX, and Vulkan calls --------===//
#include "attn/Runtime/GpuCompiler.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Runtime/TileCounters.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "llvm/ADT/STLExtras.h"

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
  auto bindings = kernel->getAttrOfType<ArrayAttr>("attn.bindings");
  for (auto [attr, type] :
       llvm::zip(bindings, kernel.getFunctionType().getInputs())) {
    auto dict = cast<DictionaryAttr>(attr);
    auto memref = cast<MemRefType>(type);
    d.bindings.push_back(
        {dict.getAs<StringAttr>("name").str(),
         dict.getAs<StringAttr>("access").getValue() == "write",
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
  if (kernel->artifact.isSpirv)
    kernel->vulkan = VulkanDevice::open(error);
  else
    kernel->cuda = CudaDevice::open(error);
  if (!kernel->vulkan && !kernel->cuda)
    return makeError(error);
  return kernel;
}

llvm::Error GpuKernel::call(llvm::StringRef function,
                            llvm::ArrayRef<MemRefDescriptor *> arguments) {
  auto find = [&](llvm::StringRef name) -> const GpuKernelDescriptor * {
    for (const GpuKernelDescriptor &d : artifact.kernels)
      if (d.name == name)
        return &d;
    return nullptr;
  };
  const GpuKernelDescriptor *kernel = find(function);
  if (!kernel)
    return makeError("no GPU kernel named '" + function + "'");
  // A launch whose key tiles are split over workgroups writes partial
  // results that `<function>_merge` combines into the output.
  const GpuKernelDescriptor *merge = find((function + "_merge").str());
  size_t numInputs = llvm::count_if(kernel->bindings, [](const GpuBinding &b) {
    return llvm::StringRef(b.name).starts_with("arg");
  });
  std::vector<int32_t> tileCounts;
  std::vector<float> partials;
  auto viewsOf = [&](const GpuKernelDescriptor &d,
                     std::vector<GpuBufferView> &views) -> llvm::Error {
    for (const GpuBinding &binding : d.bindings) {
      llvm::StringRef name = binding.name;
      GpuBufferView view{nullptr, binding.bytes, binding.written};
      unsigned index = 0;
      if (name.consume_front("arg") && !name.getAsInteger(10, index) &&
          index < arguments.size()) {
        view.data = arguments[index]->alignedData();
      } else if (name.consume_front("result") &&
                 !name.getAsInteger(10, index) &&
                 numInputs + index < arguments.size()) {
        view.data = arguments[numInputs + index]->alignedData();
      } else if (const std::vector<uint32_t> *words =
                     d.constant(binding.name)) {
        view.data = const_cast<uint32_t *>(words->data());
      } else if (name == "tile_counts") {
        tileCounts.resize(binding.bytes / sizeof(int32_t));
        view.data = tileCounts.data();
      } else if (name == "partials") {
        partials.resize(binding.bytes / sizeof(float));
        view.data = partials.data();
      } else {
        return makeError("kernel '" + d.name + "': binding '" + binding.name +
                         "' has no argument (given " +
                         llvm::Twine(arguments.size()) + ")");
      }
      views.push_back(view);
    }
    return llvm::Error::success();
  };
  auto run = [&](const GpuKernelDescriptor &d) -> llvm::Error {
    std::vector<GpuBufferView> views;
    if (llvm::Error e = viewsOf(d, views))
      return e;
    std::string error;
    std::vector<double> ms;
    bool ran = vulkan ? vulkan->run(artifact.spirv, d, views, repeats, &ms,
                                    error)
                      : cuda->run(artifact.ptx, d, views, repeats, &ms, error);
    if (!ran)
      return makeError(error);
    // A split launch's time is both kernels'.
    times.resize(ms.size(), 0.0);
    for (size_t r = 0; r < ms.size(); ++r)
      times[r] += ms[r];
    return llvm::Error::success();
  };
  times.clear();
  if (llvm::Error e = run(*kernel))
    return e;
  if (merge)
    if (llvm::Error e = run(*merge))
      return e;
  // Per workgroup: visited and partial key tiles.
  for (size_t w = 0; w + 1 < tileCounts.size(); w += 2)
    attn_record_tiles(kernel->tiling[0], kernel->tiling[1], kernel->tiling[2],
                      tileCounts[w], tileCounts[w + 1]);
  return llvm::Error::success();
}
