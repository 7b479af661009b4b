//===- Gpu.h - GPU kernels: descriptors and the Vulkan launcher -*- C++ -*-===//
//
// What the runtime needs to launch a GPU kernel attn compiled
// (docs/Gpu.md): the kernel descriptor attn-compile writes next to the
// .spv / .ptx (grid, workgroup size, buffer bindings, the tile schedule's
// contents), a Vulkan compute launcher and a CUDA driver-API launcher. No
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

/// Host memory one binding reads from (before the dispatch) or writes to
/// (after it).
struct GpuBufferView {
  void *data = nullptr;
  uint64_t bytes = 0;
  bool written = false;
};

/// A Vulkan compute device with one queue. Buffers live in host-visible
/// memory (on discrete GPUs a device-local copy would be faster; docs/Gpu.md
/// lists it as future work).
class VulkanDevice {
public:
  /// Opens the loader and a device: $ATTN_VULKAN_DEVICE (an index into
  /// the physical devices) or the first GPU, else the first device (e.g.
  /// lavapipe). Null with `error` set when none can be opened.
  static std::unique_ptr<VulkanDevice> open(std::string &error);
  ~VulkanDevice();

  /// The device's name and type (e.g. "llvmpipe (LLVM 15.0.6, 256 bits),
  /// cpu").
  std::string describe() const;

  /// Runs `descriptor`'s entry point of the SPIR-V module `spirv`
  /// `repeats` times (at least once) with `buffers` at the bindings of the
  /// descriptor, then copies written buffers back. `milliseconds`, when
  /// given, receives the time of each dispatch (timestamp queries, or the
  /// host clock where the queue has none).
  bool run(const std::vector<uint32_t> &spirv,
           const GpuKernelDescriptor &descriptor,
           const std::vector<GpuBufferView> &buffers, unsigned repeats,
           std::vector<double> *milliseconds, std::string &error);

  struct State;

private:
  explicit VulkanDevice(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

/// A CUDA device through the driver API (libcuda.so.1, opened with dlopen
/// when a device is first asked for).
class CudaDevice {
public:
  /// Opens the driver and device $ATTN_CUDA_DEVICE (default 0) with its
  /// primary context. Null with `error` set (e.g. no driver on this
  /// machine) when none can be opened.
  static std::unique_ptr<CudaDevice> open(std::string &error);
  ~CudaDevice();

  /// The device's name (e.g. "NVIDIA H100 80GB HBM3, cuda").
  std::string describe() const;

  /// Runs `descriptor`'s kernel of the PTX (or cubin) `code` `repeats`
  /// times (at least once) on device copies of `buffers`, then copies the
  /// written ones back; `milliseconds` receives each launch's time (events).
  bool run(const std::string &code, const GpuKernelDescriptor &descriptor,
           const std::vector<GpuBufferView> &buffers, unsigned repeats,
           std::vector<double> *milliseconds, std::string &error);

  struct State;

private:
  explicit CudaDevice(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

/// Host memory of one operand of a call: the source function's inputs,
/// then its results, in order.
struct GpuOperand {
  void *data = nullptr;
  /// The operand's size; 0 when the caller does not know it (then the
  /// binding's size is trusted).
  uint64_t bytes = 0;
};

/// The compiled code of a GPU artifact and how to launch its kernels.
struct GpuProgram {
  bool isSpirv = true;
  std::vector<uint32_t> spirv; ///< Vulkan
  std::string ptx;             ///< CUDA (PTX text or a cubin)
  std::vector<GpuKernelDescriptor> kernels;
};

/// Runs `function` of `program` on the device its code is for (`vulkan`
/// for SPIR-V, `cuda` for PTX), then `<function>_merge` when the launch
/// splits key tiles over workgroups and `<function>_query_grad` (dQ) after
/// a backward's dK / dV kernel: bindings `argN` and `resultN` read and
/// write `operands`, constant bindings their descriptor contents, and the
/// kernels' own scratch (`tile_counts`, `partials`) buffers held here.
/// `milliseconds` receives each dispatch's time (a split launch: both
/// kernels'), `tileCounts` the per-workgroup (visited, partial) key-tile
/// counts when the kernel counts them. False with `error` set when the
/// function or a binding's operand is missing, an operand's size differs
/// from its binding's, or the device fails.
bool runGpuFunction(const GpuProgram &program, VulkanDevice *vulkan,
                    CudaDevice *cuda, const std::string &function,
                    const std::vector<GpuOperand> &operands, unsigned repeats,
                    std::vector<double> *milliseconds,
                    std::vector<int32_t> *tileCounts, std::string &error);

} // namespace attnrt

#endif // ATTN_RUNTIME_GPU_H
