// runtime/vulkan/vk_api.cpp — the Vulkan loader opened at run time and the
// entry points loaded through volk, checked against vk_functions.def, and
// VkResult turned into errors.
#include "runtime/vulkan/vk_api.h"

#include <mutex>
#include <string>

#include "grove/error.h"

namespace grove::vk::detail {

namespace {

constexpr const char* kInstallHint =
    "install the Vulkan loader and a driver, e.g. Debian's libvulkan1 and mesa-vulkan-drivers "
    "(lavapipe, a CPU driver, works everywhere)";

[[noreturn]] void missing_function(const char* name, const char* level) {
  throw Error(std::string("the Vulkan ") + level + " does not provide " + name +
              ", which Grove needs (Vulkan 1.1 or newer); update the Vulkan loader and driver");
}

}  // namespace

// volk's globals are one scratch area for the whole process: every load
// below sets them for the loader in question and copies what it loaded into
// the caller's table before another thread may use them.
std::mutex& volk_lock() {
  static std::mutex lock;
  return lock;
}

PFN_vkGetInstanceProcAddr system_loader() {
  std::lock_guard<std::mutex> hold(volk_lock());
  // Once per process: volkInitialize dlopens libvulkan.so.1 (or
  // libvulkan.so) and the loader then stays loaded, as the drivers must
  // (instance.cpp, keep_drivers_loaded).
  static const PFN_vkGetInstanceProcAddr loader = [] {
    return volkInitialize() == VK_SUCCESS ? vkGetInstanceProcAddr : nullptr;
  }();
  if (!loader) {
    throw Error(std::string("no Vulkan loader (libvulkan.so.1 with vkGetInstanceProcAddr) found; ") +
                kInstallHint);
  }
  return loader;
}

void Api::load_global(PFN_vkGetInstanceProcAddr get_instance_proc_addr) {
  std::lock_guard<std::mutex> hold(volk_lock());
  volkInitializeCustom(get_instance_proc_addr);
  vkGetInstanceProcAddr = get_instance_proc_addr;
#define GROVE_VK_GLOBAL_OPTIONAL(name) this->name = ::name;
#define GROVE_VK_GLOBAL(name)   \
  GROVE_VK_GLOBAL_OPTIONAL(name) \
  if (!this->name) missing_function(#name, "loader");
#include "runtime/vulkan/vk_functions.def"
}

void Api::load_instance(VkInstance instance) {
  std::lock_guard<std::mutex> hold(volk_lock());
  // volkLoadInstanceOnly asks volk's global vkGetInstanceProcAddr: this
  // table's loader's.
  ::vkGetInstanceProcAddr = vkGetInstanceProcAddr;
  volkLoadInstanceOnly(instance);
#define GROVE_VK_INSTANCE_OPTIONAL(name) this->name = ::name;
#define GROVE_VK_INSTANCE(name)   \
  GROVE_VK_INSTANCE_OPTIONAL(name) \
  if (!this->name) missing_function(#name, "instance");
#include "runtime/vulkan/vk_functions.def"
}

void Api::load_device(VkDevice device) {
  std::lock_guard<std::mutex> hold(volk_lock());
  // volkLoadDeviceTable asks volk's global vkGetDeviceProcAddr: this
  // instance's.
  ::vkGetDeviceProcAddr = vkGetDeviceProcAddr;
  volkLoadDeviceTable(this, device);
#define GROVE_VK_DEVICE(name) \
  if (!this->name) missing_function(#name, "device");
#include "runtime/vulkan/vk_functions.def"
}

const char* result_name(VkResult result) {
  switch (result) {
#define GROVE_VK_RESULT(name) \
  case name:                  \
    return #name;
    GROVE_VK_RESULT(VK_SUCCESS)
    GROVE_VK_RESULT(VK_NOT_READY)
    GROVE_VK_RESULT(VK_TIMEOUT)
    GROVE_VK_RESULT(VK_EVENT_SET)
    GROVE_VK_RESULT(VK_EVENT_RESET)
    GROVE_VK_RESULT(VK_INCOMPLETE)
    GROVE_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    GROVE_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    GROVE_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    GROVE_VK_RESULT(VK_ERROR_DEVICE_LOST)
    GROVE_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    GROVE_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    GROVE_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    GROVE_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    GROVE_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    GROVE_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    GROVE_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    GROVE_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    GROVE_VK_RESULT(VK_ERROR_UNKNOWN)
    GROVE_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    GROVE_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    GROVE_VK_RESULT(VK_ERROR_FRAGMENTATION)
    GROVE_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    GROVE_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
    GROVE_VK_RESULT(VK_ERROR_VALIDATION_FAILED_EXT)
    GROVE_VK_RESULT(VK_ERROR_INVALID_SHADER_NV)
#undef GROVE_VK_RESULT
    default:
      return "VkResult(unknown)";
  }
}

void throw_result(VkResult result, std::string_view call, std::string_view what) {
  const std::string context = what.empty() ? std::string() : " while " + std::string(what);
  const std::string code = std::string(call) + " returned " + result_name(result);
  switch (result) {
    case VK_ERROR_DEVICE_LOST:
      throw Error("Vulkan device lost" + context + " (" + code +
                  "): the driver gave up on the device, e.g. after a kernel that hung, ran too "
                  "long or accessed memory out of bounds; this Device can no longer be used, "
                  "create a new one");
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      throw Error("Vulkan ran out of device memory" + context + " (" + code +
                  "); free buffers or ask for less memory");
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      throw Error("Vulkan ran out of host memory" + context + " (" + code +
                  "); free memory or ask for less");
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL:
      throw Error("Vulkan ran out of descriptor pool memory" + context + " (" + code + ")");
    default:
      throw Error("Vulkan call failed" + context + ": " + code);
  }
}

}  // namespace grove::vk::detail
