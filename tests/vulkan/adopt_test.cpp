// Device::adopt: Grove on a VkInstance, VkDevice and queue that an
// application made itself through its own loader (as an engine embedding
// Grove does). Grove's work runs there, Grove's objects go away with the
// Device, and the application's device stays usable and is never destroyed
// by Grove.
#include <dlfcn.h>
#include <gtest/gtest.h>

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grove/error.h"
#include "runtime/vulkan/device.h"
#include "runtime/vulkan/vulkan_device.h"
#include "shaders/embedded.h"
#include "vulkan_fixture.h"

namespace grove::vk {
namespace {

// The application's side: its own loader, instance, device and queue.
struct Application {
  void* loader = nullptr;
  PFN_vkGetInstanceProcAddr gipa = nullptr;
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t compute_family = UINT32_MAX, other_family = UINT32_MAX;
  PFN_vkDestroyInstance destroy_instance = nullptr;
  PFN_vkDestroyDevice destroy_device = nullptr;
  PFN_vkDeviceWaitIdle wait_idle = nullptr;
  PFN_vkCreateBuffer create_buffer = nullptr;
  PFN_vkDestroyBuffer destroy_buffer = nullptr;

  template <typename F>
  F instance_fn(const char* name) {
    return reinterpret_cast<F>(gipa(instance, name));
  }

  // Empty on success, else why the application could not start.
  std::string start() {
    loader = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!loader) return "no libvulkan.so.1";
    gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(loader, "vkGetInstanceProcAddr"));
    auto create_instance = instance_fn<PFN_vkCreateInstance>("vkCreateInstance");
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    if (create_instance(&ci, nullptr, &instance) != VK_SUCCESS) return "vkCreateInstance failed";
    destroy_instance = instance_fn<PFN_vkDestroyInstance>("vkDestroyInstance");
    auto enumerate = instance_fn<PFN_vkEnumeratePhysicalDevices>("vkEnumeratePhysicalDevices");
    uint32_t count = 1;
    VkResult r = enumerate(instance, &count, &physical);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || count == 0) return "no physical device";
    auto families_of =
        instance_fn<PFN_vkGetPhysicalDeviceQueueFamilyProperties>("vkGetPhysicalDeviceQueueFamilyProperties");
    uint32_t n = 0;
    families_of(physical, &n, nullptr);
    std::vector<VkQueueFamilyProperties> families(n);
    families_of(physical, &n, families.data());
    for (uint32_t f = 0; f < n; ++f) {
      if (families[f].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        if (compute_family == UINT32_MAX) compute_family = f;
      } else {
        other_family = f;
      }
    }
    if (compute_family == UINT32_MAX) return "no compute queue";
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qi.queueFamilyIndex = compute_family;
    qi.queueCount = 1;
    qi.pQueuePriorities = &priority;
    VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    di.queueCreateInfoCount = 1;
    di.pQueueCreateInfos = &qi;
    if (instance_fn<PFN_vkCreateDevice>("vkCreateDevice")(physical, &di, nullptr, &device) != VK_SUCCESS)
      return "vkCreateDevice failed";
    auto gdpa = instance_fn<PFN_vkGetDeviceProcAddr>("vkGetDeviceProcAddr");
    destroy_device = reinterpret_cast<PFN_vkDestroyDevice>(gdpa(device, "vkDestroyDevice"));
    wait_idle = reinterpret_cast<PFN_vkDeviceWaitIdle>(gdpa(device, "vkDeviceWaitIdle"));
    create_buffer = reinterpret_cast<PFN_vkCreateBuffer>(gdpa(device, "vkCreateBuffer"));
    destroy_buffer = reinterpret_cast<PFN_vkDestroyBuffer>(gdpa(device, "vkDestroyBuffer"));
    reinterpret_cast<PFN_vkGetDeviceQueue>(gdpa(device, "vkGetDeviceQueue"))(device, compute_family, 0, &queue);
    return "";
  }

  // The application's device still works: it can wait and make a buffer.
  bool still_usable() const {
    if (wait_idle(device) != VK_SUCCESS) return false;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = 256;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    VkBuffer b = VK_NULL_HANDLE;
    if (create_buffer(device, &bi, nullptr, &b) != VK_SUCCESS) return false;
    destroy_buffer(device, b, nullptr);
    return true;
  }

  ExternalDevice external() const {
    ExternalDevice e;
    e.instance = instance;
    e.physical_device = physical;
    e.device = device;
    e.queue = queue;
    e.queue_family = compute_family;
    e.get_instance_proc_addr = reinterpret_cast<void*>(gipa);
    e.api_version = VK_API_VERSION_1_1;
    return e;
  }

  ~Application() {
    if (device) destroy_device(device, nullptr);
    if (instance) destroy_instance(instance, nullptr);
    if (loader) dlclose(loader);
  }
};

std::string error_of(const ExternalDevice& e) {
  try {
    Device::adopt(e);
  } catch (const Error& err) {
    return err.what();
  }
  return "(no error)";
}

class AdoptedDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::vulkan_unavailable_reason().empty()) GTEST_SKIP() << testing::vulkan_unavailable_reason();
    const std::string why = app_.start();
    ASSERT_EQ(why, "");
  }
  Application app_;
};

TEST_F(AdoptedDevice, RunsWorkOnTheApplicationsDeviceAndLeavesItAlive) {
  for (int round = 0; round < 2; ++round) {  // a second Device on the same VkDevice after the first
    std::unique_ptr<Device> dev = Device::adopt(app_.external());
    // Features the application did not enable are not used, whatever the device has.
    EXPECT_FALSE(dev->info().shader_int64);
    EXPECT_FALSE(dev->info().atomic_float32_add);
    const uint32_t n = 1000;
    const BufferId b = dev->create_buffer(4 * n, "b");
    const PipelineId fill = dev->create_pipeline(shaders::fill_u32, "main", 1, 12, "fill_u32");
    dev->launch({Dispatch{fill, {b}, {0, n, 7u + static_cast<uint32_t>(round)}, 4}});
    std::vector<uint32_t> words(n);
    dev->read_buffer(b, 0, words.data(), 4 * n);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(words[i], 7u + static_cast<uint32_t>(round)) << i;
    dev->launch({Dispatch{fill, {b}, {0, n, 1}, 4}});  // still queued when the Device goes
    dev.reset();
    EXPECT_TRUE(app_.still_usable());
  }
}

TEST_F(AdoptedDevice, TheRuntimesVulkanDeviceRunsOnIt) {
  RuntimeOptions options;
  options.external = app_.external();
  std::unique_ptr<rt::Device> dev = make_vulkan_device(options);
  EXPECT_FALSE(dev->name().empty());
  dev->create_buffer(0, 64, std::vector<uint32_t>{1, 2, 3});
  uint32_t words[4] = {9, 9, 9, 9};
  dev->read_words(0, 0, 4, words);
  EXPECT_EQ(words[0], 1u);
  EXPECT_EQ(words[2], 3u);
  EXPECT_EQ(words[3], 0u);  // zero-filled past the head
  dev.reset();
  EXPECT_TRUE(app_.still_usable());
}

TEST_F(AdoptedDevice, MissingOrWrongHandlesNameTheField) {
  ExternalDevice e = app_.external();
  e.instance = nullptr;
  EXPECT_NE(error_of(e).find("VulkanHandles::instance is null"), std::string::npos) << error_of(e);
  e = app_.external();
  e.device = nullptr;
  EXPECT_NE(error_of(e).find("VulkanHandles::device (a VkDevice) is null"), std::string::npos) << error_of(e);
  e = app_.external();
  e.queue = nullptr;
  EXPECT_NE(error_of(e).find("VulkanHandles::queue (a VkQueue) is null"), std::string::npos) << error_of(e);
  e = app_.external();
  e.physical_device = reinterpret_cast<void*>(&e);  // not one of the instance's
  EXPECT_NE(error_of(e).find("is not one of the physical devices"), std::string::npos) << error_of(e);
  e = app_.external();
  e.queue_family = 99;
  EXPECT_NE(error_of(e).find("VulkanHandles::queue_family 99"), std::string::npos) << error_of(e);
  e = app_.external();
  e.api_version = VK_API_VERSION_1_0;
  EXPECT_NE(error_of(e).find("Vulkan 1.1 or newer"), std::string::npos) << error_of(e);
  DeviceOptions validated;
  validated.validation = true;
  std::string msg;
  try {
    Device::adopt(app_.external(), validated);
  } catch (const Error& err) {
    msg = err.what();
  }
  EXPECT_NE(msg.find("on the application's own VkInstance"), std::string::npos) << msg;
  EXPECT_TRUE(app_.still_usable());
}

}  // namespace
}  // namespace grove::vk
