//===- Gpu.h - GPU descriptors, devices, prepared calls ---------*- C++ -*-===//
//
// What the runtime needs to launch a GPU kernel attn compiled
// (docs/Gpu.md): the kernel descriptor attn-compile writes next to the
// .spv / .ptx (grid, workgroup size, buffer bindings, the tile schedule's
// contents), one device interface with buffers that stay on the device
// (a Vulkan and a CUDA driver-API implementation), and functions prepared
// once and called on device buffers or host memory. No
// LLVM or MLIR inside: the Vulkan loader (libvulkan.so.1) and the CUDA
// driver (libcuda.so.1) are opened with dlopen when a device is first
// asked for, so programs that never use a GPU do not need them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_GPU_H
#define ATTN_RUNTIME_GPU_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace attnrt {

/// One storage buffer of a kernel, at the binding of its position.
struct GpuBinding {
  /// argN (the Nth argument of the source function), resultN,
  /// tile_counts, or the name of one of the kernel's constants.
  std::string name;
  bool written = false;
  uint64_t bytes = 0;
};

/// How to launch one kernel.
struct GpuKernelDescriptor {
  std::string name;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> workgroup{1, 1, 1};
  /// Query tile rows, query period and key tile rows of the kernel's
  /// schedule, for tile statistics.
  std::array<int64_t, 3> tiling{0, 0, 0};
  /// Workgroup memory the launch asks for dynamically, in bytes (CUDA
  /// kernels past the static 48 KiB; 0: none).
  uint32_t sharedBytes = 0;
  std::vector<GpuBinding> bindings;
  /// The contents of constant bindings (the tile schedule, tables of
  /// patterns) as 32-bit words, by binding name.
  std::vector<std::pair<std::string, std::vector<uint32_t>>> constants;
  const std::vector<uint32_t> *constant(const std::string &name) const {
    for (const auto &[key, words] : constants)
      if (key == name)
        return &words;
    return nullptr;
  }
};

/// The descriptors as JSON text (one object with a "kernels" array), and
/// back; parse errors say what is wrong in `error`.
std::string writeGpuDescriptors(const std::vector<GpuKernelDescriptor> &ds);
bool parseGpuDescriptors(const std::string &text,
                         std::vector<GpuKernelDescriptor> &ds,
                         std::string &error);

/// The compiled code of a GPU artifact and how to launch its kernels.
struct GpuProgram {
  bool isSpirv = true;
  std::vector<uint32_t> spirv; ///< Vulkan
  std::string ptx;             ///< CUDA (PTX text or a cubin)
  std::vector<GpuKernelDescriptor> kernels;
};

/// Memory on a GPU device: a Vulkan buffer, or CUDA device memory (or a
/// caller's device pointer, borrowed). Made by GpuDevice::allocate / wrap;
/// the last owner frees it (never borrowed memory). A buffer keeps its
/// device's state alive, so buffers may outlive the GpuDevice object.
class GpuBuffer {
public:
  virtual ~GpuBuffer();
  uint64_t bytes() const { return size; }

protected:
  explicit GpuBuffer(uint64_t bytes) : size(bytes) {}

private:
  uint64_t size;
};

/// A kernel of a program made ready to launch on one device (Vulkan: its
/// shader module and pipeline; CUDA: its function in a loaded module).
class GpuLoadedKernel {
public:
  virtual ~GpuLoadedKernel();
  const GpuKernelDescriptor &descriptor() const { return kernel; }

protected:
  explicit GpuLoadedKernel(const GpuKernelDescriptor &kernel)
      : kernel(kernel) {}

private:
  GpuKernelDescriptor kernel;
};

/// One launch: a loaded kernel and the buffer at each of its bindings.
struct GpuLaunch {
  const GpuLoadedKernel *kernel = nullptr;
  std::vector<GpuBuffer *> buffers;
  /// Workgroups per dimension: 0 for the descriptor's grid; fewer (never
  /// more) run the first ones alone, e.g. a product's row tiles that hold
  /// rows (GpuLinear.h).
  uint32_t grid[3] = {0, 0, 0};
  uint32_t gridSize(int dimension) const {
    return grid[dimension] ? grid[dimension]
                           : kernel->descriptor().grid[dimension];
  }
};

/// A GPU with one queue (Vulkan) or stream (CUDA): buffers that stay on
/// it between calls, kernels loaded once, and launches in order on
/// buffers without host copies.
class GpuDevice {
public:
  virtual ~GpuDevice();
  /// The device's name and kind (e.g. "llvmpipe (LLVM 15.0.6, 256 bits),
  /// cpu"; "NVIDIA H100 80GB HBM3, cuda").
  virtual std::string describe() const = 0;
  /// Whether the device runs SPIR-V (Vulkan) or PTX / cubins (CUDA).
  virtual bool runsSpirv() const = 0;

  /// `bytes` of zero-filled device memory; null with `error` set on
  /// failure.
  virtual std::shared_ptr<GpuBuffer> allocate(uint64_t bytes,
                                              std::string &error) = 0;
  /// A caller's device memory, borrowed (CUDA: a CUdeviceptr, e.g. a
  /// PyTorch tensor's data_ptr()). Vulkan refuses: a buffer of another
  /// VkDevice cannot be bound to this one.
  virtual std::shared_ptr<GpuBuffer> wrap(uint64_t handle, uint64_t bytes,
                                          std::string &error) = 0;
  /// Copies `bytes` (at most the buffer's) between the host and `buffer`,
  /// after the launches before have ended. A write may wait for the next
  /// launch or read, which runs it first (staged Vulkan buffers): `host`
  /// is copied before write returns.
  bool write(GpuBuffer &buffer, const void *host, uint64_t bytes,
             std::string &error) {
    return writeAt(buffer, 0, host, bytes, error);
  }
  /// The same into bytes [offset, offset + bytes) of `buffer` (e.g. rows
  /// appended to a KV cache that stays on the device).
  bool writeAt(GpuBuffer &buffer, uint64_t offset, const void *host,
               uint64_t bytes, std::string &error);
  bool read(const GpuBuffer &buffer, void *host, uint64_t bytes,
            std::string &error) {
    return readAt(buffer, 0, host, bytes, error);
  }
  /// The bytes [offset, offset + bytes) of `buffer` (e.g. the rows of a
  /// product that hold a sequence, at the end of its capacity).
  bool readAt(const GpuBuffer &buffer, uint64_t offset, void *host,
              uint64_t bytes, std::string &error);

  /// `kernel` of `program` (whose code must be for this device), ready to
  /// launch.
  virtual std::unique_ptr<GpuLoadedKernel>
  load(const GpuProgram &program, const GpuKernelDescriptor &kernel,
       std::string &error) = 0;
  /// Runs `launches` in order, all of them `repeats` times (at least once),
  /// each after the writes of the one before, and returns when the last
  /// has ended. `milliseconds`, when given, receives per repeat the time
  /// of its launches (timestamps or events; the host clock where the
  /// device has neither). Each launch must give a buffer per binding.
  bool launch(const std::vector<GpuLaunch> &launches, unsigned repeats,
              std::vector<double> *milliseconds, std::string &error);

protected:
  /// write / read / launch once their arguments are checked.
  virtual bool writeChecked(GpuBuffer &buffer, uint64_t offset,
                            const void *host, uint64_t bytes,
                            std::string &error) = 0;
  virtual bool readChecked(const GpuBuffer &buffer, uint64_t offset, void *host,
                           uint64_t bytes, std::string &error) = 0;
  virtual bool launchChecked(const std::vector<GpuLaunch> &launches,
                             unsigned repeats,
                             std::vector<double> *milliseconds,
                             std::string &error) = 0;
};

/// A Vulkan compute device with one queue. Buffers live in memory the host
/// can map (device-local where the device offers it mappable: integrated
/// GPUs, resizable BAR, lavapipe).
class VulkanDevice final : public GpuDevice {
public:
  /// Opens the loader and a device: $ATTN_VULKAN_DEVICE (an index into
  /// the physical devices) or the first GPU, else the first device (e.g.
  /// lavapipe). Null with `error` set when none can be opened.
  static std::unique_ptr<VulkanDevice> open(std::string &error);
  ~VulkanDevice() override;

  std::string describe() const override;
  bool runsSpirv() const override { return true; }
  std::shared_ptr<GpuBuffer> allocate(uint64_t bytes,
                                      std::string &error) override;
  std::shared_ptr<GpuBuffer> wrap(uint64_t handle, uint64_t bytes,
                                  std::string &error) override;
  std::unique_ptr<GpuLoadedKernel> load(const GpuProgram &program,
                                        const GpuKernelDescriptor &kernel,
                                        std::string &error) override;

  struct State;

protected:
  bool writeChecked(GpuBuffer &buffer, uint64_t offset, const void *host,
                    uint64_t bytes, std::string &error) override;
  bool readChecked(const GpuBuffer &buffer, uint64_t offset, void *host,
                   uint64_t bytes, std::string &error) override;
  bool launchChecked(const std::vector<GpuLaunch> &launches, unsigned repeats,
                     std::vector<double> *milliseconds,
                     std::string &error) override;

private:
  explicit VulkanDevice(std::shared_ptr<State> state);
  std::shared_ptr<State> state;
};

/// A CUDA device through the driver API (libcuda.so.1, opened with dlopen
/// when a device is first asked for), launching on one stream.
class CudaDevice final : public GpuDevice {
public:
  /// Opens the driver and device $ATTN_CUDA_DEVICE (default 0) with its
  /// primary context. Null with `error` set (e.g. no driver on this
  /// machine) when none can be opened.
  static std::unique_ptr<CudaDevice> open(std::string &error);
  ~CudaDevice() override;

  std::string describe() const override;
  bool runsSpirv() const override { return false; }
  std::shared_ptr<GpuBuffer> allocate(uint64_t bytes,
                                      std::string &error) override;
  std::shared_ptr<GpuBuffer> wrap(uint64_t handle, uint64_t bytes,
                                  std::string &error) override;
  std::unique_ptr<GpuLoadedKernel> load(const GpuProgram &program,
                                        const GpuKernelDescriptor &kernel,
                                        std::string &error) override;

  struct State;

protected:
  bool writeChecked(GpuBuffer &buffer, uint64_t offset, const void *host,
                    uint64_t bytes, std::string &error) override;
  bool readChecked(const GpuBuffer &buffer, uint64_t offset, void *host,
                   uint64_t bytes, std::string &error) override;
  bool launchChecked(const std::vector<GpuLaunch> &launches, unsigned repeats,
                     std::vector<double> *milliseconds,
                     std::string &error) override;

private:
  explicit CudaDevice(std::shared_ptr<State> state);
  std::shared_ptr<State> state;
};

/// Opens a device of the kind that runs `spirv` code (Vulkan) or PTX
/// (CUDA). Null with `error` set when there is none.
std::unique_ptr<GpuDevice> openGpuDevice(bool spirv, std::string &error);
/// The process's device of that kind, opened on first use and shared while
/// anyone holds it (the kernels of a layer stack share one queue).
std::shared_ptr<GpuDevice> sharedGpuDevice(bool spirv, std::string &error);

/// One operand of a call: the source function's inputs, then its results,
/// in order. Either a device buffer, bound in place, or host memory, copied
/// to the device before the kernels (inputs) or back after them (results).
struct GpuOperand {
  void *data = nullptr;
  /// The host operand's size; 0 when the caller does not know it (then
  /// the binding's size is trusted).
  uint64_t bytes = 0;
  /// When set, the operand is on the device: `data` and `bytes` are not
  /// used, and the buffer must hold at least the binding's bytes.
  GpuBuffer *buffer = nullptr;
};

/// A function of a GPU program made ready on one device: its kernel and
/// follow-up kernels loaded, constant tables uploaded and scratch buffers
/// allocated once, so that a call only binds operands and launches. After
/// `function` come `<function>_merge` when the launch splits key tiles over
/// workgroups (the partial results stay on the device) and
/// `<function>_query_grad` (dQ) after a backward's dK / dV kernel.
/// Bindings `argN` and `resultN` are operands, constant bindings their
/// descriptor contents; `tile_counts` and `partials` are held here. A
/// kernel that writes an argument (an insertion, GpuInsertKernel.h) updates
/// it in place: the function's result is that argument, and a result
/// operand in host memory receives it after the call.
class GpuFunction {
public:
  /// Null with `error` set when the program has no such function, its code
  /// is not for `device`, or loading fails. `device` must outlive the
  /// function.
  static std::unique_ptr<GpuFunction> prepare(const GpuProgram &program,
                                              GpuDevice &device,
                                              const std::string &function,
                                              std::string &error);
  ~GpuFunction();

  /// Bytes of each operand as the kernels bind it (inputs, then results).
  const std::vector<uint64_t> &operandBytes() const { return bytes; }
  size_t numInputs() const { return inputs; }

  /// Runs the kernels `repeats` times on `operands`. `milliseconds`
  /// receives each repeat's time (a split launch: both kernels'),
  /// `tileCounts` the per-workgroup (visited, partial) key-tile counts when
  /// the kernel counts them. False with `error` set when an operand is
  /// missing, a host operand's size differs from its binding's, a device
  /// operand is smaller, or the device fails.
  bool call(const std::vector<GpuOperand> &operands, unsigned repeats,
            std::vector<double> *milliseconds, std::vector<int32_t> *tileCounts,
            std::string &error);
  /// Appends a call's launches on `operands`, all device buffers, to
  /// `launches` without running them: the launches of several functions
  /// then go to GpuDevice::launch together (one submission and one wait;
  /// each after the writes of the one before). False with `error` set as
  /// call() (and for a host operand).
  bool launchesOn(const std::vector<GpuOperand> &operands,
                  std::vector<GpuLaunch> &launches, std::string &error);

private:
  explicit GpuFunction(GpuDevice &device);
  /// Each operand's device buffer (host ones staged and written).
  bool bind(const std::vector<GpuOperand> &operands,
            std::vector<GpuBuffer *> &buffers, std::string &error);
  void appendLaunches(const std::vector<GpuBuffer *> &buffers,
                      std::vector<GpuLaunch> &launches) const;
  struct Step;
  GpuDevice &device;
  std::vector<Step> steps;
  std::vector<uint64_t> bytes;
  size_t inputs = 0;
  /// The argument a kernel updates in place (binding argN written), which
  /// is the function's result; -1: none.
  long updated = -1;
  /// Device copies of host operands, made on first use.
  std::vector<std::shared_ptr<GpuBuffer>> staged;
  std::shared_ptr<GpuBuffer> tileCountBuffer;
};

/// GpuFunction::prepare and one call: for one-off runs.
bool runGpuFunction(const GpuProgram &program, GpuDevice &device,
                    const std::string &function,
                    const std::vector<GpuOperand> &operands, unsigned repeats,
                    std::vector<double> *milliseconds,
                    std::vector<int32_t> *tileCounts, std::string &error);

} // namespace attnrt

#endif // ATTN_RUNTIME_GPU_H
