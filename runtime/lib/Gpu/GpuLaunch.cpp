//===- GpuLaunch.cpp - run a function of a GPU artifact -------------------===//
//
// Binds a call's operands to a kernel's storage buffers by name and
// launches it (and its follow-up kernels) on a GpuDevice. Everything a call
// does not bring — the loaded kernels, constant tables, scratch buffers —
// is made once, in GpuFunction::prepare. Shared by the compiler side
// (GpuKernel, attn-run --device), the Python extension and the C API,
// which load attn-compile's .spv / .ptx and .json artifacts.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/Gpu.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

using namespace attnrt;

GpuBuffer::~GpuBuffer() = default;
GpuLoadedKernel::~GpuLoadedKernel() = default;
GpuDevice::~GpuDevice() = default;

bool GpuDevice::writeAt(GpuBuffer &buffer, uint64_t offset, const void *host,
                        uint64_t bytes, std::string &error) {
  if (offset > buffer.bytes() || bytes > buffer.bytes() - offset) {
    error = "writing " + std::to_string(bytes) + " bytes" +
            (offset ? " at offset " + std::to_string(offset) : "") +
            " into a buffer of " + std::to_string(buffer.bytes());
    return false;
  }
  return !bytes || writeChecked(buffer, offset, host, bytes, error);
}

bool GpuDevice::readAt(const GpuBuffer &buffer, uint64_t offset, void *host,
                       uint64_t bytes, std::string &error) {
  if (offset > buffer.bytes() || bytes > buffer.bytes() - offset) {
    error = "reading " + std::to_string(bytes) + " bytes" +
            (offset ? " at offset " + std::to_string(offset) : "") +
            " from a buffer of " + std::to_string(buffer.bytes());
    return false;
  }
  return !bytes || readChecked(buffer, offset, host, bytes, error);
}

bool GpuDevice::launch(const std::vector<GpuLaunch> &launches, unsigned repeats,
                       std::vector<double> *milliseconds, std::string &error) {
  for (const GpuLaunch &l : launches)
    if (!l.kernel ||
        l.buffers.size() != l.kernel->descriptor().bindings.size()) {
      error = l.kernel
                  ? "kernel '" + l.kernel->descriptor().name + "' has " +
                        std::to_string(l.kernel->descriptor().bindings.size()) +
                        " bindings, given " + std::to_string(l.buffers.size()) +
                        " buffers"
                  : "a launch without a kernel";
      return false;
    }
  for (const GpuLaunch &l : launches)
    for (int d = 0; d < 3; ++d)
      if (l.grid[d] > l.kernel->descriptor().grid[d]) {
        error = "kernel '" + l.kernel->descriptor().name + "' launched with " +
                std::to_string(l.grid[d]) + " workgroups in dimension " +
                std::to_string(d) + ", more than its " +
                std::to_string(l.kernel->descriptor().grid[d]);
        return false;
      }
  return launchChecked(launches, repeats, milliseconds, error);
}

std::unique_ptr<GpuDevice> attnrt::openGpuDevice(bool spirv,
                                                 std::string &error) {
  if (spirv)
    return VulkanDevice::open(error);
  return CudaDevice::open(error);
}

std::shared_ptr<GpuDevice> attnrt::sharedGpuDevice(bool spirv,
                                                   std::string &error) {
  static std::mutex mutex;
  static std::weak_ptr<GpuDevice> devices[2];
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<GpuDevice> device = devices[spirv].lock();
  if (!device) {
    device = openGpuDevice(spirv, error);
    devices[spirv] = device;
  }
  return device;
}

namespace {

const GpuKernelDescriptor *findKernel(const GpuProgram &program,
                                      const std::string &name) {
  for (const GpuKernelDescriptor &d : program.kernels)
    if (d.name == name)
      return &d;
  return nullptr;
}

/// Operands a function may bind (inputs and results).
constexpr long kMaxOperands = 64;

/// N for a binding named `prefix`N; -1 otherwise.
long indexAfter(const std::string &name, const char *prefix) {
  std::string p(prefix);
  if (name.compare(0, p.size(), p) != 0 || name.size() == p.size())
    return -1;
  char *end = nullptr;
  long index = std::strtol(name.c_str() + p.size(), &end, 10);
  return *end == '\0' && index >= 0 ? index : -1;
}

} // namespace

/// One kernel of the function and where each of its bindings comes from:
/// an operand (its index), or a buffer held by the function.
struct GpuFunction::Step {
  std::unique_ptr<GpuLoadedKernel> kernel;
  std::vector<long> operand;                    ///< -1: held
  std::vector<std::shared_ptr<GpuBuffer>> held; ///< null: an operand
};

GpuFunction::GpuFunction(GpuDevice &device) : device(device) {}
GpuFunction::~GpuFunction() = default;

std::unique_ptr<GpuFunction> GpuFunction::prepare(const GpuProgram &program,
                                                  GpuDevice &device,
                                                  const std::string &function,
                                                  std::string &error) {
  const GpuKernelDescriptor *kernel = findKernel(program, function);
  if (!kernel) {
    error = "no GPU kernel named '" + function + "'";
    return nullptr;
  }
  if (program.isSpirv != device.runsSpirv()) {
    error = std::string("the kernels are ") +
            (program.isSpirv ? "SPIR-V (Vulkan)" : "PTX (CUDA)") +
            ", the device is '" + device.describe() + "'";
    return nullptr;
  }
  std::unique_ptr<GpuFunction> f(new GpuFunction(device));
  // Follow-up kernels, in this order: a launch whose key tiles are split
  // over workgroups writes partial results that `<function>_merge` combines
  // into the output; a backward's first kernel writes dK and dV, and
  // `<function>_query_grad` dQ.
  std::vector<const GpuKernelDescriptor *> kernels = {kernel};
  for (const char *suffix : {"_merge", "_query_grad"})
    if (const GpuKernelDescriptor *next =
            findKernel(program, function + suffix))
      kernels.push_back(next);
  for (const GpuBinding &b : kernel->bindings)
    f->inputs += indexAfter(b.name, "arg") >= 0;

  // Scratch shared by the kernels of a call, by binding name.
  std::vector<std::pair<std::string, std::shared_ptr<GpuBuffer>>> scratch;
  for (const GpuKernelDescriptor *d : kernels) {
    Step step;
    step.kernel = device.load(program, *d, error);
    if (!step.kernel)
      return nullptr;
    for (const GpuBinding &binding : d->bindings) {
      long arg = indexAfter(binding.name, "arg");
      long result = indexAfter(binding.name, "result");
      long operand = arg >= 0      ? arg
                     : result >= 0 ? long(f->inputs) + result
                                   : -1;
      step.operand.push_back(operand);
      step.held.emplace_back();
      if (operand >= 0) {
        // Attention functions take a handful of operands: a larger index
        // is a damaged descriptor, not a reason to allocate.
        if (operand >= kMaxOperands) {
          error = "kernel '" + d->name + "': binding '" + binding.name +
                  "' names operand " + std::to_string(operand) + " (at most " +
                  std::to_string(kMaxOperands) + ")";
          return nullptr;
        }
        if (size_t(operand) >= f->bytes.size())
          f->bytes.resize(operand + 1, 0);
        // Kernels of one call bind an operand with the same size; should
        // they not, the operand must hold the largest.
        f->bytes[operand] = std::max(f->bytes[operand], binding.bytes);
        continue;
      }
      std::shared_ptr<GpuBuffer> &held = step.held.back();
      if (const std::vector<uint32_t> *words = d->constant(binding.name)) {
        held = device.allocate(binding.bytes, error);
        if (!held ||
            !device.write(*held, words->data(),
                          std::min<uint64_t>(binding.bytes,
                                             words->size() * sizeof(uint32_t)),
                          error))
          return nullptr;
      } else if (binding.name == "tile_counts" || binding.name == "partials") {
        for (auto &[name, buffer] : scratch)
          if (name == binding.name)
            held = buffer;
        if (!held) {
          held = device.allocate(binding.bytes, error);
          if (!held)
            return nullptr;
          scratch.emplace_back(binding.name, held);
        }
        if (binding.name == "tile_counts")
          f->tileCountBuffer = held;
      } else {
        error = "kernel '" + d->name + "': binding '" + binding.name +
                "' has no operand";
        return nullptr;
      }
    }
    f->steps.push_back(std::move(step));
  }
  // A kernel that writes an argument in place (an insertion) returns it:
  // its result is that argument's buffer.
  for (const GpuBinding &b : kernel->bindings)
    if (long arg = indexAfter(b.name, "arg"); arg >= 0 && b.written)
      f->updated = arg;
  if (f->updated >= 0 && f->bytes.size() == f->inputs)
    f->bytes.push_back(f->bytes[f->updated]);
  f->staged.resize(f->bytes.size());
  return f;
}

bool GpuFunction::bind(const std::vector<GpuOperand> &operands,
                       std::vector<GpuBuffer *> &buffers, std::string &error) {
  if (operands.size() < bytes.size()) {
    error = "the kernels take " + std::to_string(bytes.size()) +
            " operands, given " + std::to_string(operands.size());
    return false;
  }
  // Each operand's device buffer: its own, or a staged copy of host memory.
  buffers.assign(bytes.size(), nullptr);
  for (size_t i = 0; i < bytes.size(); ++i) {
    const GpuOperand &o = operands[i];
    // Named only for an error: calls are the hot path.
    auto what = [&] {
      return "operand " + std::to_string(i) +
             (i < inputs ? " (arg" + std::to_string(i)
                         : " (result" + std::to_string(i - inputs)) +
             ")";
    };
    if (updated >= 0 && i == inputs) {
      // The argument updated in place: a device result must be its buffer.
      if (o.buffer && o.buffer != buffers[updated]) {
        error = what() + " is the argument the kernel updates in place (arg" +
                std::to_string(updated) + "): pass its buffer";
        return false;
      }
      buffers[i] = buffers[updated];
      continue;
    }
    if (o.buffer) {
      if (o.buffer->bytes() < bytes[i]) {
        error = what() + " is a device buffer of " +
                std::to_string(o.buffer->bytes()) +
                " bytes, the kernel takes " + std::to_string(bytes[i]);
        return false;
      }
      buffers[i] = o.buffer;
      continue;
    }
    if (!o.data && bytes[i]) {
      error = what() + " has no data";
      return false;
    }
    if (o.bytes && o.bytes != bytes[i]) {
      error = what() + " has " + std::to_string(o.bytes) +
              " bytes, the kernel takes " + std::to_string(bytes[i]);
      return false;
    }
    if (!staged[i] && !(staged[i] = device.allocate(bytes[i], error)))
      return false;
    if (i < inputs && !device.write(*staged[i], o.data, bytes[i], error))
      return false;
    buffers[i] = staged[i].get();
  }
  return true;
}

void GpuFunction::appendLaunches(const std::vector<GpuBuffer *> &buffers,
                                 std::vector<GpuLaunch> &launches) const {
  for (const Step &step : steps) {
    GpuLaunch launch{step.kernel.get(), {}};
    for (size_t b = 0; b < step.operand.size(); ++b)
      launch.buffers.push_back(step.operand[b] >= 0 ? buffers[step.operand[b]]
                                                    : step.held[b].get());
    launches.push_back(std::move(launch));
  }
}

bool GpuFunction::launchesOn(const std::vector<GpuOperand> &operands,
                             std::vector<GpuLaunch> &launches,
                             std::string &error) {
  for (size_t i = 0; i < bytes.size() && i < operands.size(); ++i)
    if (!operands[i].buffer) {
      error = "operand " + std::to_string(i) +
              " is host memory: a chained launch takes device buffers";
      return false;
    }
  std::vector<GpuBuffer *> buffers;
  if (!bind(operands, buffers, error))
    return false;
  appendLaunches(buffers, launches);
  return true;
}

bool GpuFunction::call(const std::vector<GpuOperand> &operands,
                       unsigned repeats, std::vector<double> *milliseconds,
                       std::vector<int32_t> *tileCounts, std::string &error) {
  std::vector<GpuBuffer *> buffers;
  if (!bind(operands, buffers, error))
    return false;
  std::vector<GpuLaunch> launches;
  appendLaunches(buffers, launches);
  if (!device.launch(launches, repeats, milliseconds, error))
    return false;

  for (size_t i = inputs; i < bytes.size(); ++i)
    if (!operands[i].buffer &&
        !device.read(*buffers[i], operands[i].data, bytes[i], error))
      return false;
  if (tileCounts) {
    tileCounts->clear();
    if (tileCountBuffer) {
      tileCounts->resize(tileCountBuffer->bytes() / sizeof(int32_t));
      if (!device.read(*tileCountBuffer, tileCounts->data(),
                       tileCounts->size() * sizeof(int32_t), error))
        return false;
    }
  }
  return true;
}

bool attnrt::runGpuFunction(const GpuProgram &program, GpuDevice &device,
                            const std::string &function,
                            const std::vector<GpuOperand> &operands,
                            unsigned repeats, std::vector<double> *milliseconds,
                            std::vector<int32_t> *tileCounts,
                            std::string &error) {
  std::unique_ptr<GpuFunction> prepared =
      GpuFunction::prepare(program, device, function, error);
  return prepared &&
         prepared->call(operands, repeats, milliseconds, tileCounts, error);
}
