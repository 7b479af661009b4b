//===- GpuLaunch.cpp - run a function of a GPU artifact -------------------===//
//
// Binds a call's operands to a kernel's storage buffers by name and
// dispatches it (and its follow-up kernels) on the device its code is for.
// Shared by the compiler side (GpuKernel, attn-run --device) and the Python
// extension, which loads attn-compile's .spv / .json artifacts.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/Gpu.h"

#include <cstdlib>

using namespace attnrt;

namespace {

const GpuKernelDescriptor *findKernel(const GpuProgram &program,
                                      const std::string &name) {
  for (const GpuKernelDescriptor &d : program.kernels)
    if (d.name == name)
      return &d;
  return nullptr;
}

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

bool attnrt::runGpuFunction(const GpuProgram &program, VulkanDevice *vulkan,
                            CudaDevice *cuda, const std::string &function,
                            const std::vector<GpuOperand> &operands,
                            unsigned repeats, std::vector<double> *milliseconds,
                            std::vector<int32_t> *tileCounts,
                            std::string &error) {
  const GpuKernelDescriptor *kernel = findKernel(program, function);
  if (!kernel) {
    error = "no GPU kernel named '" + function + "'";
    return false;
  }
  if (program.isSpirv ? !vulkan : !cuda) {
    error = std::string("no ") + (program.isSpirv ? "Vulkan" : "CUDA") +
            " device for this artifact";
    return false;
  }
  // Follow-up kernels, in this order: a launch whose key tiles are split
  // over workgroups writes partial results that `<function>_merge` combines
  // into the output; a backward's first kernel writes dK and dV, and
  // `<function>_query_grad` dQ.
  std::vector<const GpuKernelDescriptor *> launches = {kernel};
  for (const char *suffix : {"_merge", "_query_grad"})
    if (const GpuKernelDescriptor *next =
            findKernel(program, function + suffix))
      launches.push_back(next);
  size_t numInputs = 0;
  for (const GpuBinding &b : kernel->bindings)
    numInputs += indexAfter(b.name, "arg") >= 0;
  std::vector<int32_t> counts;
  std::vector<float> partials;
  auto run = [&](const GpuKernelDescriptor &d) {
    std::vector<GpuBufferView> views;
    for (const GpuBinding &binding : d.bindings) {
      GpuBufferView view{nullptr, binding.bytes, binding.written};
      long arg = indexAfter(binding.name, "arg");
      long result = indexAfter(binding.name, "result");
      long operand = arg >= 0      ? arg
                     : result >= 0 ? long(numInputs) + result
                                   : -1;
      if (operand >= 0) {
        if (size_t(operand) >= operands.size()) {
          error = "kernel '" + d.name + "': binding '" + binding.name +
                  "' has no operand (given " + std::to_string(operands.size()) +
                  ")";
          return false;
        }
        const GpuOperand &o = operands[operand];
        if (o.bytes && o.bytes != binding.bytes) {
          error = "kernel '" + d.name + "': operand " +
                  std::to_string(operand) + " (" + binding.name + ") has " +
                  std::to_string(o.bytes) + " bytes, the kernel takes " +
                  std::to_string(binding.bytes);
          return false;
        }
        view.data = o.data;
      } else if (const std::vector<uint32_t> *words = d.constant(binding.name)) {
        view.data = const_cast<uint32_t *>(words->data());
      } else if (binding.name == "tile_counts") {
        counts.resize(binding.bytes / sizeof(int32_t));
        view.data = counts.data();
      } else if (binding.name == "partials") {
        partials.resize(binding.bytes / sizeof(float));
        view.data = partials.data();
      } else {
        error = "kernel '" + d.name + "': binding '" + binding.name +
                "' has no operand";
        return false;
      }
      views.push_back(view);
    }
    std::vector<double> ms;
    bool ran = program.isSpirv
                   ? vulkan->run(program.spirv, d, views, repeats, &ms, error)
                   : cuda->run(program.ptx, d, views, repeats, &ms, error);
    if (!ran)
      return false;
    if (milliseconds) {
      milliseconds->resize(ms.size(), 0.0);
      for (size_t r = 0; r < ms.size(); ++r)
        (*milliseconds)[r] += ms[r];
    }
    return true;
  };
  if (milliseconds)
    milliseconds->clear();
  for (const GpuKernelDescriptor *launch : launches)
    if (!run(*launch))
      return false;
  if (tileCounts)
    *tileCounts = std::move(counts);
  return true;
}
