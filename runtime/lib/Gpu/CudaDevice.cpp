//===- CudaDevice.cpp - a CUDA driver-API launcher ------------------------===//
//
// libcuda.so.1 (the driver, installed with the NVIDIA kernel module, not
// with the toolkit) is opened with dlopen, so libattn_gpu links no CUDA
// library and machines without a GPU get a clear error instead of a
// loader failure. The driver API's types are declared here with the
// widths of cuda.h (which this build does not need): handles are opaque
// pointers, device pointers 64-bit integers, results ints.
//
// Buffers are device allocations (cuMemAlloc) or callers' device pointers,
// borrowed. Kernels are functions of a module loaded once per code text.
// A launch passes one pointer parameter per buffer (NVVM's bare-pointer
// calling convention) on the legacy default stream, so it is ordered
// after every copy and launch before it, also a PyTorch's on its default
// stream; events time each repeat.
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
struct CudaModule;
} // namespace

// Driver entry points: (name, symbol, function type). The _v2 symbols are
// the ones cuda.h has mapped these names to since CUDA 4. The type comes
// last, as __VA_ARGS__, because it holds commas.
template <typename F> using Pointer = F *;
#define ATTN_CUDA_FUNCTIONS(X)                                                 \
  X(cuInit, "cuInit", CUresult(unsigned))                                      \
  X(cuDeviceGetCount, "cuDeviceGetCount", CUresult(int *))                     \
  X(cuDeviceGet, "cuDeviceGet", CUresult(CUdevice *, int))                     \
  X(cuDeviceGetName, "cuDeviceGetName", CUresult(char *, int, CUdevice))       \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",                      \
    CUresult(CUcontext *, CUdevice))                                           \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2",                 \
    CUresult(CUdevice))                                                        \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult(CUcontext))                   \
  X(cuCtxSynchronize, "cuCtxSynchronize", CUresult())                          \
  X(cuModuleLoadData, "cuModuleLoadData", CUresult(CUmodule *, const void *))  \
  X(cuModuleUnload, "cuModuleUnload", CUresult(CUmodule))                      \
  X(cuModuleGetFunction, "cuModuleGetFunction",                                \
    CUresult(CUfunction *, CUmodule, const char *))                            \
  X(cuFuncSetAttribute, "cuFuncSetAttribute", CUresult(CUfunction, int, int))  \
  X(cuMemAlloc, "cuMemAlloc_v2", CUresult(CUdeviceptr *, size_t))              \
  X(cuMemFree, "cuMemFree_v2", CUresult(CUdeviceptr))                          \
  X(cuMemsetD8, "cuMemsetD8_v2", CUresult(CUdeviceptr, unsigned char, size_t)) \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2",                                           \
    CUresult(CUdeviceptr, const void *, size_t))                               \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", CUresult(void *, CUdeviceptr, size_t))    \
  X(cuLaunchKernel, "cuLaunchKernel",                                          \
    CUresult(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,     \
             unsigned, unsigned, CUstream, void **, void **))                  \
  X(cuEventCreate, "cuEventCreate", CUresult(CUevent *, unsigned))             \
  X(cuEventDestroy, "cuEventDestroy_v2", CUresult(CUevent))                    \
  X(cuEventRecord, "cuEventRecord", CUresult(CUevent, CUstream))               \
  X(cuEventSynchronize, "cuEventSynchronize", CUresult(CUevent))               \
  X(cuEventElapsedTime, "cuEventElapsedTime",                                  \
    CUresult(float *, CUevent, CUevent))                                       \
  X(cuGetErrorString, "cuGetErrorString", CUresult(CUresult, const char **))

struct CudaDevice::State {
  void *driver = nullptr;
#define ATTN_DECLARE(name, symbol, ...) Pointer<__VA_ARGS__> name = nullptr;
  ATTN_CUDA_FUNCTIONS(ATTN_DECLARE)
#undef ATTN_DECLARE
  CUdevice device = 0;
  CUcontext context = nullptr;
  std::string name;
  /// The module of the last code loaded, while kernels use it: the kernels
  /// of one program share it.
  std::string loadedCode;
  std::weak_ptr<CudaModule> loadedModule;

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
    if (context)
      cuDevicePrimaryCtxRelease(device);
    if (driver)
      dlclose(driver);
  }
};

namespace {

/// Device memory, owned or borrowed.
struct CudaBuffer final : GpuBuffer {
  CudaBuffer(std::shared_ptr<CudaDevice::State> s, uint64_t bytes)
      : GpuBuffer(bytes), s(std::move(s)) {}
  ~CudaBuffer() override {
    if (owned && pointer)
      s->cuMemFree(pointer);
  }
  std::shared_ptr<CudaDevice::State> s;
  CUdeviceptr pointer = 0;
  bool owned = true;
};

/// A loaded module, shared by the kernels loaded from it.
struct CudaModule {
  explicit CudaModule(std::shared_ptr<CudaDevice::State> s) : s(std::move(s)) {}
  ~CudaModule() {
    if (module)
      s->cuModuleUnload(module);
  }
  std::shared_ptr<CudaDevice::State> s;
  CUmodule module = nullptr;
};

struct CudaKernel final : GpuLoadedKernel {
  CudaKernel(std::shared_ptr<CudaModule> module, const GpuKernelDescriptor &d)
      : GpuLoadedKernel(d), module(std::move(module)) {}
  std::shared_ptr<CudaModule> module;
  CUfunction function = nullptr;
};

} // namespace

CudaDevice::CudaDevice(std::shared_ptr<State> state)
    : state(std::move(state)) {}
CudaDevice::~CudaDevice() = default;

std::unique_ptr<CudaDevice> CudaDevice::open(std::string &error) {
  auto s = std::make_shared<State>();
  s->driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!s->driver) {
    const char *why = dlerror();
    error = std::string("cannot load the CUDA driver libcuda.so.1 (") +
            (why ? why : "not found") +
            "): --device=cuda needs an NVIDIA GPU and its driver; "
            "--device=vulkan runs the same attention on any Vulkan device";
    return nullptr;
  }
#define ATTN_LOAD(name, symbol, ...)                                           \
  s->name = reinterpret_cast<Pointer<__VA_ARGS__>>(dlsym(s->driver, symbol));  \
  if (!s->name) {                                                              \
    error = "the CUDA driver lacks " symbol " (too old?)";                     \
    return nullptr;                                                            \
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

std::shared_ptr<GpuBuffer> CudaDevice::allocate(uint64_t bytes,
                                                std::string &error) {
  State &s = *state;
  if (!s.check(s.cuCtxSetCurrent(s.context), "cuCtxSetCurrent", error))
    return nullptr;
  auto b = std::make_shared<CudaBuffer>(state, bytes);
  size_t size = std::max<uint64_t>(bytes, 4);
  if (!s.check(s.cuMemAlloc(&b->pointer, size),
               ("cuMemAlloc (" + std::to_string(bytes) + " bytes)").c_str(),
               error) ||
      !s.check(s.cuMemsetD8(b->pointer, 0, size), "cuMemsetD8", error))
    return nullptr;
  return b;
}

std::shared_ptr<GpuBuffer> CudaDevice::wrap(uint64_t handle, uint64_t bytes,
                                            std::string &error) {
  if (!handle) {
    error = "a null CUDA device pointer";
    return nullptr;
  }
  auto b = std::make_shared<CudaBuffer>(state, bytes);
  b->pointer = handle;
  b->owned = false;
  return b;
}

bool CudaDevice::writeChecked(GpuBuffer &buffer, uint64_t offset,
                              const void *host, uint64_t bytes,
                              std::string &error) {
  State &s = *state;
  return s.check(s.cuCtxSetCurrent(s.context), "cuCtxSetCurrent", error) &&
         s.check(
             s.cuMemcpyHtoD(static_cast<CudaBuffer &>(buffer).pointer + offset,
                            host, bytes),
             "copying to the device", error);
}

bool CudaDevice::readChecked(const GpuBuffer &buffer, uint64_t offset,
                             void *host, uint64_t bytes, std::string &error) {
  State &s = *state;
  return s.check(s.cuCtxSetCurrent(s.context), "cuCtxSetCurrent", error) &&
         s.check(s.cuMemcpyDtoH(
                     host,
                     static_cast<const CudaBuffer &>(buffer).pointer + offset,
                     bytes),
                 "copying from the device", error);
}

std::unique_ptr<GpuLoadedKernel>
CudaDevice::load(const GpuProgram &program,
                 const GpuKernelDescriptor &descriptor, std::string &error) {
  State &s = *state;
  if (!s.check(s.cuCtxSetCurrent(s.context), "cuCtxSetCurrent", error))
    return nullptr;
  std::shared_ptr<CudaModule> module = s.loadedModule.lock();
  if (!module || s.loadedCode != program.ptx) {
    module = std::make_shared<CudaModule>(state);
    // PTX text is JIT-compiled by the driver for this device.
    if (!s.check(s.cuModuleLoadData(&module->module, program.ptx.c_str()),
                 "loading the kernels (cuModuleLoadData)", error))
      return nullptr;
    s.loadedCode = program.ptx;
    s.loadedModule = module;
  }
  auto k = std::make_unique<CudaKernel>(module, descriptor);
  if (!s.check(s.cuModuleGetFunction(&k->function, module->module,
                                     descriptor.name.c_str()),
               ("finding kernel '" + descriptor.name + "'").c_str(), error))
    return nullptr;
  // Dynamic shared memory past 48 KiB is opt-in per function
  // (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8).
  if (descriptor.sharedBytes > (48u << 10) &&
      !s.check(
          s.cuFuncSetAttribute(k->function, 8, int(descriptor.sharedBytes)),
          ("giving '" + descriptor.name + "' " +
           std::to_string(descriptor.sharedBytes) + " bytes of shared memory")
              .c_str(),
          error))
    return nullptr;
  return k;
}

bool CudaDevice::launchChecked(const std::vector<GpuLaunch> &launches,
                               unsigned repeats,
                               std::vector<double> *milliseconds,
                               std::string &error) {
  State &s = *state;
  if (!s.check(s.cuCtxSetCurrent(s.context), "cuCtxSetCurrent", error))
    return false;
  // Each launch's parameters: a pointer to each buffer's device address.
  std::vector<std::vector<CUdeviceptr>> pointers(launches.size());
  std::vector<std::vector<void *>> parameters(launches.size());
  for (size_t l = 0; l < launches.size(); ++l) {
    for (GpuBuffer *b : launches[l].buffers)
      pointers[l].push_back(static_cast<CudaBuffer *>(b)->pointer);
    for (CUdeviceptr &p : pointers[l])
      parameters[l].push_back(&p);
  }

  CUevent start = nullptr, stop = nullptr;
  bool ok = s.check(s.cuEventCreate(&start, 0), "cuEventCreate", error) &&
            s.check(s.cuEventCreate(&stop, 0), "cuEventCreate", error);
  if (milliseconds)
    milliseconds->clear();
  for (unsigned r = 0; ok && r < std::max(repeats, 1u); ++r) {
    ok = s.check(s.cuEventRecord(start, nullptr), "cuEventRecord", error);
    for (size_t l = 0; ok && l < launches.size(); ++l) {
      const GpuKernelDescriptor &d = launches[l].kernel->descriptor();
      ok = s.check(
          s.cuLaunchKernel(
              static_cast<const CudaKernel *>(launches[l].kernel)->function,
              launches[l].gridSize(0), launches[l].gridSize(1),
              launches[l].gridSize(2), d.workgroup[0], d.workgroup[1],
              d.workgroup[2], d.sharedBytes, nullptr, parameters[l].data(),
              nullptr),
          ("launching '" + d.name + "'").c_str(), error);
    }
    float elapsed = 0;
    ok = ok &&
         s.check(s.cuEventRecord(stop, nullptr), "cuEventRecord", error) &&
         s.check(s.cuEventSynchronize(stop), "running the kernels", error) &&
         s.check(s.cuEventElapsedTime(&elapsed, start, stop),
                 "cuEventElapsedTime", error);
    if (ok && milliseconds)
      milliseconds->push_back(elapsed);
  }
  if (start)
    s.cuEventDestroy(start);
  if (stop)
    s.cuEventDestroy(stop);
  return ok;
}
