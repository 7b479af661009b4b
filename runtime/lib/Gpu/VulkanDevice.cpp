//===- VulkanDevice.cpp - a Vulkan compute launcher -----------------------===//
//
// The loader is opened with dlopen and every entry point fetched through
// vkGetInstanceProcAddr / vkGetDeviceProcAddr, so libattn_gpu links no
// Vulkan library. One run: storage buffers in host-visible coherent
// memory, one descriptor set (set 0, binding i = argument i, as
// convert-gpu-to-spirv numbers them), one compute pipeline, one command
// buffer with a timestamp before and after each dispatch.
//
//===----------------------------------------------------------------------===//
#define VK_NO_PROTOTYPES
#include "attn/Runtime/Gpu.h"
#include <vulkan/vulkan.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

using namespace attnrt;

// The entry points used, fetched once per instance / device.
#define ATTN_VK_INSTANCE_FUNCTIONS(X)                                         \
  X(vkDestroyInstance)                                                        \
  X(vkEnumeratePhysicalDevices)                                               \
  X(vkGetPhysicalDeviceProperties)                                            \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                 \
  X(vkGetPhysicalDeviceMemoryProperties)                                      \
  X(vkCreateDevice)                                                           \
  X(vkGetDeviceProcAddr)
#define ATTN_VK_DEVICE_FUNCTIONS(X)                                           \
  X(vkDestroyDevice)                                                          \
  X(vkGetDeviceQueue)                                                         \
  X(vkCreateBuffer)                                                           \
  X(vkDestroyBuffer)                                                          \
  X(vkGetBufferMemoryRequirements)                                            \
  X(vkAllocateMemory)                                                         \
  X(vkFreeMemory)                                                             \
  X(vkBindBufferMemory)                                                       \
  X(vkMapMemory)                                                              \
  X(vkUnmapMemory)                                                            \
  X(vkCreateShaderModule)                                                     \
  X(vkDestroyShaderModule)                                                    \
  X(vkCreateDescriptorSetLayout)                                              \
  X(vkDestroyDescriptorSetLayout)                                             \
  X(vkCreatePipelineLayout)                                                   \
  X(vkDestroyPipelineLayout)                                                  \
  X(vkCreateComputePipelines)                                                 \
  X(vkDestroyPipeline)                                                        \
  X(vkCreateDescriptorPool)                                                   \
  X(vkDestroyDescriptorPool)                                                  \
  X(vkAllocateDescriptorSets)                                                 \
  X(vkUpdateDescriptorSets)                                                   \
  X(vkCreateCommandPool)                                                      \
  X(vkDestroyCommandPool)                                                     \
  X(vkAllocateCommandBuffers)                                                 \
  X(vkBeginCommandBuffer)                                                     \
  X(vkEndCommandBuffer)                                                       \
  X(vkCmdBindPipeline)                                                        \
  X(vkCmdBindDescriptorSets)                                                  \
  X(vkCmdDispatch)                                                            \
  X(vkCmdPipelineBarrier)                                                     \
  X(vkCmdResetQueryPool)                                                      \
  X(vkCmdWriteTimestamp)                                                      \
  X(vkCreateQueryPool)                                                        \
  X(vkDestroyQueryPool)                                                       \
  X(vkGetQueryPoolResults)                                                    \
  X(vkQueueSubmit)                                                            \
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

  ~State() {
    if (device)
      vkDestroyDevice(device, nullptr);
    if (instance)
      vkDestroyInstance(instance, nullptr);
    if (loader)
      dlclose(loader);
  }
};

namespace {

std::string vkError(const char *what, VkResult result) {
  return std::string(what) + " failed (VkResult " + std::to_string(result) +
         ")";
}

/// Everything one run creates, destroyed in reverse order.
struct RunObjects {
  VulkanDevice::State &s;
  std::vector<VkBuffer> buffers;
  std::vector<VkDeviceMemory> memories;
  VkShaderModule shader = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout pipelineLayout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkCommandPool commandPool = VK_NULL_HANDLE;
  VkQueryPool queries = VK_NULL_HANDLE;

  explicit RunObjects(VulkanDevice::State &s) : s(s) {}
  ~RunObjects() {
    VkDevice d = s.device;
    if (queries)
      s.vkDestroyQueryPool(d, queries, nullptr);
    if (commandPool)
      s.vkDestroyCommandPool(d, commandPool, nullptr);
    if (pool)
      s.vkDestroyDescriptorPool(d, pool, nullptr);
    if (pipeline)
      s.vkDestroyPipeline(d, pipeline, nullptr);
    if (pipelineLayout)
      s.vkDestroyPipelineLayout(d, pipelineLayout, nullptr);
    if (setLayout)
      s.vkDestroyDescriptorSetLayout(d, setLayout, nullptr);
    if (shader)
      s.vkDestroyShaderModule(d, shader, nullptr);
    for (VkBuffer b : buffers)
      s.vkDestroyBuffer(d, b, nullptr);
    for (VkDeviceMemory m : memories)
      s.vkFreeMemory(d, m, nullptr);
  }
};

/// A memory type of `typeBits` with host-visible, coherent memory.
int findHostMemoryType(const VkPhysicalDeviceMemoryProperties &memory,
                       uint32_t typeBits) {
  VkMemoryPropertyFlags wanted = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                 VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i)
    if ((typeBits & (1u << i)) &&
        (memory.memoryTypes[i].propertyFlags & wanted) == wanted)
      return int(i);
  return -1;
}

} // namespace

VulkanDevice::VulkanDevice(std::unique_ptr<State> state)
    : state(std::move(state)) {}
VulkanDevice::~VulkanDevice() = default;

std::unique_ptr<VulkanDevice> VulkanDevice::open(std::string &error) {
  auto s = std::make_unique<State>();
  s->loader = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!s->loader) {
    error = "cannot load the Vulkan loader libvulkan.so.1 (Debian package "
            "libvulkan1; lavapipe, a CPU device, is in mesa-vulkan-drivers)";
    return nullptr;
  }
  s->vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
      dlsym(s->loader, "vkGetInstanceProcAddr"));
  auto createInstance = reinterpret_cast<PFN_vkCreateInstance>(
      s->vkGetInstanceProcAddr ? s->vkGetInstanceProcAddr(nullptr,
                                                           "vkCreateInstance")
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
#define ATTN_LOAD(name)                                                       \
  s->name = reinterpret_cast<PFN_##name>(                                     \
      s->vkGetInstanceProcAddr(s->instance, #name));                          \
  if (!s->name) {                                                             \
    error = "the Vulkan loader lacks " #name;                                 \
    return nullptr;                                                           \
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
#define ATTN_LOAD(name)                                                       \
  s->name =                                                                   \
      reinterpret_cast<PFN_##name>(s->vkGetDeviceProcAddr(s->device, #name)); \
  if (!s->name) {                                                             \
    error = "the Vulkan device lacks " #name;                                 \
    return nullptr;                                                           \
  }
  ATTN_VK_DEVICE_FUNCTIONS(ATTN_LOAD)
#undef ATTN_LOAD
  s->vkGetDeviceQueue(s->device, s->queueFamily, 0, &s->queue);
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
  return std::string(state->properties.deviceName) + ", " + type;
}

bool VulkanDevice::run(const std::vector<uint32_t> &spirv,
                       const GpuKernelDescriptor &descriptor,
                       const std::vector<GpuBufferView> &views,
                       unsigned repeats, std::vector<double> *milliseconds,
                       std::string &error) {
  State &s = *state;
  RunObjects o(s);
  repeats = repeats ? repeats : 1;
  const VkPhysicalDeviceLimits &limits = s.properties.limits;
  for (int d = 0; d < 3; ++d)
    if (descriptor.grid[d] > limits.maxComputeWorkGroupCount[d] ||
        descriptor.workgroup[d] > limits.maxComputeWorkGroupSize[d]) {
      error = "kernel '" + descriptor.name + "' needs a grid or workgroup "
              "larger than the device allows";
      return false;
    }
  if (views.size() != descriptor.bindings.size()) {
    error = "kernel '" + descriptor.name + "' has " +
            std::to_string(descriptor.bindings.size()) + " bindings, given " +
            std::to_string(views.size()) + " buffers";
    return false;
  }

  // Buffers, filled with their host data.
  std::vector<void *> mapped;
  for (const GpuBufferView &view : views) {
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = view.bytes ? view.bytes : 4;
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkBuffer buffer;
    if (VkResult r = s.vkCreateBuffer(s.device, &info, nullptr, &buffer)) {
      error = vkError("vkCreateBuffer", r);
      return false;
    }
    o.buffers.push_back(buffer);
    VkMemoryRequirements needs;
    s.vkGetBufferMemoryRequirements(s.device, buffer, &needs);
    int type = findHostMemoryType(s.memory, needs.memoryTypeBits);
    if (type < 0) {
      error = "the Vulkan device has no host-visible memory for buffers";
      return false;
    }
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = needs.size;
    alloc.memoryTypeIndex = uint32_t(type);
    VkDeviceMemory memory;
    if (VkResult r = s.vkAllocateMemory(s.device, &alloc, nullptr, &memory)) {
      error = vkError("vkAllocateMemory", r);
      return false;
    }
    o.memories.push_back(memory);
    s.vkBindBufferMemory(s.device, buffer, memory, 0);
    void *host = nullptr;
    if (VkResult r = s.vkMapMemory(s.device, memory, 0, VK_WHOLE_SIZE, 0,
                                   &host)) {
      error = vkError("vkMapMemory", r);
      return false;
    }
    if (view.written)
      std::memset(host, 0, view.bytes);
    else if (view.bytes)
      std::memcpy(host, view.data, view.bytes);
    mapped.push_back(host);
  }

  // The pipeline.
  VkShaderModuleCreateInfo shaderInfo{
      VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  shaderInfo.codeSize = spirv.size() * sizeof(uint32_t);
  shaderInfo.pCode = spirv.data();
  if (VkResult r =
          s.vkCreateShaderModule(s.device, &shaderInfo, nullptr, &o.shader)) {
    error = vkError("vkCreateShaderModule", r);
    return false;
  }
  std::vector<VkDescriptorSetLayoutBinding> layoutBindings(views.size());
  for (size_t i = 0; i < views.size(); ++i) {
    layoutBindings[i] = {};
    layoutBindings[i].binding = uint32_t(i);
    layoutBindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    layoutBindings[i].descriptorCount = 1;
    layoutBindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo setInfo{
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  setInfo.bindingCount = uint32_t(layoutBindings.size());
  setInfo.pBindings = layoutBindings.data();
  if (VkResult r = s.vkCreateDescriptorSetLayout(s.device, &setInfo, nullptr,
                                                 &o.setLayout)) {
    error = vkError("vkCreateDescriptorSetLayout", r);
    return false;
  }
  VkPipelineLayoutCreateInfo layoutInfo{
      VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layoutInfo.setLayoutCount = 1;
  layoutInfo.pSetLayouts = &o.setLayout;
  if (VkResult r = s.vkCreatePipelineLayout(s.device, &layoutInfo, nullptr,
                                            &o.pipelineLayout)) {
    error = vkError("vkCreatePipelineLayout", r);
    return false;
  }
  VkComputePipelineCreateInfo pipelineInfo{
      VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipelineInfo.stage.sType =
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pipelineInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipelineInfo.stage.module = o.shader;
  pipelineInfo.stage.pName = descriptor.name.c_str();
  pipelineInfo.layout = o.pipelineLayout;
  if (VkResult r = s.vkCreateComputePipelines(
          s.device, VK_NULL_HANDLE, 1, &pipelineInfo, nullptr, &o.pipeline)) {
    error = vkError("vkCreateComputePipelines", r);
    return false;
  }

  // The descriptor set.
  VkDescriptorPoolSize poolSize{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                uint32_t(views.size() ? views.size() : 1)};
  VkDescriptorPoolCreateInfo poolInfo{
      VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  poolInfo.maxSets = 1;
  poolInfo.poolSizeCount = 1;
  poolInfo.pPoolSizes = &poolSize;
  if (VkResult r =
          s.vkCreateDescriptorPool(s.device, &poolInfo, nullptr, &o.pool)) {
    error = vkError("vkCreateDescriptorPool", r);
    return false;
  }
  VkDescriptorSetAllocateInfo setAlloc{
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  setAlloc.descriptorPool = o.pool;
  setAlloc.descriptorSetCount = 1;
  setAlloc.pSetLayouts = &o.setLayout;
  VkDescriptorSet set;
  if (VkResult r = s.vkAllocateDescriptorSets(s.device, &setAlloc, &set)) {
    error = vkError("vkAllocateDescriptorSets", r);
    return false;
  }
  std::vector<VkDescriptorBufferInfo> bufferInfos(views.size());
  std::vector<VkWriteDescriptorSet> writes(views.size());
  for (size_t i = 0; i < views.size(); ++i) {
    bufferInfos[i] = {o.buffers[i], 0, VK_WHOLE_SIZE};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = uint32_t(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &bufferInfos[i];
  }
  s.vkUpdateDescriptorSets(s.device, uint32_t(writes.size()), writes.data(), 0,
                           nullptr);

  // One command buffer: per repeat, a timestamp, the dispatch, a timestamp.
  VkCommandPoolCreateInfo commandPoolInfo{
      VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  commandPoolInfo.queueFamilyIndex = s.queueFamily;
  if (VkResult r = s.vkCreateCommandPool(s.device, &commandPoolInfo, nullptr,
                                         &o.commandPool)) {
    error = vkError("vkCreateCommandPool", r);
    return false;
  }
  if (s.timestamps) {
    VkQueryPoolCreateInfo queryInfo{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    queryInfo.queryType = VK_QUERY_TYPE_TIMESTAMP;
    queryInfo.queryCount = 2 * repeats;
    if (VkResult r =
            s.vkCreateQueryPool(s.device, &queryInfo, nullptr, &o.queries)) {
      error = vkError("vkCreateQueryPool", r);
      return false;
    }
  }
  VkCommandBufferAllocateInfo commandInfo{
      VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  commandInfo.commandPool = o.commandPool;
  commandInfo.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  commandInfo.commandBufferCount = 1;
  VkCommandBuffer commands;
  if (VkResult r =
          s.vkAllocateCommandBuffers(s.device, &commandInfo, &commands)) {
    error = vkError("vkAllocateCommandBuffers", r);
    return false;
  }
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  s.vkBeginCommandBuffer(commands, &begin);
  s.vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, o.pipeline);
  s.vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                            o.pipelineLayout, 0, 1, &set, 0, nullptr);
  if (o.queries)
    s.vkCmdResetQueryPool(commands, o.queries, 0, 2 * repeats);
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT |
                          VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  for (unsigned r = 0; r < repeats; ++r) {
    if (o.queries)
      s.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                            o.queries, 2 * r);
    s.vkCmdDispatch(commands, descriptor.grid[0], descriptor.grid[1],
                    descriptor.grid[2]);
    if (o.queries)
      s.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                            o.queries, 2 * r + 1);
    // Repeats write the same outputs: keep them in order.
    s.vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                               VK_PIPELINE_STAGE_HOST_BIT,
                           0, 1, &barrier, 0, nullptr, 0, nullptr);
  }
  s.vkEndCommandBuffer(commands);
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands;
  auto start = std::chrono::steady_clock::now();
  if (VkResult r = s.vkQueueSubmit(s.queue, 1, &submit, VK_NULL_HANDLE)) {
    error = vkError("vkQueueSubmit", r);
    return false;
  }
  if (VkResult r = s.vkQueueWaitIdle(s.queue)) {
    error = vkError("vkQueueWaitIdle", r);
    return false;
  }
  double hostMs = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (milliseconds) {
    milliseconds->clear();
    if (o.queries) {
      std::vector<uint64_t> ticks(2 * repeats);
      s.vkGetQueryPoolResults(s.device, o.queries, 0, 2 * repeats,
                              ticks.size() * sizeof(uint64_t), ticks.data(),
                              sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT |
                                  VK_QUERY_RESULT_WAIT_BIT);
      for (unsigned r = 0; r < repeats; ++r)
        milliseconds->push_back(double(ticks[2 * r + 1] - ticks[2 * r]) *
                                limits.timestampPeriod * 1e-6);
    } else {
      milliseconds->assign(repeats, hostMs / repeats);
    }
  }
  for (size_t i = 0; i < views.size(); ++i)
    if (views[i].written && views[i].bytes)
      std::memcpy(views[i].data, mapped[i], views[i].bytes);
  for (VkDeviceMemory m : o.memories)
    s.vkUnmapMemory(s.device, m);
  return true;
}
