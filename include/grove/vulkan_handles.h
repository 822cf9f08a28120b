// grove/vulkan_handles.h — an application's Vulkan objects as Grove takes
// them (runtime::Options::external for a module, Config::vulkan_external
// for a Program), and those a module runs on (Module::vulkan()).
#pragma once

#include <cstdint>

namespace grove::runtime {

// Vulkan objects, as void* (this header includes no Vulkan header).
struct VulkanHandles {
  void* instance = nullptr;         // VkInstance
  void* physical_device = nullptr;  // VkPhysicalDevice, one of the instance's
  void* device = nullptr;           // VkDevice, created on physical_device
  void* queue = nullptr;            // VkQueue of queue_family, which must support compute
  uint32_t queue_family = 0;
  // The instance's PFN_vkGetInstanceProcAddr; nullptr: the Vulkan loader's.
  void* get_instance_proc_addr = nullptr;
  uint32_t api_version = 0;  // the instance's apiVersion (at least 1.1; 0 means 1.1)
  // The features enabled on the VkDevice (Vulkan cannot be asked which);
  // a module whose kernels need one that is off does not load, and a
  // Program compiles its kernels without those that are off.
  bool shader_int64 = false;
  bool shader_float64 = false;
  bool shader_int16 = false;
  bool storage_buffer_16bit = false;
  bool atomic_int64 = false;            // shaderBufferInt64Atomics
  bool atomic_float32_add = false;      // VK_EXT_shader_atomic_float: shaderBufferFloat32AtomicAdd
  bool atomic_float32_min_max = false;  // VK_EXT_shader_atomic_float2: shaderBufferFloat32AtomicMinMax
};

}  // namespace grove::runtime
