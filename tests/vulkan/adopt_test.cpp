// Device::adopt: Grove on a VkInstance, VkDevice and queue that an
// application made itself through its own loader (as an engine embedding
// Grove does). Grove's work runs there, Grove's objects go away with the
// Device, and the application's device stays usable and is never destroyed
// by Grove.
//
// The application here loads Vulkan with its own volk, compiled into this
// test from Debian's volk.h/volk.c as volk's users do, with volk's usual
// global names (vkCreateInstance, ...): Grove's copy of volk, linked into
// the same executable, must neither clash with them at link time nor
// change what they point to.
#include <gtest/gtest.h>

#define VOLK_IMPLEMENTATION
#include <volk.h>

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

// The application's side: its own volk, instance, device and queue.
struct Application {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t compute_family = UINT32_MAX, other_family = UINT32_MAX;

  // Empty on success, else why the application could not start.
  std::string start() {
    if (volkInitialize() != VK_SUCCESS) return "volkInitialize found no Vulkan loader";
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    if (vkCreateInstance(&ci, nullptr, &instance) != VK_SUCCESS) return "vkCreateInstance failed";
    volkLoadInstance(instance);
    uint32_t count = 1;
    VkResult r = vkEnumeratePhysicalDevices(instance, &count, &physical);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || count == 0) return "no physical device";
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, nullptr);
    std::vector<VkQueueFamilyProperties> families(n);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, families.data());
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
    if (vkCreateDevice(physical, &di, nullptr, &device) != VK_SUCCESS) return "vkCreateDevice failed";
    volkLoadDevice(device);  // the application's globals now call its device directly
    vkGetDeviceQueue(device, compute_family, 0, &queue);
    return "";
  }

  // The application's device still works through its own volk: it can wait
  // and make a buffer, and volk still holds the application's instance and
  // device (Grove's loads went to Grove's copy).
  bool still_usable() const {
    if (volkGetLoadedInstance() != instance || volkGetLoadedDevice() != device) return false;
    if (vkDeviceWaitIdle(device) != VK_SUCCESS) return false;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = 256;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    VkBuffer b = VK_NULL_HANDLE;
    if (vkCreateBuffer(device, &bi, nullptr, &b) != VK_SUCCESS) return false;
    vkDestroyBuffer(device, b, nullptr);
    return true;
  }

  ExternalDevice external() const {
    ExternalDevice e;
    e.instance = instance;
    e.physical_device = physical;
    e.device = device;
    e.queue = queue;
    e.queue_family = compute_family;
    e.get_instance_proc_addr = reinterpret_cast<void*>(vkGetInstanceProcAddr);
    e.api_version = VK_API_VERSION_1_1;
    return e;
  }

  ~Application() {
    if (device) vkDestroyDevice(device, nullptr);
    if (instance) vkDestroyInstance(instance, nullptr);
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

// Grove's own device (its own instance through the system loader) and the
// adopted one side by side, each launched in turn: each keeps its own
// entry points, and the application's volk is untouched by either.
TEST_F(AdoptedDevice, GrovesOwnDeviceAndTheAdoptedOneWorkSideBySide) {
  std::unique_ptr<Device> own = Device::create();
  std::unique_ptr<Device> adopted = Device::adopt(app_.external());
  const uint32_t n = 256;
  const PipelineId fill_own = own->create_pipeline(shaders::fill_u32, "main", 1, 12, "fill_u32");
  const PipelineId fill_adopted = adopted->create_pipeline(shaders::fill_u32, "main", 1, 12, "fill_u32");
  const BufferId b_own = own->create_buffer(4 * n, "own");
  const BufferId b_adopted = adopted->create_buffer(4 * n, "adopted");
  for (uint32_t round = 0; round < 2; ++round) {
    own->launch({Dispatch{fill_own, {b_own}, {0, n, 100 + round}, 4}});
    adopted->launch({Dispatch{fill_adopted, {b_adopted}, {0, n, 200 + round}, 4}});
    std::vector<uint32_t> a(n), b(n);
    own->read_buffer(b_own, 0, a.data(), 4 * n);
    adopted->read_buffer(b_adopted, 0, b.data(), 4 * n);
    for (uint32_t i = 0; i < n; ++i) {
      ASSERT_EQ(a[i], 100 + round) << i;
      ASSERT_EQ(b[i], 200 + round) << i;
    }
  }
  adopted.reset();
  own.reset();
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
