// runtime/vulkan/instance.cpp — the VkInstance (with the validation layer
// on request), physical-device queries, enumerate_devices() and device
// selection.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <string>
#include <vector>

#include "grove/error.h"
#include "runtime/vulkan/vk_api.h"

namespace grove::vk {

const char* to_string(DeviceType type) {
  switch (type) {
    case DeviceType::discrete_gpu:
      return "discrete GPU";
    case DeviceType::integrated_gpu:
      return "integrated GPU";
    case DeviceType::virtual_gpu:
      return "virtual GPU";
    case DeviceType::cpu:
      return "CPU";
    case DeviceType::other:
      return "other";
  }
  return "other";
}

std::string version_string(std::uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

namespace detail {

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool has_extension(const std::vector<VkExtensionProperties>& list, const char* name) {
  return std::any_of(list.begin(), list.end(), [&](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

std::vector<VkExtensionProperties> instance_extensions(const Api& api, const char* layer) {
  std::uint32_t count = 0;
  check(api.vkEnumerateInstanceExtensionProperties(layer, &count, nullptr),
        "vkEnumerateInstanceExtensionProperties");
  std::vector<VkExtensionProperties> list(count);
  check(api.vkEnumerateInstanceExtensionProperties(layer, &count, list.data()),
        "vkEnumerateInstanceExtensionProperties");
  list.resize(count);
  return list;
}

bool has_layer(const Api& api, const char* name) {
  std::uint32_t count = 0;
  check(api.vkEnumerateInstanceLayerProperties(&count, nullptr), "vkEnumerateInstanceLayerProperties");
  std::vector<VkLayerProperties> layers(count);
  check(api.vkEnumerateInstanceLayerProperties(&count, layers.data()),
        "vkEnumerateInstanceLayerProperties");
  layers.resize(count);
  return std::any_of(layers.begin(), layers.end(),
                     [&](const VkLayerProperties& l) { return std::strcmp(l.layerName, name) == 0; });
}

DeviceType device_type(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return DeviceType::discrete_gpu;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return DeviceType::integrated_gpu;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return DeviceType::virtual_gpu;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return DeviceType::cpu;
    default:
      return DeviceType::other;
  }
}

// Fills everything about one physical device; `instance_version` caps the
// version usable on it.
PhysicalDevice describe(const Api& api, VkPhysicalDevice handle, std::uint32_t index,
                        std::uint32_t instance_version) {
  PhysicalDevice pd;
  pd.handle = handle;
  DeviceInfo& info = pd.info;
  info.index = index;

  VkPhysicalDeviceProperties props{};
  api.vkGetPhysicalDeviceProperties(handle, &props);
  info.name = props.deviceName;
  info.vendor_id = props.vendorID;
  info.device_id = props.deviceID;
  info.type = device_type(props.deviceType);
  info.api_version = props.apiVersion;
  info.driver_version = props.driverVersion;
  pd.api_version = std::min(props.apiVersion, instance_version);
  api.vkGetPhysicalDeviceMemoryProperties(handle, &pd.memory);
  for (std::uint32_t i = 0; i < pd.memory.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags unified = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                          VK_MEMORY_PROPERTY_HOST_COHERENT_BIT | VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    if ((pd.memory.memoryTypes[i].propertyFlags & unified) == unified) info.unified_memory = true;
  }

  std::uint32_t family_count = 0;
  api.vkGetPhysicalDeviceQueueFamilyProperties(handle, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  api.vkGetPhysicalDeviceQueueFamilyProperties(handle, &family_count, families.data());
  for (std::uint32_t i = 0; i < family_count; ++i) {
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && families[i].queueCount > 0) {
      pd.queue_family = i;
      break;
    }
  }

  const VkPhysicalDeviceLimits& limits = props.limits;
  info.max_storage_buffer_range = limits.maxStorageBufferRange;
  for (int i = 0; i < 3; ++i) info.max_compute_workgroup_count[i] = limits.maxComputeWorkGroupCount[i];
  info.max_compute_workgroup_size_x = limits.maxComputeWorkGroupSize[0];
  info.max_compute_workgroup_invocations = limits.maxComputeWorkGroupInvocations;
  info.max_push_constants_size = limits.maxPushConstantsSize;
  info.max_storage_buffers_per_stage = limits.maxPerStageDescriptorStorageBuffers;

  if (pd.api_version < kMinApiVersion) {
    info.unsupported_reason = "supports only Vulkan " + version_string(props.apiVersion) +
                              "; Grove needs Vulkan 1.1 (update the driver)";
    return pd;  // the 1.1 queries below are not allowed on it
  }
  if (pd.queue_family == UINT32_MAX) info.unsupported_reason = "has no compute queue";

  std::uint32_t ext_count = 0;
  check(api.vkEnumerateDeviceExtensionProperties(handle, nullptr, &ext_count, nullptr),
        "vkEnumerateDeviceExtensionProperties");
  std::vector<VkExtensionProperties> extensions(ext_count);
  check(api.vkEnumerateDeviceExtensionProperties(handle, nullptr, &ext_count, extensions.data()),
        "vkEnumerateDeviceExtensionProperties");
  extensions.resize(ext_count);
  pd.has_atomic_float_ext = has_extension(extensions, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  pd.has_atomic_float2_ext =
      pd.has_atomic_float_ext && has_extension(extensions, VK_EXT_SHADER_ATOMIC_FLOAT_2_EXTENSION_NAME);
  pd.has_atomic_int64_ext = has_extension(extensions, VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME);
  const bool atomic_int64_queryable = pd.api_version >= VK_API_VERSION_1_2 || pd.has_atomic_int64_ext;
  pd.has_float_controls_ext = has_extension(extensions, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);
  const bool float_controls_queryable = pd.api_version >= VK_API_VERSION_1_2 || pd.has_float_controls_ext;

  // Properties: subgroup size and the largest single allocation.
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties maintenance3{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  subgroup.pNext = &maintenance3;
  VkPhysicalDeviceFloatControlsProperties float_controls{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  if (float_controls_queryable) maintenance3.pNext = &float_controls;
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &subgroup;
  api.vkGetPhysicalDeviceProperties2(handle, &props2);
  info.subgroup_size = subgroup.subgroupSize;
  info.subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                             (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) != 0 &&
                             (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0 &&
                             (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT) != 0;
  info.max_memory_allocation_size = maintenance3.maxMemoryAllocationSize;

  // Features: chain only the structures this device knows.
  VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures storage16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderAtomicInt64Features atomic_int64{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES};
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic_float{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT atomic_float2{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_2_FEATURES_EXT};
  void** tail = &features2.pNext;
  auto append = [&tail](auto& s) {
    *tail = &s;
    tail = &s.pNext;
  };
  append(storage16);
  if (atomic_int64_queryable) append(atomic_int64);
  if (pd.has_atomic_float_ext) append(atomic_float);
  if (pd.has_atomic_float2_ext) append(atomic_float2);
  api.vkGetPhysicalDeviceFeatures2(handle, &features2);

  info.shader_int64 = features2.features.shaderInt64;
  info.shader_float64 = features2.features.shaderFloat64;
  info.shader_int16 = features2.features.shaderInt16;
  info.storage_buffer_16bit = storage16.storageBuffer16BitAccess;
  info.atomic_int64 = atomic_int64_queryable && atomic_int64.shaderBufferInt64Atomics;
  info.atomic_float32_add = pd.has_atomic_float_ext && atomic_float.shaderBufferFloat32AtomicAdd;
  pd.float32_atomic_load_store = pd.has_atomic_float_ext && atomic_float.shaderBufferFloat32Atomics;
  info.atomic_float32_min_max =
      pd.has_atomic_float2_ext && atomic_float2.shaderBufferFloat32AtomicMinMax;
  info.signed_zero_inf_nan_preserve =
      float_controls_queryable && float_controls.shaderSignedZeroInfNanPreserveFloat32 &&
      (!info.shader_float64 || float_controls.shaderSignedZeroInfNanPreserveFloat64);
  info.denorm_preserve = float_controls_queryable && float_controls.shaderDenormPreserveFloat32;
  return pd;
}

// glibc never gives back the static TLS of a library loaded after start-up
// (it only grows), and some drivers use initial-exec TLS (NVIDIA's
// libnvidia-tls): a process that creates and destroys Programs one after
// another made the loader unload and reload such a driver each time, and
// after about 25 of them (seen on an H200 with driver 580) the driver no
// longer loaded ("cannot allocate memory in static TLS block") and every
// later Program found no Vulkan device. One instance of no layers, made
// with the process's first and never destroyed, keeps the loader and its
// drivers loaded for the life of the process, as an application's own
// instance would. Where it cannot be made, the real instance reports why.
void keep_drivers_loaded() {
  // In static storage, where leak checkers see what it holds, and never
  // destroyed: at exit a later static destructor may still use Vulkan.
  static VkInstance kept = VK_NULL_HANDLE;
  static const bool made = [] {
    try {
      Api api;
      api.load_global(system_loader());
      VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
      app.pApplicationName = "grove (keeps the Vulkan drivers loaded)";
      app.apiVersion = VK_API_VERSION_1_0;
      VkInstanceCreateInfo create{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
      create.pApplicationInfo = &app;
      return api.vkCreateInstance(&create, nullptr, &kept) == VK_SUCCESS;
    } catch (const Error&) {
      return false;
    }
  }();
  (void)made;
}

}  // namespace

Instance::Instance(const InstanceOptions& options) {
  keep_drivers_loaded();
  api_.load_global(system_loader());
  if (!api_.vkEnumerateInstanceVersion) {
    throw Error(
        "the Vulkan loader supports only Vulkan 1.0; Grove needs 1.1 or newer (update Debian's "
        "libvulkan1)");
  }
  std::uint32_t loader_version = 0;
  check(api_.vkEnumerateInstanceVersion(&loader_version), "vkEnumerateInstanceVersion");
  api_version_ = std::min(loader_version, kMaxApiVersion);
  if (api_version_ < kMinApiVersion) {
    throw Error("the Vulkan loader supports only Vulkan " + version_string(loader_version) +
                "; Grove needs 1.1 or newer (update Debian's libvulkan1)");
  }

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "grove";
  app.pEngineName = "grove";
  app.apiVersion = api_version_;

  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  const VkValidationFeatureEnableEXT enables[] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT validation_features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  validation_features.enabledValidationFeatureCount = 1;
  validation_features.pEnabledValidationFeatures = enables;
  VkDebugUtilsMessengerCreateInfoEXT messenger_info{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                   VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = options.callback;
  messenger_info.pUserData = options.user_data;

  VkInstanceCreateInfo create{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  create.pApplicationInfo = &app;
  if (options.validation) {
    if (!has_layer(api_, kValidationLayer)) {
      throw Error(
          "Vulkan validation was requested (DeviceOptions::validation or "
          "GROVE_VULKAN_VALIDATION=1) but the layer VK_LAYER_KHRONOS_validation is not "
          "installed; install Debian's vulkan-validationlayers or turn validation off");
    }
    const auto layer_extensions = instance_extensions(api_, kValidationLayer);
    const auto loader_extensions = instance_extensions(api_, nullptr);
    if (!has_extension(layer_extensions, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) &&
        !has_extension(loader_extensions, VK_EXT_DEBUG_UTILS_EXTENSION_NAME)) {
      throw Error("the Vulkan validation layer offers no VK_EXT_debug_utils to report messages "
                  "through; update Debian's vulkan-validationlayers");
    }
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    // Messages from vkCreateInstance/vkDestroyInstance themselves go to the
    // messenger chained here; the rest to the messenger created below.
    const void** tail = &create.pNext;
    *tail = &messenger_info;
    tail = &messenger_info.pNext;
    if (has_extension(layer_extensions, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME)) {
      extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
      *tail = &validation_features;
    } else {
      throw Error("the Vulkan validation layer lacks VK_EXT_validation_features, needed for "
                  "synchronization validation; update Debian's vulkan-validationlayers");
    }
  }
  create.enabledLayerCount = static_cast<std::uint32_t>(layers.size());
  create.ppEnabledLayerNames = layers.data();
  create.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  create.ppEnabledExtensionNames = extensions.data();

  const VkResult result = api_.vkCreateInstance(&create, nullptr, &instance_);
  if (result == VK_ERROR_INCOMPATIBLE_DRIVER) {
    throw Error(
        "no Vulkan driver found (vkCreateInstance returned VK_ERROR_INCOMPATIBLE_DRIVER); "
        "install a Vulkan driver, e.g. Debian's mesa-vulkan-drivers");
  }
  check(result, "vkCreateInstance", "creating the Vulkan instance");

  try {
    api_.load_instance(instance_);
    if (options.validation) {
      if (!api_.vkCreateDebugUtilsMessengerEXT || !api_.vkDestroyDebugUtilsMessengerEXT) {
        throw Error("the Vulkan loader enabled VK_EXT_debug_utils but has no messenger functions");
      }
      messenger_info.pNext = nullptr;
      check(api_.vkCreateDebugUtilsMessengerEXT(instance_, &messenger_info, nullptr, &messenger_),
            "vkCreateDebugUtilsMessengerEXT", "creating the validation message callback");
    } else {
      // Without the extension enabled these pointers must not be used.
      api_.vkCreateDebugUtilsMessengerEXT = nullptr;
      api_.vkDestroyDebugUtilsMessengerEXT = nullptr;
      api_.vkSetDebugUtilsObjectNameEXT = nullptr;
    }
  } catch (...) {
    release();
    throw;
  }
}

Instance::Instance(const ExternalDevice& external) : owned_(false) {
  if (external.instance == nullptr)
    throw Error("VulkanHandles::instance is null: pass the application's VkInstance");
  instance_ = static_cast<VkInstance>(external.instance);
  api_.load_global(external.get_instance_proc_addr
                       ? reinterpret_cast<PFN_vkGetInstanceProcAddr>(external.get_instance_proc_addr)
                       : system_loader());
  api_version_ = external.api_version == 0 ? kMinApiVersion : std::min(external.api_version, kMaxApiVersion);
  if (api_version_ < kMinApiVersion) {
    throw Error("VulkanHandles::api_version is Vulkan " + version_string(external.api_version) +
                "; Grove needs an instance created for Vulkan 1.1 or newer");
  }
  api_.load_instance(instance_);
  // The application's layers and extensions are its own: no debug names.
  api_.vkCreateDebugUtilsMessengerEXT = nullptr;
  api_.vkDestroyDebugUtilsMessengerEXT = nullptr;
  api_.vkSetDebugUtilsObjectNameEXT = nullptr;
}

Instance::~Instance() { release(); }

void Instance::release() noexcept {
  if (!owned_) {
    instance_ = VK_NULL_HANDLE;
    return;
  }
  if (messenger_ != VK_NULL_HANDLE) {
    api_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
    messenger_ = VK_NULL_HANDLE;
  }
  // vkDestroyInstance is null only if loading the instance table failed at
  // its very first entry; the instance then cannot be destroyed at all.
  if (instance_ != VK_NULL_HANDLE && api_.vkDestroyInstance) {
    api_.vkDestroyInstance(instance_, nullptr);
    instance_ = VK_NULL_HANDLE;
  }
}

std::vector<PhysicalDevice> Instance::physical_devices() const {
  std::uint32_t count = 0;
  check(api_.vkEnumeratePhysicalDevices(instance_, &count, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> handles(count);
  if (count > 0) {
    const VkResult r = api_.vkEnumeratePhysicalDevices(instance_, &count, handles.data());
    if (r != VK_INCOMPLETE) check(r, "vkEnumeratePhysicalDevices");
  }
  handles.resize(count);
  std::vector<PhysicalDevice> devices;
  for (std::uint32_t i = 0; i < count; ++i) {
    devices.push_back(describe(api_, handles[i], i, api_version_));
  }
  return devices;
}

DeviceInfo apply_profile(DeviceInfo info, const DeviceProfile& profile) {
  if (profile.no_int64) {
    info.shader_int64 = false;
    info.atomic_int64 = false;
  }
  if (profile.no_float64) info.shader_float64 = false;
  if (profile.no_float_controls) info.signed_zero_inf_nan_preserve = info.denorm_preserve = false;
  if (profile.no_unified_memory) info.unified_memory = false;
  if (profile.no_float_atomics) {
    info.atomic_float32_add = false;
    info.atomic_float32_min_max = false;
  }
  if (profile.max_storage_buffer_range != 0) {
    info.max_storage_buffer_range =
        std::min(info.max_storage_buffer_range, profile.max_storage_buffer_range);
  }
  if (profile.max_workgroup_invocations != 0) {
    info.max_compute_workgroup_invocations =
        std::min(info.max_compute_workgroup_invocations, profile.max_workgroup_invocations);
    info.max_compute_workgroup_size_x = std::min(info.max_compute_workgroup_size_x, profile.max_workgroup_invocations);
  }
  return info;
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int type_rank(DeviceType type) {
  switch (type) {
    case DeviceType::discrete_gpu:
      return 0;
    case DeviceType::integrated_gpu:
      return 1;
    case DeviceType::virtual_gpu:
      return 2;
    case DeviceType::cpu:
      return 3;
    case DeviceType::other:
      return 4;
  }
  return 4;
}

std::string device_list(const std::vector<PhysicalDevice>& devices) {
  if (devices.empty()) return "none";
  std::string out;
  for (const PhysicalDevice& d : devices) {
    if (!out.empty()) out += "; ";
    out += std::to_string(d.info.index) + ": " + d.info.name + " (" + to_string(d.info.type) + ")";
    if (!d.info.unsupported_reason.empty()) out += " [unusable: " + d.info.unsupported_reason + "]";
  }
  return out;
}

[[noreturn]] void unusable(const PhysicalDevice& d) {
  throw Error("Vulkan device " + std::to_string(d.info.index) + " (" + d.info.name +
              ") cannot run Grove kernels: it " + d.info.unsupported_reason);
}

}  // namespace

std::size_t select_device(const std::vector<PhysicalDevice>& devices, std::string_view select) {
  if (devices.empty()) {
    throw Error(
        "the Vulkan loader found no device; install a Vulkan driver, e.g. Debian's "
        "mesa-vulkan-drivers (lavapipe runs on any CPU)");
  }
  const std::string available = " Available devices: " + device_list(devices) + ".";
  if (select.empty()) {
    std::size_t best = devices.size();
    for (std::size_t i = 0; i < devices.size(); ++i) {
      if (!devices[i].info.unsupported_reason.empty()) continue;
      if (best == devices.size() || type_rank(devices[i].info.type) < type_rank(devices[best].info.type)) {
        best = i;
      }
    }
    if (best == devices.size()) {
      throw Error("no Vulkan device can run Grove kernels." + available +
                  " Install a Vulkan 1.1 driver, e.g. Debian's mesa-vulkan-drivers");
    }
    return best;
  }
  if (std::all_of(select.begin(), select.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    std::size_t index = 0;
    const auto [end, ec] = std::from_chars(select.data(), select.data() + select.size(), index);
    if (ec != std::errc() || end != select.data() + select.size() || index >= devices.size()) {
      throw Error("there is no Vulkan device with index " + std::string(select) +
                  " (GROVE_VULKAN_DEVICE or DeviceOptions::select)." + available);
    }
    if (!devices[index].info.unsupported_reason.empty()) unusable(devices[index]);
    return index;
  }
  const std::string needle = lower(select);
  std::size_t best = devices.size();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (lower(devices[i].info.name).find(needle) == std::string::npos) continue;
    if (best == devices.size() || (devices[best].info.unsupported_reason.empty() ? 0 : 1) >
                                      (devices[i].info.unsupported_reason.empty() ? 0 : 1)) {
      best = i;
    }
  }
  if (best == devices.size()) {
    throw Error("no Vulkan device name contains \"" + std::string(select) +
                "\" (GROVE_VULKAN_DEVICE or DeviceOptions::select: give an index or part of a "
                "name)." + available);
  }
  if (!devices[best].info.unsupported_reason.empty()) unusable(devices[best]);
  return best;
}

}  // namespace detail

std::vector<DeviceInfo> enumerate_devices() {
  detail::Instance instance(detail::InstanceOptions{});
  std::vector<DeviceInfo> out;
  for (detail::PhysicalDevice& d : instance.physical_devices()) out.push_back(std::move(d.info));
  return out;
}

}  // namespace grove::vk
