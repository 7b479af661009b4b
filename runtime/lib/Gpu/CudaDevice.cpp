//===- CudaDevice.cpp - a CUDA driver-API launcher ------------------------===//
//
// libcuda.so.1 (the driver, installed with the NVIDIA kernel module, not
// with the toolkit) is opened with dlopen, so libattn_gpu links no CUDA
// library and machines without a GPU get a clear error instead of a
// loader failure. The driver API's types are declared here with the
// widths of cuda.h (which this build does not need): handles are opaque
// pointers, device pointers 64-bit integers, results ints.
//
// One run: device buffers per binding, copies in of what the kernel reads,
// `repeats` launches of the kernel (one pointer parameter per buffer:
// NVVM's bare-pointer calling convention) timed by events, copies out of
// what it writes.
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/Gpu.h"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>

using namespace attnrt;

namespace {
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUevent = struct CUevent_st *;
using CUstream = struct CUstream_st *;
} // namespace

// Driver entry points: (name, symbol, function type). The _v2 symbols are
// the ones cuda.h has mapped these names to since CUDA 4. The type comes
// last, as __VA_ARGS__, because it holds commas.
template <typename F> using Pointer = F *;
#define ATTN_CUDA_FUNCTIONS(X)                                                \
  X(cuInit, "cuInit", CUresult(unsigned))                                 \
  X(cuDeviceGetCount, "cuDeviceGetCount", CUresult(int *))                \
  X(cuDeviceGet, "cuDeviceGet", CUresult(CUdevice *, int))                \
  X(cuDeviceGetName, "cuDeviceGetName", CUresult(char *, int, CUdevice))  \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",                     \
    CUresult(CUcontext *, CUdevice))                                      \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2",                \
    CUresult(CUdevice))                                                   \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult(CUcontext))              \
  X(cuCtxSynchronize, "cuCtxSynchronize", CUresult())                     \
  X(cuModuleLoadData, "cuModuleLoadData",                                     \
    CUresult(CUmodule *, const void *))                                   \
  X(cuModuleUnload, "cuModuleUnload", CUresult(CUmodule))                 \
  X(cuModuleGetFunction, "cuModuleGetFunction",                               \
    CUresult(CUfunction *, CUmodule, const char *))                       \
  X(cuMemAlloc, "cuMemAlloc_v2", CUresult(CUdeviceptr *, size_t))         \
  X(cuMemFree, "cuMemFree_v2", CUresult(CUdeviceptr))                     \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2",                                          \
    CUresult(CUdeviceptr, const void *, size_t))                          \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2",                                          \
    CUresult(void *, CUdeviceptr, size_t))                                \
  X(cuLaunchKernel, "cuLaunchKernel",                                         \
    CUresult(CUfunction, unsigned, unsigned, unsigned, unsigned,          \
                 unsigned, unsigned, unsigned, CUstream, void **, void **))   \
  X(cuEventCreate, "cuEventCreate", CUresult(CUevent *, unsigned))        \
  X(cuEventDestroy, "cuEventDestroy_v2", CUresult(CUevent))               \
  X(cuEventRecord, "cuEventRecord", CUresult(CUevent, CUstream))          \
  X(cuEventSynchronize, "cuEventSynchronize", CUresult(CUevent))          \
  X(cuEventElapsedTime, "cuEventElapsedTime",                                 \
    CUresult(float *, CUevent, CUevent))                                  \
  X(cuGetErrorString, "cuGetErrorString",                                     \
    CUresult(CUresult, const char **))

struct CudaDevice::State {
  void *driver = nullptr;
#define ATTN_DECLARE(name, symbol, ...) Pointer<__VA_ARGS__> name = nullptr;
  ATTN_CUDA_FUNCTIONS(ATTN_DECLARE)
#undef ATTN_DECLARE
  CUdevice device = 0;
  CUcontext context = nullptr;
  std::string name;
  // The module of the last code run, kept for repeated calls.
  std::string loadedCode;
  CUmodule module = nullptr;

  /// False with `error` = "what: the driver's message" when `result` != 0.
  bool check(CUresult result, const char *what, std::string &error) const {
    if (result == 0)
      return true;
    const char *message = nullptr;
    if (cuGetErrorString)
      cuGetErrorString(result, &message);
    error = std::string(what) + " failed: " +
            (message ? message : "CUDA error " + std::to_string(result));
    return false;
  }

  ~State() {
    if (module)
      cuModuleUnload(module);
    if (context)
      cuDevicePrimaryCtxRelease(device);
    if (driver)
      dlclose(driver);
  }
};

CudaDevice::CudaDevice(std::unique_ptr<State> state)
    : state(std::move(state)) {}
CudaDevice::~CudaDevice() = default;

std::unique_ptr<CudaDevice> CudaDevice::open(std::string &error) {
  auto s = std::make_unique<State>();
  s->driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!s->driver) {
    const char *why = dlerror();
    error = std::string("cannot load the CUDA driver libcuda.so.1 (") +
            (why ? why : "not found") +
            "): --device=cuda needs an NVIDIA GPU and its driver; "
            "--device=vulkan runs the same attention on any Vulkan device";
    return nullptr;
  }
#define ATTN_LOAD(name, symbol, ...)                                          \
  s->name = reinterpret_cast<Pointer<__VA_ARGS__>>(dlsym(s->driver, symbol)); \
  if (!s->name) {                                                             \
    error = "the CUDA driver lacks " symbol " (too old?)";                    \
    return nullptr;                                                           \
  }
  ATTN_CUDA_FUNCTIONS(ATTN_LOAD)
#undef ATTN_LOAD
  if (!s->check(s->cuInit(0), "cuInit", error))
    return nullptr;
  int count = 0;
  if (!s->check(s->cuDeviceGetCount(&count), "cuDeviceGetCount", error))
    return nullptr;
  int index = 0;
  if (const char *chosen = std::getenv("ATTN_CUDA_DEVICE"))
    index = std::atoi(chosen);
  if (index < 0 || index >= count) {
    error = "no CUDA device " + std::to_string(index) + " (the driver sees " +
            std::to_string(count) + ")";
    return nullptr;
  }
  if (!s->check(s->cuDeviceGet(&s->device, index), "cuDeviceGet", error) ||
      !s->check(s->cuDevicePrimaryCtxRetain(&s->context, s->device),
                "cuDevicePrimaryCtxRetain", error) ||
      !s->check(s->cuCtxSetCurrent(s->context), "cuCtxSetCurrent", error))
    return nullptr;
  char name[256] = {};
  s->cuDeviceGetName(name, sizeof(name) - 1, s->device);
  s->name = name;
  return std::unique_ptr<CudaDevice>(new CudaDevice(std::move(s)));
}

std::string CudaDevice::describe() const { return state->name + ", cuda"; }

bool CudaDevice::run(const std::string &code,
                     const GpuKernelDescriptor &descriptor,
                     const std::vector<GpuBufferView> &buffers,
                     unsigned repeats, std::vector<double> *milliseconds,
                     std::string &error) {
  State &s = *state;
  if (!s.check(s.cuCtxSetCurrent(s.context), "cuCtxSetCurrent", error))
    return false;
  if (s.loadedCode != code) {
    if (s.module)
      s.cuModuleUnload(s.module);
    s.module = nullptr;
    s.loadedCode.clear();
    // PTX text is JIT-compiled by the driver for this device.
    if (!s.check(s.cuModuleLoadData(&s.module, code.c_str()),
                 "loading the kernels (cuModuleLoadData)", error))
      return false;
    s.loadedCode = code;
  }
  CUfunction function = nullptr;
  if (!s.check(s.cuModuleGetFunction(&function, s.module,
                                     descriptor.name.c_str()),
               ("finding kernel '" + descriptor.name + "'").c_str(), error))
    return false;
  if (buffers.size() != descriptor.bindings.size()) {
    error = "kernel '" + descriptor.name + "' has " +
            std::to_string(descriptor.bindings.size()) + " bindings, given " +
            std::to_string(buffers.size());
    return false;
  }

  std::vector<CUdeviceptr> pointers(buffers.size(), 0);
  auto release = [&] {
    for (CUdeviceptr p : pointers)
      if (p)
        s.cuMemFree(p);
  };
  for (size_t i = 0; i < buffers.size(); ++i) {
    size_t bytes = std::max<uint64_t>(buffers[i].bytes, 4);
    if (!s.check(s.cuMemAlloc(&pointers[i], bytes), "cuMemAlloc", error) ||
        (!buffers[i].written && buffers[i].bytes &&
         !s.check(s.cuMemcpyHtoD(pointers[i], buffers[i].data,
                                 buffers[i].bytes),
                  "copying to the device", error))) {
      release();
      return false;
    }
  }
  std::vector<void *> parameters;
  for (CUdeviceptr &p : pointers)
    parameters.push_back(&p);

  CUevent start = nullptr, stop = nullptr;
  bool ok = s.check(s.cuEventCreate(&start, 0), "cuEventCreate", error) &&
            s.check(s.cuEventCreate(&stop, 0), "cuEventCreate", error);
  if (milliseconds)
    milliseconds->clear();
  for (unsigned r = 0; ok && r < std::max(repeats, 1u); ++r) {
    float elapsed = 0;
    ok = s.check(s.cuEventRecord(start, nullptr), "cuEventRecord", error) &&
         s.check(s.cuLaunchKernel(function, descriptor.grid[0],
                                  descriptor.grid[1], descriptor.grid[2],
                                  descriptor.workgroup[0],
                                  descriptor.workgroup[1],
                                  descriptor.workgroup[2], 0, nullptr,
                                  parameters.data(), nullptr),
                  ("launching '" + descriptor.name + "'").c_str(), error) &&
         s.check(s.cuEventRecord(stop, nullptr), "cuEventRecord", error) &&
         s.check(s.cuEventSynchronize(stop), "running the kernel", error) &&
         s.check(s.cuEventElapsedTime(&elapsed, start, stop),
                 "cuEventElapsedTime", error);
    if (ok && milliseconds)
      milliseconds->push_back(elapsed);
  }
  for (size_t i = 0; ok && i < buffers.size(); ++i)
    if (buffers[i].written && buffers[i].bytes)
      ok = s.check(s.cuMemcpyDtoH(buffers[i].data, pointers[i],
                                  buffers[i].bytes),
                   "copying from the device", error);
  if (start)
    s.cuEventDestroy(start);
  if (stop)
    s.cuEventDestroy(stop);
  release();
  return ok;
}
