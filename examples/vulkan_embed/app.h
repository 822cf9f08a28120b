// app.h — the Vulkan objects of examples/vulkan_embed's application (an
// instance, a device with one graphics+compute queue, host-visible buffers),
// everything Grove does not own; also used by the examples' window
// (examples/common/window.cpp) and the application-side tests.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <grove/runtime.h>

namespace vulkan_embed {

inline void check(VkResult r, const char* call) {
  if (r != VK_SUCCESS) throw std::runtime_error(std::string(call) + " failed (VkResult " + std::to_string(r) + ")");
}

// The application's Vulkan objects: everything Grove does not own.
struct App {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  VkPhysicalDeviceFeatures enabled{};
  std::string name;

  bool cpu = false;  // a driver that runs on the CPU (lavapipe)

  // An instance of Vulkan 1.1 (Grove's minimum) and a device with one queue
  // of graphics and compute whose name contains `want`.
  void open(const std::string& want) {
    create_instance();
    const VkQueueFlags need = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;
    open_device(
        want, [&](VkPhysicalDevice, uint32_t, const VkQueueFamilyProperties& f) { return (f.queueFlags & need) == need; },
        "a graphics and compute queue");
  }

  // The instance, with `extensions` (a window's surface ones, say).
  void create_instance(const char* const* extensions = nullptr, uint32_t count = 0) {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vulkan_embed";
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    ici.enabledExtensionCount = count;
    ici.ppEnabledExtensionNames = extensions;
    check(vkCreateInstance(&ici, nullptr, &instance), "vkCreateInstance");
  }

  // The device: the first whose name contains `want` with a queue family
  // `usable` accepts (`needs` says what it needs, for the error); GPUs
  // before CPU drivers. Grove's kernels may use 64-bit integers and floats
  // where the device has them: what there is gets enabled, and handles()
  // tells Grove (Vulkan cannot be asked). `extensions`: device extensions.
  void open_device(const std::string& want,
                   const std::function<bool(VkPhysicalDevice, uint32_t, const VkQueueFamilyProperties&)>& usable,
                   const char* needs, const std::vector<const char*>& extensions = {}) {
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(instance, &n, nullptr);
    std::vector<VkPhysicalDevice> all(n);
    vkEnumeratePhysicalDevices(instance, &n, all.data());
    int best = -1;
    for (VkPhysicalDevice d : all) {
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(d, &p);
      if (!want.empty() && std::string(p.deviceName).find(want) == std::string::npos) continue;
      uint32_t fc = 0;
      vkGetPhysicalDeviceQueueFamilyProperties(d, &fc, nullptr);
      std::vector<VkQueueFamilyProperties> fams(fc);
      vkGetPhysicalDeviceQueueFamilyProperties(d, &fc, fams.data());
      for (uint32_t f = 0; f < fc; ++f) {
        if (!usable(d, f, fams[f])) continue;
        const int rank = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU     ? 3
                         : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? 2
                         : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU            ? 0
                                                                                  : 1;
        if (rank > best) {
          best = rank;
          physical = d;
          family = f;
          name = p.deviceName;
          cpu = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
        }
        break;
      }
    }
    if (physical == VK_NULL_HANDLE)
      throw std::runtime_error(std::string("no Vulkan device with ") + needs +
                               (want.empty() ? std::string() : " named like '" + want + "'"));
    VkPhysicalDeviceFeatures have{};
    vkGetPhysicalDeviceFeatures(physical, &have);
    enabled.shaderInt64 = have.shaderInt64;
    enabled.shaderFloat64 = have.shaderFloat64;
    enabled.shaderInt16 = have.shaderInt16;
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    dci.ppEnabledExtensionNames = extensions.data();
    dci.pEnabledFeatures = &enabled;
    check(vkCreateDevice(physical, &dci, nullptr, &device), "vkCreateDevice");
    vkGetDeviceQueue(device, family, 0, &queue);
  }

  grove::runtime::VulkanHandles handles() const {
    grove::runtime::VulkanHandles h;
    h.instance = instance;
    h.physical_device = physical;
    h.device = device;
    h.queue = queue;
    h.queue_family = family;
    h.get_instance_proc_addr = reinterpret_cast<void*>(&vkGetInstanceProcAddr);
    h.api_version = VK_API_VERSION_1_1;
    h.shader_int64 = enabled.shaderInt64;
    h.shader_float64 = enabled.shaderFloat64;
    h.shader_int16 = enabled.shaderInt16;
    return h;
  }

  uint32_t memory_type(uint32_t bits, VkMemoryPropertyFlags flags) const {
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(physical, &mp);
    for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
      if ((bits >> i & 1u) && (mp.memoryTypes[i].propertyFlags & flags) == flags) return i;
    throw std::runtime_error("no suitable Vulkan memory type");
  }

  void close() {
    if (device != VK_NULL_HANDLE) vkDestroyDevice(device, nullptr);
    if (instance != VK_NULL_HANDLE) vkDestroyInstance(instance, nullptr);
  }
};

// A buffer with its memory, host-visible and mapped when asked.
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  void create(const App& app, VkDeviceSize bytes, VkBufferUsageFlags usage) {
    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = bytes;
    bci.usage = usage;
    check(vkCreateBuffer(app.device, &bci, nullptr, &buffer), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(app.device, buffer, &req);
    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex =
        app.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    check(vkAllocateMemory(app.device, &mai, nullptr, &memory), "vkAllocateMemory");
    check(vkBindBufferMemory(app.device, buffer, memory, 0), "vkBindBufferMemory");
    check(vkMapMemory(app.device, memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
  }
  void destroy(VkDevice d) {
    if (buffer != VK_NULL_HANDLE) vkDestroyBuffer(d, buffer, nullptr);
    if (memory != VK_NULL_HANDLE) vkFreeMemory(d, memory, nullptr);
  }
};

// A descriptor set layout of `n` storage buffers (bindings 0..n-1) seen by
// `stage`, and a pipeline layout of it with `push_bytes` of push constants.
inline void storage_layouts(const App& app, uint32_t n, VkShaderStageFlags stage, uint32_t push_bytes,
                            VkDescriptorSetLayout& set_layout, VkPipelineLayout& layout) {
  std::vector<VkDescriptorSetLayoutBinding> bindings(n);
  for (uint32_t b = 0; b < n; ++b) bindings[b] = {b, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, stage, nullptr};
  VkDescriptorSetLayoutCreateInfo dli{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dli.bindingCount = n;
  dli.pBindings = bindings.data();
  check(vkCreateDescriptorSetLayout(app.device, &dli, nullptr, &set_layout), "vkCreateDescriptorSetLayout");
  VkPushConstantRange push{stage, 0, push_bytes};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &set_layout;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &push;
  check(vkCreatePipelineLayout(app.device, &pli, nullptr, &layout), "vkCreatePipelineLayout");
}

// A command pool of the application's queue family.
inline VkCommandPool command_pool(const App& app) {
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpi.queueFamilyIndex = app.family;
  check(vkCreateCommandPool(app.device, &cpi, nullptr, &pool), "vkCreateCommandPool");
  return pool;
}

// A primary command buffer from `pool`, begun.
inline VkCommandBuffer begin_commands(const App& app, VkCommandPool pool) {
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = pool;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(app.device, &cai, &cmd), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
  return cmd;
}

// Submits `cmd` to the application's queue, signalling `fence` (may be null).
inline void submit(const App& app, VkCommandBuffer cmd, VkFence fence) {
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  check(vkQueueSubmit(app.queue, 1, &si, fence), "vkQueueSubmit");
}

// A compute pipeline of the SPIR-V `words` (entry point "main") with
// `layout`, and its shader module (`module`), to destroy with it.
inline VkPipeline compute_pipeline(const App& app, const uint32_t* words, size_t bytes, VkPipelineLayout layout,
                                   VkShaderModule& module) {
  VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smi.codeSize = bytes;
  smi.pCode = words;
  check(vkCreateShaderModule(app.device, &smi, nullptr, &module), "vkCreateShaderModule");
  VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpi.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_COMPUTE_BIT, module,
               "main", nullptr};
  cpi.layout = layout;
  VkPipeline pipeline = VK_NULL_HANDLE;
  check(vkCreateComputePipelines(app.device, VK_NULL_HANDLE, 1, &cpi, nullptr, &pipeline), "vkCreateComputePipelines");
  return pipeline;
}

// A descriptor pool for `sets` sets of `buffers` storage buffers each, and
// a set of `layout` from it.
inline VkDescriptorPool storage_pool(const App& app, uint32_t sets, uint32_t buffers) {
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, sets * buffers};
  VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.maxSets = sets;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &size;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  check(vkCreateDescriptorPool(app.device, &dpi, nullptr, &pool), "vkCreateDescriptorPool");
  return pool;
}
inline VkDescriptorSet allocate_set(const App& app, VkDescriptorPool pool, VkDescriptorSetLayout layout) {
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkDescriptorSetAllocateInfo dai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  dai.descriptorPool = pool;
  dai.descriptorSetCount = 1;
  dai.pSetLayouts = &layout;
  check(vkAllocateDescriptorSets(app.device, &dai, &set), "vkAllocateDescriptorSets");
  return set;
}

// Ends `cmd` with the barrier that makes compute shaders' writes visible
// to the host, submits it and waits for the queue.
inline void finish_to_host(const App& app, VkCommandBuffer cmd) {
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0,
                       nullptr, 0, nullptr);
  check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  submit(app, cmd, VK_NULL_HANDLE);
  check(vkQueueWaitIdle(app.queue), "vkQueueWaitIdle");
}

// Binds `buffers` (whole) to bindings 0.. of `set`.
inline void bind_storage(const App& app, VkDescriptorSet set, const std::vector<VkBuffer>& buffers) {
  std::vector<VkDescriptorBufferInfo> infos;
  std::vector<VkWriteDescriptorSet> writes(buffers.size(), VkWriteDescriptorSet{});
  for (VkBuffer b : buffers) infos.push_back({b, 0, VK_WHOLE_SIZE});
  for (uint32_t b = 0; b < buffers.size(); ++b) {
    writes[b].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[b].dstSet = set;
    writes[b].dstBinding = b;
    writes[b].descriptorCount = 1;
    writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[b].pBufferInfo = &infos[b];
  }
  vkUpdateDescriptorSets(app.device, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
}

}  // namespace vulkan_embed
