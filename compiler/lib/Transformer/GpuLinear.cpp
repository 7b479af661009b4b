//===- GpuLinear.cpp - a GPU layer stack's products on the device ---------===//
#include "GpuLinear.h"
#include "attn/Analysis/TargetDescription.h"
#include "attn/Spec/Spec.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

using namespace attnrt;

namespace {
/// A weight on the device, [out, in] as read.
struct DeviceWeight : LinearBackend::Weight {
  int64_t in = 0, out = 0;
  std::shared_ptr<GpuBuffer> buffer;
  int64_t bytes() const override { return int64_t(buffer->bytes()); }
};
} // namespace

int64_t GpuLinearBackend::rowCapacity(int64_t rows) {
  if (rows <= 1024)
    return std::max<int64_t>(8, int64_t(llvm::PowerOf2Ceil(rows)));
  return int64_t(llvm::alignTo(rows, 512));
}

GpuLinearBackend::GpuLinearBackend(const GpuCompileOptions &options,
                                   FloatFormat format,
                                   std::shared_ptr<GpuDevice> device)
    : options(options), format(format), device(std::move(device)) {
  mlir::DialectRegistry registry;
  attnspec::registerToolDialects(registry);
  context.appendDialectRegistry(registry);
}

std::shared_ptr<GpuLinearBackend>
GpuLinearBackend::create(const GpuCompileOptions &options, FloatFormat format,
                         std::string &error) {
  std::optional<mlir::attn::TargetDescription> target =
      mlir::attn::TargetDescription::lookup(options.target);
  if (!target || target->isCpu()) {
    error = "'" + options.target + "' is not a GPU target";
    return nullptr;
  }
  bool spirv = target->api == mlir::attn::TargetDescription::Api::Vulkan;
  std::shared_ptr<GpuDevice> device = sharedGpuDevice(spirv, error);
  if (!device)
    return nullptr;
  return std::shared_ptr<GpuLinearBackend>(
      new GpuLinearBackend(options, format, std::move(device)));
}

Status GpuLinearBackend::prepare(int64_t out, int64_t in,
                                 const std::vector<float> &weight,
                                 std::shared_ptr<const Weight> &prepared) {
  auto w = std::make_shared<DeviceWeight>();
  w->in = in;
  w->out = out;
  std::vector<float> rounded;
  const float *data = weight.data();
  if (format != FloatFormat::F32) {
    rounded.resize(weight.size());
    for (size_t i = 0; i < weight.size(); ++i)
      rounded[i] = float(roundTo(format, weight[i]));
    data = rounded.data();
  }
  uint64_t bytes = uint64_t(out) * uint64_t(in) * sizeof(float);
  std::string error;
  w->buffer = device->allocate(bytes, error);
  if (!w->buffer || !device->write(*w->buffer, data, bytes, error))
    return Status::error("a weight on the GPU: " + error);
  counted.weightBytes += bytes;
  prepared = std::move(w);
  return Status::ok();
}

llvm::Expected<GpuLinearBackend::Product *>
GpuLinearBackend::productFor(int64_t in, int64_t out, int64_t capacity) {
  Product &product = products[{in, out, capacity}];
  if (product.kernel)
    return &product;
  // Y = X W^T with W [out, in] as read (GpuLinearKernel.h).
  std::string y = llvm::formatv("tensor<{0}x{1}xf32>", capacity, out);
  std::string source = llvm::formatv(
      "func.func @linear(%x: tensor<{0}x{1}xf32>, %w: tensor<{2}x{1}xf32>) "
      "-> {3} {{\n"
      "  %zero = arith.constant 0.0 : f32\n"
      "  %empty = tensor.empty() : {3}\n"
      "  %init = linalg.fill ins(%zero : f32) outs(%empty : {3}) -> {3}\n"
      "  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, "
      "k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, "
      "n)>] ins(%x, %w : tensor<{0}x{1}xf32>, tensor<{2}x{1}xf32>) "
      "outs(%init : {3}) -> {3}\n"
      "  return %y : {3}\n"
      "}\n",
      capacity, in, out, y);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  if (!module)
    return llvm::createStringError("internal error: the product's IR");
  llvm::Expected<GpuArtifact> artifact = compileForGpu(*module, options);
  if (!artifact)
    return artifact.takeError();
  llvm::Expected<std::unique_ptr<GpuKernel>> kernel =
      GpuKernel::create(std::move(*artifact));
  if (!kernel)
    return kernel.takeError();
  std::string error;
  product.x = device->allocate(uint64_t(capacity) * in * sizeof(float), error);
  if (product.x)
    product.y =
        device->allocate(uint64_t(capacity) * out * sizeof(float), error);
  if (!product.y)
    return llvm::createStringError(error);
  product.kernel = std::move(*kernel);
  ++counted.kernels;
  return &product;
}

Status GpuLinearBackend::accumulate(const float *x, int64_t rows,
                                    const Weight &weight, float *y) {
  if (rows == 0)
    return Status::ok();
  const auto &w = static_cast<const DeviceWeight &>(weight);
  llvm::Expected<Product *> product =
      productFor(w.in, w.out, rowCapacity(rows));
  if (!product)
    return Status::error(llvm::toString(product.takeError()));
  uint64_t inBytes = uint64_t(rows) * w.in * sizeof(float),
           outBytes = uint64_t(rows) * w.out * sizeof(float);
  std::string error;
  if (!device->write(*(*product)->x, x, inBytes, error))
    return Status::error(error);
  std::vector<GpuOperand> operands(3);
  operands[0].buffer = (*product)->x.get();
  operands[1].buffer = w.buffer.get();
  operands[2].buffer = (*product)->y.get();
  if (llvm::Error e = (*product)->kernel->call("linear", operands))
    return Status::error(llvm::toString(std::move(e)));
  scratch.resize(size_t(rows) * w.out);
  if (!device->read(*(*product)->y, scratch.data(), outBytes, error))
    return Status::error(error);
  for (size_t i = 0; i < scratch.size(); ++i)
    y[i] += scratch[i];
  ++counted.products;
  counted.inputBytes += inBytes;
  counted.outputBytes += outBytes;
  return Status::ok();
}
