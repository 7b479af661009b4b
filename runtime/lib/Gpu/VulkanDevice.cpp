//===- VulkanDevice.cpp - a Vulkan compute launcher -----------------------===//
//
// The loader is opened with dlopen and every entry point fetched through
// vkGetInstanceProcAddr / vkGetDeviceProcAddr, so libattn_gpu links no
// Vulkan library. Buffers are storage buffers in mappable coherent memory,
// mapped for their lifetime. A loaded kernel is a compute pipeline whose
// set 0 has binding i = argument i (as convert-gpu-to-spirv numbers them).
// A launch records every dispatch of a call in one command buffer, each
// between two timestamps and followed by a barrier, submits it once and
// waits for it.
//
//===----------------------------------------------------------------------===//
#define VK_NO_PROTOTYPES
#include "attn/Runtime/Gpu.h"
#include <vulkan/vulkan.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <mutex>

using namespace attnrt;

// The entry points used, fetched once per instance / device.
#define ATTN_VK_INSTANCE_FUNCTIONS(X)                                          \
  X(vkDestroyInstance)                                                         \
  X(vkEnumeratePhysicalDevices)                                                \
  X(vkGetPhysicalDeviceProperties)                                             \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                  \
  X(vkGetPhysicalDeviceMemoryProperties)                                       \
  X(vkCreateDevice)                                                            \
  X(vkGetDeviceProcAddr)
#define ATTN_VK_DEVICE_FUNCTIONS(X)                                            \
  X(vkDestroyDevice)                                                           \
  X(vkGetDeviceQueue)                                                          \
  X(vkCreateBuffer)                                                            \
  X(vkDestroyBuffer)                                                           \
  X(vkGetBufferMemoryRequirements)                                             \
  X(vkAllocateMemory)                                                          \
  X(vkFreeMemory)                                                              \
  X(vkBindBufferMemory)                                                        \
  X(vkMapMemory)                                                               \
  X(vkUnmapMemory)                                                             \
  X(vkCreateShaderModule)                                                      \
  X(vkDestroyShaderModule)                                                     \
  X(vkCreateDescriptorSetLayout)                                               \
  X(vkDestroyDescriptorSetLayout)                                              \
  X(vkCreatePipelineLayout)                                                    \
  X(vkDestroyPipelineLayout)                                                   \
  X(vkCreateComputePipelines)                                                  \
  X(vkDestroyPipeline)                                                         \
  X(vkCreateDescriptorPool)                                                    \
  X(vkDestroyDescriptorPool)                                                   \
  X(vkAllocateDescriptorSets)                                                  \
  X(vkUpdateDescriptorSets)                                                    \
  X(vkCreateCommandPool)                                                       \
  X(vkDestroyCommandPool)                                                      \
  X(vkAllocateCommandBuffers)                                                  \
  X(vkBeginCommandBuffer)                                                      \
  X(vkEndCommandBuffer)                                                        \
  X(vkCmdBindPipeline)                                                         \
  X(vkCmdBindDescriptorSets)                                                   \
  X(vkCmdDispatch)                                                             \
  X(vkCmdCopyBuffer)                                                           \
  X(vkCmdFillBuffer)                                                           \
  X(vkCmdPipelineBarrier)                                                      \
  X(vkCmdResetQueryPool)                                                       \
  X(vkCmdWriteTimestamp)                                                       \
  X(vkCreateQueryPool)                                                         \
  X(vkDestroyQueryPool)                                                        \
  X(vkGetQueryPoolResults)                                                     \
  X(vkFreeCommandBuffers)                                                      \
  X(vkQueueSubmit)                                                             \
  X(vkQueueWaitIdle)

struct VulkanDevice::State {
  void *loader = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define ATTN_DECLARE(name) PFN_##name name = nullptr;
  ATTN_VK_INSTANCE_FUNCTIONS(ATTN_DECLARE)
  ATTN_VK_DEVICE_FUNCTIONS(ATTN_DECLARE)
#undef ATTN_DECLARE
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceMemoryProperties memory{};
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  bool timestamps = false;
  /// Buffers live in device-local memory the host does not map, written
  /// and read through staging copies (chooseStaging).
  bool staging = false;
  /// Where launches allocate their command buffers.
  VkCommandPool commandPool = VK_NULL_HANDLE;
  /// The queue and the command pool need external synchronization: one
  /// launch at a time. Recursive: a buffer released while the device holds
  /// it (a failed allocation) submits pending copies first.
  std::recursive_mutex launchMutex;

  /// A mappable buffer that staged copies go through.
  struct Staging {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    char *mapped = nullptr;
    uint64_t bytes = 0;
  };
  /// The staging buffer copies reuse (guarded by launchMutex): grown to the
  /// most a batch of copies has needed, up to kKeptStagingBytes; larger
  /// copies get one of their own, so that host memory stays bounded.
  static constexpr uint64_t kKeptStagingBytes = 64 << 20;
  Staging kept;
  /// Staged writes and zero fills wait in `pending` (guarded by
  /// launchMutex) until a launch or a read submits them with its own
  /// commands: one submission, one wait. Their host data sits in `kept`
  /// below `keptUsed`, or in `retired` (buffers of their own, and kept
  /// buffers outgrown while copies still read them).
  VkCommandBuffer pending = VK_NULL_HANDLE;
  uint64_t keptUsed = 0;
  std::vector<Staging> retired;

  void release(Staging &staging) {
    if (staging.mapped)
      vkUnmapMemory(device, staging.memory);
    if (staging.buffer)
      vkDestroyBuffer(device, staging.buffer, nullptr);
    if (staging.memory)
      vkFreeMemory(device, staging.memory, nullptr);
    staging = Staging();
  }
  /// After pending copies have run: their staging is free again.
  void releaseRetired() {
    for (Staging &staging : retired)
      release(staging);
    retired.clear();
    keptUsed = 0;
  }

  ~State() {
    releaseRetired();
    release(kept);
    if (pending)
      vkFreeCommandBuffers(device, commandPool, 1, &pending);
    if (commandPool)
      vkDestroyCommandPool(device, commandPool, nullptr);
    if (device)
      vkDestroyDevice(device, nullptr);
    if (instance)
      vkDestroyInstance(instance, nullptr);
    if (loader)
      dlclose(loader);
  }
};

static bool submitPending(VulkanDevice::State &s, VkCommandBuffer commands,
                          std::string &error);

namespace {

std::string vkError(const std::string &what, VkResult result) {
  return what + " failed (VkResult " + std::to_string(result) + ")";
}

/// A memory type of `typeBits` with all of `wanted`, or -1.
int findMemoryType(const VkPhysicalDeviceMemoryProperties &memory,
                   uint32_t typeBits, VkMemoryPropertyFlags wanted) {
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i)
    if ((typeBits & (1u << i)) &&
        (memory.memoryTypes[i].propertyFlags & wanted) == wanted)
      return int(i);
  return -1;
}

/// A memory type of `typeBits` with host-visible, coherent memory,
/// device-local where the device has such memory mappable.
int findMappableMemoryType(const VkPhysicalDeviceMemoryProperties &memory,
                           uint32_t typeBits) {
  VkMemoryPropertyFlags mappable = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                   VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int type = findMemoryType(memory, typeBits,
                            mappable | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  return type >= 0 ? type : findMemoryType(memory, typeBits, mappable);
}

/// Whether buffers go to device-local memory through staging copies: on a
/// discrete GPU whose host-visible device-local memory is only a window
/// (NVIDIA without resizable BAR: 256 MiB), where mappable buffers would
/// be host memory the kernels read over PCIe. $ATTN_VULKAN_STAGING=1 or 0
/// decides instead (the suite runs the staging path on lavapipe).
bool chooseStaging(const VkPhysicalDeviceProperties &properties,
                   const VkPhysicalDeviceMemoryProperties &memory) {
  if (const char *env = std::getenv("ATTN_VULKAN_STAGING"))
    return std::string(env) == "1";
  if (properties.deviceType != VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU)
    return false;
  VkDeviceSize deviceLocal = 0, mappable = 0;
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags flags = memory.memoryTypes[i].propertyFlags;
    VkDeviceSize heap =
        memory.memoryHeaps[memory.memoryTypes[i].heapIndex].size;
    if (!(flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
      continue;
    deviceLocal = std::max(deviceLocal, heap);
    if (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
      mappable = std::max(mappable, heap);
  }
  return mappable < deviceLocal / 2;
}

/// A storage buffer and its memory, mapped while it lives (unless the
/// device stages: then `mapped` is null).
struct VulkanBuffer final : GpuBuffer {
  VulkanBuffer(std::shared_ptr<VulkanDevice::State> s, uint64_t bytes)
      : GpuBuffer(bytes), s(std::move(s)) {}
  ~VulkanBuffer() override {
    if (buffer && s->pending) {
      // Pending copies may write this buffer: they run before it goes (a
      // failure here has no one to tell; the next submission fails too).
      std::lock_guard<std::recursive_mutex> lock(s->launchMutex);
      std::string ignored;
      submitPending(*s, VK_NULL_HANDLE, ignored);
      s->releaseRetired();
    }
    if (mapped)
      s->vkUnmapMemory(s->device, memory);
    if (buffer)
      s->vkDestroyBuffer(s->device, buffer, nullptr);
    if (memory)
      s->vkFreeMemory(s->device, memory, nullptr);
  }
  std::shared_ptr<VulkanDevice::State> s;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void *mapped = nullptr;
  /// The VkBuffer's size (at least 4 bytes).
  uint64_t bufferBytes = 0;
};

/// A compute pipeline and what it is made of.
struct VulkanKernel final : GpuLoadedKernel {
  VulkanKernel(std::shared_ptr<VulkanDevice::State> s,
               const GpuKernelDescriptor &d)
      : GpuLoadedKernel(d), s(std::move(s)) {}
  ~VulkanKernel() override {
    VkDevice d = s->device;
    if (pipeline)
      s->vkDestroyPipeline(d, pipeline, nullptr);
    if (pipelineLayout)
      s->vkDestroyPipelineLayout(d, pipelineLayout, nullptr);
    if (setLayout)
      s->vkDestroyDescriptorSetLayout(d, setLayout, nullptr);
    if (shader)
      s->vkDestroyShaderModule(d, shader, nullptr);
  }
  std::shared_ptr<VulkanDevice::State> s;
  VkShaderModule shader = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout pipelineLayout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
};

/// What one launch creates: descriptor sets, a command buffer, timestamps.
struct LaunchObjects {
  VulkanDevice::State &s;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkQueryPool queries = VK_NULL_HANDLE;
  explicit LaunchObjects(VulkanDevice::State &s) : s(s) {}
  ~LaunchObjects() {
    if (queries)
      s.vkDestroyQueryPool(s.device, queries, nullptr);
    if (commands)
      s.vkFreeCommandBuffers(s.device, s.commandPool, 1, &commands);
    if (pool)
      s.vkDestroyDescriptorPool(s.device, pool, nullptr);
  }
};

} // namespace

VulkanDevice::VulkanDevice(std::shared_ptr<State> state)
    : state(std::move(state)) {}
VulkanDevice::~VulkanDevice() = default;

std::unique_ptr<VulkanDevice> VulkanDevice::open(std::string &error) {
  auto s = std::make_shared<State>();
  s->loader = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!s->loader) {
    error = "cannot load the Vulkan loader libvulkan.so.1 (Debian package "
            "libvulkan1; lavapipe, a CPU device, is in mesa-vulkan-drivers)";
    return nullptr;
  }
  s->vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
      dlsym(s->loader, "vkGetInstanceProcAddr"));
  auto createInstance = reinterpret_cast<PFN_vkCreateInstance>(
      s->vkGetInstanceProcAddr
          ? s->vkGetInstanceProcAddr(nullptr, "vkCreateInstance")
          : nullptr);
  if (!createInstance) {
    error = "libvulkan.so.1 has no vkCreateInstance";
    return nullptr;
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "attn";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo instanceInfo{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  instanceInfo.pApplicationInfo = &app;
  if (VkResult r = createInstance(&instanceInfo, nullptr, &s->instance)) {
    error = vkError("vkCreateInstance", r);
    return nullptr;
  }
#define ATTN_LOAD(name)                                                        \
  s->name = reinterpret_cast<PFN_##name>(                                      \
      s->vkGetInstanceProcAddr(s->instance, #name));                           \
  if (!s->name) {                                                              \
    error = "the Vulkan loader lacks " #name;                                  \
    return nullptr;                                                            \
  }
  ATTN_VK_INSTANCE_FUNCTIONS(ATTN_LOAD)
#undef ATTN_LOAD

  uint32_t count = 0;
  s->vkEnumeratePhysicalDevices(s->instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  s->vkEnumeratePhysicalDevices(s->instance, &count, devices.data());
  if (devices.empty()) {
    error = "no Vulkan device (install mesa-vulkan-drivers for lavapipe)";
    return nullptr;
  }
  size_t chosen = 0;
  if (const char *env = std::getenv("ATTN_VULKAN_DEVICE")) {
    char *end = nullptr;
    unsigned long index = std::strtoul(env, &end, 10);
    if (!*env || *end || index >= devices.size()) {
      error = "ATTN_VULKAN_DEVICE=" + std::string(env) + " is not one of the " +
              std::to_string(devices.size()) + " Vulkan devices";
      return nullptr;
    }
    chosen = index;
  } else {
    for (size_t i = 0; i < devices.size(); ++i) {
      VkPhysicalDeviceProperties p;
      s->vkGetPhysicalDeviceProperties(devices[i], &p);
      if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
          p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU) {
        chosen = i;
        break;
      }
    }
  }
  s->physical = devices[chosen];
  s->vkGetPhysicalDeviceProperties(s->physical, &s->properties);
  s->vkGetPhysicalDeviceMemoryProperties(s->physical, &s->memory);
  s->staging = chooseStaging(s->properties, s->memory);

  s->vkGetPhysicalDeviceQueueFamilyProperties(s->physical, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  s->vkGetPhysicalDeviceQueueFamilyProperties(s->physical, &count,
                                              families.data());
  bool found = false;
  for (uint32_t i = 0; i < count && !found; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      s->queueFamily = i;
      s->timestamps = families[i].timestampValidBits > 0 &&
                      s->properties.limits.timestampPeriod > 0;
      found = true;
    }
  if (!found) {
    error = std::string("Vulkan device '") + s->properties.deviceName +
            "' has no compute queue";
    return nullptr;
  }
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queueInfo{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queueInfo.queueFamilyIndex = s->queueFamily;
  queueInfo.queueCount = 1;
  queueInfo.pQueuePriorities = &priority;
  VkDeviceCreateInfo deviceInfo{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  deviceInfo.queueCreateInfoCount = 1;
  deviceInfo.pQueueCreateInfos = &queueInfo;
  if (VkResult r =
          s->vkCreateDevice(s->physical, &deviceInfo, nullptr, &s->device)) {
    error = vkError("vkCreateDevice", r);
    return nullptr;
  }
#define ATTN_LOAD(name)                                                        \
  s->name =                                                                    \
      reinterpret_cast<PFN_##name>(s->vkGetDeviceProcAddr(s->device, #name));  \
  if (!s->name) {                                                              \
    error = "the Vulkan device lacks " #name;                                  \
    return nullptr;                                                            \
  }
  ATTN_VK_DEVICE_FUNCTIONS(ATTN_LOAD)
#undef ATTN_LOAD
  s->vkGetDeviceQueue(s->device, s->queueFamily, 0, &s->queue);
  VkCommandPoolCreateInfo commandPoolInfo{
      VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  commandPoolInfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  commandPoolInfo.queueFamilyIndex = s->queueFamily;
  if (VkResult r = s->vkCreateCommandPool(s->device, &commandPoolInfo, nullptr,
                                          &s->commandPool)) {
    error = vkError("vkCreateCommandPool", r);
    return nullptr;
  }
  return std::unique_ptr<VulkanDevice>(new VulkanDevice(std::move(s)));
}

std::string VulkanDevice::describe() const {
  const char *type = "other";
  switch (state->properties.deviceType) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    type = "discrete GPU";
    break;
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    type = "integrated GPU";
    break;
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    type = "cpu";
    break;
  default:
    break;
  }
  return std::string(state->properties.deviceName) + ", " + type +
         (state->staging ? ", staged buffers" : "");
}

/// A storage buffer that copies may also read and write, in mappable
/// memory (mapped) or in device-local memory.
static std::shared_ptr<VulkanBuffer>
makeBuffer(const std::shared_ptr<VulkanDevice::State> &state, uint64_t bytes,
           bool mappable, std::string &error) {
  VulkanDevice::State &s = *state;
  auto b = std::make_shared<VulkanBuffer>(state, bytes);
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = bytes ? bytes : 4;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
               VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  b->bufferBytes = info.size;
  if (VkResult r = s.vkCreateBuffer(s.device, &info, nullptr, &b->buffer)) {
    b->buffer = VK_NULL_HANDLE;
    error = vkError("vkCreateBuffer", r);
    return nullptr;
  }
  VkMemoryRequirements needs;
  s.vkGetBufferMemoryRequirements(s.device, b->buffer, &needs);
  int type = mappable ? findMappableMemoryType(s.memory, needs.memoryTypeBits)
                      : findMemoryType(s.memory, needs.memoryTypeBits,
                                       VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (type < 0) {
    error = mappable ? "the Vulkan device has no host-visible memory for "
                       "buffers"
                     : "the Vulkan device has no device-local memory for "
                       "buffers";
    return nullptr;
  }
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = needs.size;
  alloc.memoryTypeIndex = uint32_t(type);
  if (VkResult r = s.vkAllocateMemory(s.device, &alloc, nullptr, &b->memory)) {
    b->memory = VK_NULL_HANDLE;
    error =
        vkError("vkAllocateMemory (" + std::to_string(bytes) + " bytes)", r);
    return nullptr;
  }
  s.vkBindBufferMemory(s.device, b->buffer, b->memory, 0);
  if (mappable) {
    if (VkResult r = s.vkMapMemory(s.device, b->memory, 0, VK_WHOLE_SIZE, 0,
                                   &b->mapped)) {
      b->mapped = nullptr;
      error = vkError("vkMapMemory", r);
      return nullptr;
    }
  }
  return b;
}

/// A one-time command buffer from the device's pool, begun (null on
/// failure). The caller holds the launch mutex.
static bool beginCommands(VulkanDevice::State &s, VkCommandBuffer &commands,
                          std::string &error) {
  VkCommandBufferAllocateInfo commandInfo{
      VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  commandInfo.commandPool = s.commandPool;
  commandInfo.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  commandInfo.commandBufferCount = 1;
  if (VkResult r =
          s.vkAllocateCommandBuffers(s.device, &commandInfo, &commands)) {
    commands = VK_NULL_HANDLE;
    error = vkError("vkAllocateCommandBuffers", r);
    return false;
  }
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  s.vkBeginCommandBuffer(commands, &begin);
  return true;
}

/// Submits the pending copies (VulkanDevice::State::pending), then
/// `commands` when given, in one submission, and waits until the queue is
/// idle. The caller holds the launch mutex and releases the retired
/// staging buffers once it has read what it copied into them.
static bool submitPending(VulkanDevice::State &s, VkCommandBuffer commands,
                          std::string &error) {
  VkCommandBuffer buffers[2];
  uint32_t count = 0;
  if (s.pending) {
    // The copies' writes before later dispatches and the host's reads.
    VkMemoryBarrier after{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    after.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    after.dstAccessMask = VK_ACCESS_SHADER_READ_BIT |
                          VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
    s.vkCmdPipelineBarrier(s.pending, VK_PIPELINE_STAGE_TRANSFER_BIT,
                           VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                               VK_PIPELINE_STAGE_HOST_BIT,
                           0, 1, &after, 0, nullptr, 0, nullptr);
    s.vkEndCommandBuffer(s.pending);
    buffers[count++] = s.pending;
  }
  if (commands)
    buffers[count++] = commands;
  if (!count)
    return true;
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = count;
  submit.pCommandBuffers = buffers;
  bool ok = true;
  if (VkResult r = s.vkQueueSubmit(s.queue, 1, &submit, VK_NULL_HANDLE)) {
    error = vkError("vkQueueSubmit", r);
    ok = false;
  } else if (VkResult r = s.vkQueueWaitIdle(s.queue)) {
    error = vkError("vkQueueWaitIdle", r);
    ok = false;
  }
  if (s.pending)
    s.vkFreeCommandBuffers(s.device, s.commandPool, 1, &s.pending);
  s.pending = VK_NULL_HANDLE;
  return ok;
}

/// Records `record` into the pending command buffer (begun if there is
/// none), after a barrier: earlier dispatches' and copies' writes before
/// it. The caller holds the launch mutex.
static bool recordPending(VulkanDevice::State &s,
                          const std::function<void(VkCommandBuffer)> &record,
                          std::string &error) {
  if (!s.pending && !beginCommands(s, s.pending, error))
    return false;
  VkMemoryBarrier before{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  before.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  before.dstAccessMask =
      VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  s.vkCmdPipelineBarrier(s.pending, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0,
                         nullptr, 0, nullptr);
  record(s.pending);
  return true;
}

/// Where a staged copy of `bytes` puts its host data: the kept staging
/// buffer past what pending copies use, the kept buffer grown (the old
/// one retired while copies read it), or past kKeptStagingBytes a
/// buffer of its own, retired at once. The caller holds the launch mutex.
static bool stagingSlot(const std::shared_ptr<VulkanDevice::State> &state,
                        uint64_t bytes, VkBuffer &buffer, uint64_t &offset,
                        char *&mapped, std::string &error) {
  using State = VulkanDevice::State;
  State &s = *state;
  auto make = [&](uint64_t size, State::Staging &staging) {
    std::shared_ptr<VulkanBuffer> b =
        makeBuffer(state, size, /*mappable=*/true, error);
    if (!b)
      return false;
    // The device owns the handles (a VulkanBuffer would hold the device's
    // state alive).
    staging = {b->buffer, b->memory, static_cast<char *>(b->mapped), size};
    b->buffer = VK_NULL_HANDLE;
    b->memory = VK_NULL_HANDLE;
    b->mapped = nullptr;
    return true;
  };
  offset = (s.keptUsed + 15) & ~uint64_t(15);
  if (bytes > State::kKeptStagingBytes) {
    State::Staging own;
    if (!make(bytes, own))
      return false;
    s.retired.push_back(own);
    buffer = own.buffer;
    mapped = own.mapped;
    offset = 0;
    return true;
  }
  if (offset + bytes > s.kept.bytes) {
    // Grow to what this batch has needed so far, so that the next one
    // fits whole.
    uint64_t size = std::min(State::kKeptStagingBytes,
                             std::max(offset + bytes, 2 * s.kept.bytes));
    State::Staging grown;
    if (!make(size, grown))
      return false;
    if (s.keptUsed)
      s.retired.push_back(s.kept);
    else
      s.release(s.kept);
    s.kept = grown;
    offset = 0;
  }
  s.keptUsed = offset + bytes;
  buffer = s.kept.buffer;
  mapped = s.kept.mapped + offset;
  return true;
}

/// Records a copy of `bytes` between `buffer` and a staging slot
/// (stagingSlot) into the pending commands: `toDevice`'s bytes, copied into
/// the slot now, to the buffer; or, when it is null, the buffer's bytes to
/// the slot, where `mapped` finds them once the commands have run. The
/// caller holds the launch mutex.
static bool recordStagedCopy(const std::shared_ptr<VulkanDevice::State> &state,
                             const VulkanBuffer &buffer, uint64_t bufferOffset,
                             uint64_t bytes, const void *toDevice,
                             char *&mapped, std::string &error) {
  VkBuffer staging;
  uint64_t offset;
  if (!stagingSlot(state, bytes, staging, offset, mapped, error))
    return false;
  VkBufferCopy region{bufferOffset, offset, bytes};
  VkBuffer from = buffer.buffer, to = staging;
  if (toDevice) {
    std::memcpy(mapped, toDevice, bytes);
    region = {offset, bufferOffset, bytes};
    std::swap(from, to);
  }
  VulkanDevice::State &s = *state;
  return recordPending(
      s,
      [&](VkCommandBuffer commands) {
        s.vkCmdCopyBuffer(commands, from, to, 1, &region);
      },
      error);
}

std::shared_ptr<GpuBuffer> VulkanDevice::allocate(uint64_t bytes,
                                                  std::string &error) {
  State &s = *state;
  auto b = makeBuffer(state, bytes, /*mappable=*/!s.staging, error);
  if (!b)
    return nullptr;
  if (b->mapped) {
    std::memset(b->mapped, 0, b->bufferBytes);
    return b;
  }
  // Zero-filled by the next submission, before anything reads it.
  std::lock_guard<std::recursive_mutex> lock(s.launchMutex);
  VulkanBuffer *target = b.get();
  if (!recordPending(
          s,
          [&](VkCommandBuffer commands) {
            s.vkCmdFillBuffer(commands, target->buffer, 0, VK_WHOLE_SIZE, 0);
          },
          error))
    return nullptr;
  return b;
}

std::shared_ptr<GpuBuffer> VulkanDevice::wrap(uint64_t, uint64_t,
                                              std::string &error) {
  error = "a Vulkan device binds only buffers it allocated (a buffer of "
          "another VkDevice cannot be bound): allocate one and write to it";
  return nullptr;
}

bool VulkanDevice::writeChecked(GpuBuffer &buffer, uint64_t offset,
                                const void *host, uint64_t bytes,
                                std::string &error) {
  auto &b = static_cast<VulkanBuffer &>(buffer);
  if (b.mapped) {
    // Launches wait for their queue, so the memory is free to write.
    std::memcpy(static_cast<char *>(b.mapped) + offset, host, bytes);
    return true;
  }
  // Staged: the copy waits for the next launch or read.
  std::lock_guard<std::recursive_mutex> lock(state->launchMutex);
  char *mapped;
  return recordStagedCopy(state, b, offset, bytes, host, mapped, error);
}

bool VulkanDevice::readChecked(const GpuBuffer &buffer, uint64_t offset,
                               void *host, uint64_t bytes, std::string &error) {
  const auto &b = static_cast<const VulkanBuffer &>(buffer);
  if (b.mapped) {
    std::memcpy(host, static_cast<const char *>(b.mapped) + offset, bytes);
    return true;
  }
  // Staged: one submission with the pending copies.
  State &s = *state;
  std::lock_guard<std::recursive_mutex> lock(s.launchMutex);
  char *mapped;
  bool ok = recordStagedCopy(state, b, offset, bytes, /*toDevice=*/nullptr,
                             mapped, error) &&
            submitPending(s, VK_NULL_HANDLE, error);
  if (ok)
    std::memcpy(host, mapped, bytes);
  s.releaseRetired();
  return ok;
}

std::unique_ptr<GpuLoadedKernel>
VulkanDevice::load(const GpuProgram &program,
                   const GpuKernelDescriptor &descriptor, std::string &error) {
  State &s = *state;
  const VkPhysicalDeviceLimits &limits = s.properties.limits;
  for (int d = 0; d < 3; ++d)
    if (descriptor.grid[d] > limits.maxComputeWorkGroupCount[d] ||
        descriptor.workgroup[d] > limits.maxComputeWorkGroupSize[d]) {
      error = "kernel '" + descriptor.name +
              "' needs a grid or workgroup "
              "larger than the device allows";
      return nullptr;
    }
  // SPIR-V kernels declare their workgroup memory; only CUDA kernels ask
  // for it at launch.
  if (descriptor.sharedBytes) {
    error = "kernel '" + descriptor.name +
            "' asks for dynamic shared memory, which is CUDA's (a kernel "
            "for another target?)";
    return nullptr;
  }
  auto k = std::make_unique<VulkanKernel>(state, descriptor);
  VkShaderModuleCreateInfo shaderInfo{
      VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  shaderInfo.codeSize = program.spirv.size() * sizeof(uint32_t);
  shaderInfo.pCode = program.spirv.data();
  if (VkResult r =
          s.vkCreateShaderModule(s.device, &shaderInfo, nullptr, &k->shader)) {
    k->shader = VK_NULL_HANDLE;
    error = vkError("vkCreateShaderModule", r);
    return nullptr;
  }
  size_t numBindings = descriptor.bindings.size();
  std::vector<VkDescriptorSetLayoutBinding> layoutBindings(numBindings);
  for (size_t i = 0; i < numBindings; ++i) {
    layoutBindings[i] = {};
    layoutBindings[i].binding = uint32_t(i);
    layoutBindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    layoutBindings[i].descriptorCount = 1;
    layoutBindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo setInfo{
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  setInfo.bindingCount = uint32_t(numBindings);
  setInfo.pBindings = layoutBindings.data();
  if (VkResult r = s.vkCreateDescriptorSetLayout(s.device, &setInfo, nullptr,
                                                 &k->setLayout)) {
    k->setLayout = VK_NULL_HANDLE;
    error = vkError("vkCreateDescriptorSetLayout", r);
    return nullptr;
  }
  VkPipelineLayoutCreateInfo layoutInfo{
      VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layoutInfo.setLayoutCount = 1;
  layoutInfo.pSetLayouts = &k->setLayout;
  if (VkResult r = s.vkCreatePipelineLayout(s.device, &layoutInfo, nullptr,
                                            &k->pipelineLayout)) {
    k->pipelineLayout = VK_NULL_HANDLE;
    error = vkError("vkCreatePipelineLayout", r);
    return nullptr;
  }
  VkComputePipelineCreateInfo pipelineInfo{
      VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipelineInfo.stage.sType =
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pipelineInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipelineInfo.stage.module = k->shader;
  pipelineInfo.stage.pName = k->descriptor().name.c_str();
  pipelineInfo.layout = k->pipelineLayout;
  if (VkResult r = s.vkCreateComputePipelines(
          s.device, VK_NULL_HANDLE, 1, &pipelineInfo, nullptr, &k->pipeline)) {
    k->pipeline = VK_NULL_HANDLE;
    error = vkError("vkCreateComputePipelines", r);
    return nullptr;
  }
  return k;
}

bool VulkanDevice::launchChecked(const std::vector<GpuLaunch> &launches,
                                 unsigned repeats,
                                 std::vector<double> *milliseconds,
                                 std::string &error) {
  State &s = *state;
  std::lock_guard<std::recursive_mutex> lock(s.launchMutex);
  LaunchObjects o(s);
  repeats = repeats ? repeats : 1;
  size_t numLaunches = launches.size();

  // One descriptor set per launch: the buffers at its bindings.
  uint32_t numDescriptors = 0;
  for (const GpuLaunch &l : launches) {
    numDescriptors += uint32_t(l.buffers.size());
  }
  VkDescriptorPoolSize poolSize{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                numDescriptors ? numDescriptors : 1};
  VkDescriptorPoolCreateInfo poolInfo{
      VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  poolInfo.maxSets = uint32_t(numLaunches ? numLaunches : 1);
  poolInfo.poolSizeCount = 1;
  poolInfo.pPoolSizes = &poolSize;
  if (VkResult r =
          s.vkCreateDescriptorPool(s.device, &poolInfo, nullptr, &o.pool)) {
    o.pool = VK_NULL_HANDLE;
    error = vkError("vkCreateDescriptorPool", r);
    return false;
  }
  std::vector<VkDescriptorSet> sets(numLaunches);
  for (size_t l = 0; l < numLaunches; ++l) {
    auto &kernel = static_cast<const VulkanKernel &>(*launches[l].kernel);
    VkDescriptorSetAllocateInfo setAlloc{
        VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    setAlloc.descriptorPool = o.pool;
    setAlloc.descriptorSetCount = 1;
    setAlloc.pSetLayouts = &kernel.setLayout;
    if (VkResult r =
            s.vkAllocateDescriptorSets(s.device, &setAlloc, &sets[l])) {
      error = vkError("vkAllocateDescriptorSets", r);
      return false;
    }
    size_t n = launches[l].buffers.size();
    std::vector<VkDescriptorBufferInfo> infos(n);
    std::vector<VkWriteDescriptorSet> writes(n);
    for (size_t i = 0; i < n; ++i) {
      infos[i] = {static_cast<VulkanBuffer *>(launches[l].buffers[i])->buffer,
                  0, VK_WHOLE_SIZE};
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = sets[l];
      writes[i].dstBinding = uint32_t(i);
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    s.vkUpdateDescriptorSets(s.device, uint32_t(n), writes.data(), 0, nullptr);
  }

  // One command buffer: per repeat and launch, a timestamp, the dispatch, a
  // timestamp and a barrier (the next dispatch reads what this one wrote).
  uint32_t numQueries = uint32_t(2 * repeats * numLaunches);
  if (s.timestamps && numQueries) {
    VkQueryPoolCreateInfo queryInfo{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    queryInfo.queryType = VK_QUERY_TYPE_TIMESTAMP;
    queryInfo.queryCount = numQueries;
    if (VkResult r =
            s.vkCreateQueryPool(s.device, &queryInfo, nullptr, &o.queries)) {
      o.queries = VK_NULL_HANDLE;
      error = vkError("vkCreateQueryPool", r);
      return false;
    }
  }
  if (!beginCommands(s, o.commands, error))
    return false;
  VkCommandBuffer commands = o.commands;
  if (o.queries)
    s.vkCmdResetQueryPool(commands, o.queries, 0, numQueries);
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT |
                          VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  uint32_t query = 0;
  for (unsigned r = 0; r < repeats; ++r)
    for (size_t l = 0; l < numLaunches; ++l) {
      auto &kernel = static_cast<const VulkanKernel &>(*launches[l].kernel);
      s.vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                          kernel.pipeline);
      s.vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                                kernel.pipelineLayout, 0, 1, &sets[l], 0,
                                nullptr);
      if (o.queries)
        s.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                              o.queries, query++);
      s.vkCmdDispatch(commands, launches[l].gridSize(0),
                      launches[l].gridSize(1), launches[l].gridSize(2));
      if (o.queries)
        s.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                              o.queries, query++);
      s.vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                                 VK_PIPELINE_STAGE_HOST_BIT,
                             0, 1, &barrier, 0, nullptr, 0, nullptr);
    }
  s.vkEndCommandBuffer(commands);
  // Pending staged copies go in the same submission, before the launches.
  auto start = std::chrono::steady_clock::now();
  bool submitted = submitPending(s, commands, error);
  s.releaseRetired();
  if (!submitted)
    return false;
  double hostMs = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (milliseconds) {
    milliseconds->assign(repeats, 0.0);
    if (o.queries) {
      std::vector<uint64_t> ticks(numQueries);
      s.vkGetQueryPoolResults(
          s.device, o.queries, 0, numQueries, ticks.size() * sizeof(uint64_t),
          ticks.data(), sizeof(uint64_t),
          VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
      for (unsigned r = 0; r < repeats; ++r)
        for (size_t l = 0; l < numLaunches; ++l) {
          size_t q = 2 * (r * numLaunches + l);
          (*milliseconds)[r] += double(ticks[q + 1] - ticks[q]) *
                                s.properties.limits.timestampPeriod * 1e-6;
        }
    } else {
      milliseconds->assign(repeats, hostMs / repeats);
    }
  }
  return true;
}
