// runtime/vulkan/vk_api.h — private to runtime/vulkan: the Vulkan C API
// (without prototypes) and its entry points as volk loads them, VkResult ->
// grove::Error translation, and the instance and physical-device queries
// shared by enumerate_devices() and Device::create().
//
// Every TU that includes this header sees volk's names renamed to the copy
// of volk inside Grove (grove_volk_names.h, runtime/vulkan/volk.c): write
// `api.vkCreateBuffer` as usual; the symbols are grove_volk_*.
#pragma once

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include "grove_volk_names.h"
#include <volk.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/vulkan/device.h"

namespace grove::vk::detail {

// Grove needs Vulkan 1.1 (vkGetPhysicalDeviceFeatures2, SPIR-V 1.3,
// subgroup properties) and asks for at most 1.3.
inline constexpr std::uint32_t kMinApiVersion = VK_API_VERSION_1_1;
inline constexpr std::uint32_t kMaxApiVersion = VK_API_VERSION_1_3;

// The system's Vulkan loader (libvulkan.so.1), opened once per process by
// volkInitialize and kept loaded. Throws grove::Error saying what to install
// if it is missing.
PFN_vkGetInstanceProcAddr system_loader();

// One instance's and one device's entry points. volk loads them (its
// function-pointer globals are a scratch area, used under a lock and copied
// out here), so each Instance and Device has its own table: an
// application's device with its own loader entry point and Grove's devices
// coexist in one process. The device-level functions are volk's
// VolkDeviceTable (all of them, null where the device lacks them); the
// global- and instance-level ones Grove calls are listed in
// vk_functions.def, which also says which of them must exist.
struct Api : VolkDeviceTable {
  Api() : VolkDeviceTable{} {}

  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
// (Declared by type of volk's global: the names are macros, see above.)
#define GROVE_VK_POINTER(name) decltype(::name) name = nullptr;
#define GROVE_VK_GLOBAL(name) GROVE_VK_POINTER(name)
#define GROVE_VK_GLOBAL_OPTIONAL(name) GROVE_VK_POINTER(name)
#define GROVE_VK_INSTANCE(name) GROVE_VK_POINTER(name)
#define GROVE_VK_INSTANCE_OPTIONAL(name) GROVE_VK_POINTER(name)
#include "runtime/vulkan/vk_functions.def"
#undef GROVE_VK_POINTER

  // Each throws grove::Error naming the first required function missing.
  // load_global takes the loader's entry point: system_loader() or the
  // application's vkGetInstanceProcAddr.
  void load_global(PFN_vkGetInstanceProcAddr get_instance_proc_addr);
  void load_instance(VkInstance instance);
  void load_device(VkDevice device);
};

// "VK_ERROR_DEVICE_LOST", ... ("VkResult(<n>)" for unknown codes).
const char* result_name(VkResult result);

// Throws grove::Error for a failed Vulkan call. `call` is the function;
// `what` says what was being done, with sizes for allocations ("allocating
// 4096 bytes of device memory for buffer 'x'"). Device loss, out-of-memory
// and other failures get distinct messages.
[[noreturn]] void throw_result(VkResult result, std::string_view call, std::string_view what);
inline void check(VkResult result, std::string_view call, std::string_view what = {}) {
  if (result != VK_SUCCESS) throw_result(result, call, what);
}

// A physical device and what Grove needs to know to open it.
struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  DeviceInfo info;                     // full capabilities, no profile applied
  std::uint32_t api_version = 0;       // min(device, instance) version
  std::uint32_t queue_family = UINT32_MAX;  // first family with compute
  bool has_atomic_float_ext = false;   // VK_EXT_shader_atomic_float
  bool has_atomic_float2_ext = false;  // VK_EXT_shader_atomic_float2
  bool has_atomic_int64_ext = false;   // VK_KHR_shader_atomic_int64 (pre-1.2)
  bool has_float_controls_ext = false;  // VK_KHR_shader_float_controls (pre-1.2)
  bool float32_atomic_load_store = false;  // shaderBufferFloat32Atomics
  VkPhysicalDeviceMemoryProperties memory{};
};

struct InstanceOptions {
  bool validation = false;
  // Receives every validation-layer message (warnings and errors).
  PFN_vkDebugUtilsMessengerCallbackEXT callback = nullptr;
  void* user_data = nullptr;
};

// Owns the loader library, the VkInstance and (with validation) the debug
// messenger; destroys them in reverse order.
class Instance {
 public:
  explicit Instance(const InstanceOptions& options);
  // An application's instance (ExternalDevice): used, never destroyed.
  explicit Instance(const ExternalDevice& external);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  const Api& api() const { return api_; }
  VkInstance handle() const { return instance_; }
  bool has_debug_utils() const { return api_.vkSetDebugUtilsObjectNameEXT != nullptr; }
  std::vector<PhysicalDevice> physical_devices() const;

 private:
  void release() noexcept;

  Api api_;
  std::uint32_t api_version_ = 0;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  bool owned_ = true;
};

// The effective DeviceInfo of a device opened with `profile`.
DeviceInfo apply_profile(DeviceInfo info, const DeviceProfile& profile);

// Picks a device for DeviceOptions::select (already merged with the
// environment): returns its position in `devices` or throws grove::Error
// listing the devices there are.
std::size_t select_device(const std::vector<PhysicalDevice>& devices, std::string_view select);

}  // namespace grove::vk::detail
