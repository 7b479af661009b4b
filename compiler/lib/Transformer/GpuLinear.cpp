//===- GpuLinear.cpp - a GPU layer stack's products on the device ---------===//
#include "GpuLinear.h"
#include "attn/Analysis/TargetDescription.h"
#include "attn/Compiler/LinearKernels.h"
#include "attn/Spec/Spec.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

using namespace attnrt;

int64_t GpuLinearBackend::rowCapacity(int64_t rows) {
  // A launch runs only the row tiles that hold rows, so a capacity costs
  // buffer memory, not work: few capacities, few compiles. Up to 8 rows
  // (decoding steps) take the skinny kernel.
  if (rows <= 8)
    return 8;
  if (rows <= 256)
    return 256;
  return int64_t(llvm::alignTo(rows, 2048));
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
  // 16-bit weights stay 16-bit on the device: half the memory, and half
  // the bytes a decoding step's products read.
  std::vector<uint16_t> bits;
  const void *data = weight.data();
  uint64_t bytes = uint64_t(out) * uint64_t(in) * sizeof(float);
  if (format != FloatFormat::F32) {
    bits.resize(weight.size());
    for (size_t i = 0; i < weight.size(); ++i)
      bits[i] = toBits(format, weight[i]);
    data = bits.data();
    bytes = uint64_t(out) * uint64_t(in) * sizeof(uint16_t);
  }
  std::string error;
  w->buffer = device->allocate(bytes, error);
  if (!w->buffer || !device->write(*w->buffer, data, bytes, error))
    return Status::error("a weight on the GPU: " + error);
  counted.weightBytes += bytes;
  prepared = std::move(w);
  return Status::ok();
}

llvm::Expected<std::unique_ptr<GpuKernel>>
GpuLinearBackend::compileKernel(const std::string &source) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  if (!module)
    return llvm::createStringError("internal error: a device kernel's IR");
  llvm::Expected<GpuArtifact> artifact = compileForGpu(*module, options);
  if (!artifact)
    return artifact.takeError();
  return GpuKernel::create(std::move(*artifact));
}

llvm::Expected<GpuLinearBackend::Product *>
GpuLinearBackend::productFor(int64_t in, int64_t out, int64_t capacity,
                             const LinearEpilogue &epilogue) {
  Product &product = products[{in, out, capacity, epilogue}];
  if (product.kernel)
    return &product;
  llvm::Expected<std::unique_ptr<GpuKernel>> kernel = compileKernel(
      gpuLinearKernelSource("linear", capacity, in, out, epilogue, format));
  if (!kernel)
    return kernel.takeError();
  std::string error;
  auto buffer = [&](int64_t width, std::shared_ptr<GpuBuffer> &into) {
    if (error.empty())
      into =
          device->allocate(uint64_t(capacity) * width * sizeof(float), error);
  };
  buffer(in, product.x);
  buffer(out, product.y);
  if (epilogue.readsOther())
    buffer(out, product.other);
  if (!error.empty())
    return llvm::createStringError(error);
  product.kernel = std::move(*kernel);
  ++counted.kernels;
  return &product;
}

llvm::Expected<GpuBuffer *> GpuLinearBackend::deviceBias(const float *bias,
                                                         int64_t out) {
  std::shared_ptr<GpuBuffer> &buffer = biases[bias];
  uint64_t bytes = uint64_t(out) * sizeof(float);
  if (buffer && buffer->bytes() == bytes)
    return buffer.get();
  std::string error;
  buffer = device->allocate(bytes, error);
  if (!buffer || !device->write(*buffer, bias, bytes, error))
    return llvm::createStringError("a bias on the GPU: " + error);
  counted.weightBytes += bytes;
  return buffer.get();
}

Status GpuLinearBackend::accumulate(const float *x, int64_t rows,
                                    const Weight &weight, float *y) {
  return apply(x, rows, weight, LinearEpilogue(), nullptr, nullptr, y);
}

llvm::Expected<GpuLinearBackend::Product *>
GpuLinearBackend::launch(const Weight &weight, int64_t rows,
                         const LinearEpilogue &epilogue, Source x,
                         const float *bias, Source other) {
  const auto &w = static_cast<const DeviceWeight &>(weight);
  llvm::Expected<Product *> found =
      productFor(w.in, w.out, rowCapacity(rows), epilogue);
  if (!found)
    return found.takeError();
  Product &product = **found;
  std::string error;
  std::vector<GpuOperand> operands;
  // Host rows go to the product's own buffer; device ones bind in place.
  auto bind = [&](Source source, int64_t width,
                  const std::shared_ptr<GpuBuffer> &own) {
    operands.emplace_back();
    if (source.device) {
      operands.back().buffer = source.device;
      return true;
    }
    uint64_t bytes = uint64_t(rows) * width * sizeof(float);
    counted.inputBytes += bytes;
    operands.back().buffer = own.get();
    return device->write(*own, source.host, bytes, error);
  };
  if (!bind(x, w.in, product.x))
    return llvm::createStringError(error);
  operands.emplace_back();
  operands.back().buffer = w.buffer.get();
  if (epilogue.bias) {
    llvm::Expected<GpuBuffer *> b = deviceBias(bias, w.out);
    if (!b)
      return b.takeError();
    operands.emplace_back();
    operands.back().buffer = *b;
  }
  if (epilogue.readsOther() && !bind(other, w.out, product.other))
    return llvm::createStringError(error);
  operands.emplace_back();
  operands.back().buffer = product.y.get();
  if (llvm::Error e = product.kernel->launchesOn("linear", operands, pending)) {
    pending.clear();
    return std::move(e);
  }
  // Only the row tiles that hold rows run (attn.tiling's first entry is a
  // workgroup's rows): a product of 520 rows at a capacity of 1024 does
  // the work of 544, not 1024.
  GpuLaunch &queued = pending.back();
  const GpuKernelDescriptor &d = queued.kernel->descriptor();
  if (d.tiling[0] > 0)
    queued.grid[1] = uint32_t(
        std::min<int64_t>(d.grid[1], (rows + d.tiling[0] - 1) / d.tiling[0]));
  ++counted.products;
  return &product;
}

Status GpuLinearBackend::submit() {
  std::string error;
  bool launched = device->launch(pending, 1, nullptr, error);
  pending.clear();
  if (!launched)
    return Status::error(error);
  ++counted.submissions;
  return Status::ok();
}

Status GpuLinearBackend::readBack(GpuBuffer &result, int64_t rows, int64_t out,
                                  float *y, const float *residual,
                                  RowRuns runs) {
  // The products launched since the last read, in one submission.
  if (Status s = submit(); s.failed())
    return s;
  std::string error;
  uint64_t rowBytes = uint64_t(out) * sizeof(float);
  if (runs.stride == rows && runs.first == 0) { // contiguous: one read
    rows *= runs.sequences;
    runs = {1, 0, 0};
  }
  for (int64_t s = 0; s < runs.sequences; ++s)
    if (!device->readAt(result, (s * runs.stride + runs.first) * rowBytes,
                        y + s * rows * out, rows * rowBytes, error))
      return Status::error(error);
  int64_t count = runs.sequences * rows * out;
  counted.outputBytes += uint64_t(count) * sizeof(float);
  if (residual)
    for (int64_t i = 0; i < count; ++i)
      y[i] += residual[i];
  return Status::ok();
}

LinearEpilogue
GpuLinearBackend::biasEpilogue(const float *bias,
                               LinearEpilogue::Activation activation) {
  LinearEpilogue e;
  e.accumulate = false;
  e.bias = bias != nullptr;
  e.activation = activation;
  return e;
}

Status GpuLinearBackend::apply(const float *x, int64_t rows,
                               const Weight &weight,
                               const LinearEpilogue &epilogue,
                               const float *bias, const float *other,
                               float *y) {
  pending.clear(); // nothing a failed call queued
  if (rows == 0)
    return Status::ok();
  // An accumulating product runs the plain kernel and adds on the host;
  // so does a residual sum, whose rows would otherwise go in to be added
  // to rows that come back anyway (the same one add, last).
  LinearEpilogue finish = epilogue;
  finish.accumulate = false;
  finish.residual = false;
  llvm::Expected<Product *> product =
      launch(weight, rows, finish, {x, nullptr}, bias, {other, nullptr});
  if (!product)
    return Status::error(llvm::toString(product.takeError()));
  int64_t out = static_cast<const DeviceWeight &>(weight).out;
  if (!epilogue.accumulate)
    return readBack(*(*product)->y, rows, out, y,
                    epilogue.residual ? other : nullptr);
  scratch.resize(size_t(rows) * out);
  if (Status s = readBack(*(*product)->y, rows, out, scratch.data());
      s.failed())
    return s;
  for (size_t i = 0; i < scratch.size(); ++i)
    y[i] += scratch[i];
  return Status::ok();
}

Status GpuLinearBackend::feedForward(const float *x, int64_t rows,
                                     const FeedForward &block,
                                     const float *residual, float *y) {
  pending.clear(); // nothing a failed call queued
  if (rows == 0)
    return Status::ok();
  using Activation = LinearEpilogue::Activation;
  auto epilogue = biasEpilogue;
  const auto &up = static_cast<const DeviceWeight &>(*block.up);
  uint64_t hiddenBytes = uint64_t(rows) * up.out * sizeof(float);
  llvm::Expected<ChainInput> input = chainInput(x, rows, up.in, block.norm);
  if (!input)
    return Status::error(llvm::toString(input.takeError()));
  llvm::Expected<Product *> projected = launch(
      *block.up, rows,
      epilogue(block.upBias, block.gate ? Activation::None : block.activation),
      input->source, block.upBias, {});
  if (!projected)
    return Status::error(llvm::toString(projected.takeError()));
  Product *hidden = *projected;
  if (block.gate) {
    // silu(gate) * up, the up product read where it is.
    llvm::Expected<Product *> gate = launch(
        *block.gate, rows, epilogue(block.gateBias, Activation::SiluTimesOther),
        input->source, block.gateBias, {nullptr, hidden->y.get()});
    if (!gate)
      return Status::error(llvm::toString(gate.takeError()));
    counted.keptBytes += hiddenBytes;
    hidden = *gate;
  }
  // The residual is added on the host, as in apply(), unless the chain
  // runs the block's norm (then on the device, from the stream).
  llvm::Expected<GpuBuffer *> output =
      chainOutput(*block.down, rows, {nullptr, hidden->y.get()}, block.downBias,
                  *input, block.norm);
  if (!output)
    return Status::error(llvm::toString(output.takeError()));
  counted.keptBytes += hiddenBytes;
  return readBack(**output, rows,
                  static_cast<const DeviceWeight *>(block.down)->out, y,
                  block.norm ? nullptr : residual);
}
