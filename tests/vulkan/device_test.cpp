// tests/vulkan/device_test.cpp — enumeration, device selection, profiles,
// validation routing and the errors for missing drivers.
#include <gtest/gtest.h>

#include <link.h>

#include <cctype>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "tests/vulkan/vulkan_fixture.h"

namespace grove::vk::testing {
namespace {

const std::uint32_t kAddU64[] = {
#include "add_u64.inc"
};

// Sets an environment variable for the lifetime of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(VulkanDevices, EnumerationFindsLavapipe) {
  if (!vulkan_unavailable_reason().empty()) GTEST_SKIP() << vulkan_unavailable_reason();
  const std::vector<DeviceInfo> devices = enumerate_devices();
  ASSERT_FALSE(devices.empty());
  const DeviceInfo* lavapipe = nullptr;
  for (const DeviceInfo& d : devices) {
    std::cout << "[ device   ] " << d.index << ": " << d.name << " (" << to_string(d.type)
              << ", Vulkan " << version_string(d.api_version) << ") int64=" << d.shader_int64
              << " float64=" << d.shader_float64 << " int16=" << d.shader_int16
              << " storage16=" << d.storage_buffer_16bit << " atomic_int64=" << d.atomic_int64
              << " atomic_f32_add=" << d.atomic_float32_add
              << " atomic_f32_minmax=" << d.atomic_float32_min_max
              << " max_storage_buffer_range=" << d.max_storage_buffer_range
              << " max_alloc=" << d.max_memory_allocation_size << " max_groups=["
              << d.max_compute_workgroup_count[0] << "," << d.max_compute_workgroup_count[1] << ","
              << d.max_compute_workgroup_count[2] << "] max_wg_x=" << d.max_compute_workgroup_size_x
              << " max_invocations=" << d.max_compute_workgroup_invocations
              << " push_constants=" << d.max_push_constants_size
              << " buffers_per_stage=" << d.max_storage_buffers_per_stage
              << " subgroup=" << d.subgroup_size << " unified_memory=" << d.unified_memory << "\n";
    if (d.name.find("llvmpipe") != std::string::npos) lavapipe = &d;
  }
  if (!lavapipe) GTEST_SKIP() << "lavapipe (Debian's mesa-vulkan-drivers) is not installed";
  EXPECT_EQ(lavapipe->type, DeviceType::cpu);
  EXPECT_TRUE(lavapipe->unsupported_reason.empty()) << lavapipe->unsupported_reason;
  EXPECT_GE(lavapipe->api_version, (1u << 22) | (1u << 12));  // 1.1
  EXPECT_GT(lavapipe->max_storage_buffer_range, 0u);
  EXPECT_GE(lavapipe->max_compute_workgroup_count[0], 65535u);
  EXPECT_GE(lavapipe->max_compute_workgroup_size_x, 64u);
  EXPECT_GE(lavapipe->max_push_constants_size, 128u);
  EXPECT_GE(lavapipe->max_storage_buffers_per_stage, 4u);
  EXPECT_GT(lavapipe->subgroup_size, 0u);
  EXPECT_TRUE(lavapipe->unified_memory);  // a CPU device: its memory is the host's
  EXPECT_TRUE(lavapipe->shader_int64);
}

TEST(VulkanDevices, DefaultSelectionOpensAUsableDevice) {
  GROVE_OPEN_VULKAN_OR_SKIP(device, DeviceOptions{});
  EXPECT_FALSE(device->info().name.empty());
  EXPECT_TRUE(device->info().unsupported_reason.empty());
  expect_no_validation_messages(*device);
}

TEST(VulkanDevices, SelectByIndex) {
  DeviceOptions options;
  options.select = "0";
  GROVE_OPEN_VULKAN_OR_SKIP(device, options);
  EXPECT_EQ(device->info().index, 0u);
  EXPECT_EQ(device->info().name, enumerate_devices()[0].name);
  expect_no_validation_messages(*device);
}

TEST(VulkanDevices, SelectByCaseInsensitiveNameSubstring) {
  if (!vulkan_unavailable_reason().empty()) GTEST_SKIP() << vulkan_unavailable_reason();
  const DeviceInfo first = enumerate_devices()[0];
  DeviceOptions options;
  options.select = upper(first.name.substr(0, std::min<std::size_t>(first.name.size(), 6)));
  GROVE_OPEN_VULKAN_OR_SKIP(device, options);
  EXPECT_EQ(device->info().name, first.name);
  expect_no_validation_messages(*device);
}

TEST(VulkanDevices, NameMatchingNothingIsAClearError) {
  if (!vulkan_unavailable_reason().empty()) GTEST_SKIP() << vulkan_unavailable_reason();
  DeviceOptions options;
  options.select = "no-such-gpu-9000";
  const std::string message = error_of([&] { Device::create(validated(options)); });
  EXPECT_NE(message.find("no Vulkan device name contains \"no-such-gpu-9000\""), std::string::npos)
      << message;
  EXPECT_NE(message.find("Available devices: 0: " + enumerate_devices()[0].name), std::string::npos)
      << message;
}

TEST(VulkanDevices, IndexOutOfRangeIsAClearError) {
  if (!vulkan_unavailable_reason().empty()) GTEST_SKIP() << vulkan_unavailable_reason();
  DeviceOptions options;
  options.select = "4096";
  const std::string message = error_of([&] { Device::create(validated(options)); });
  EXPECT_NE(message.find("no Vulkan device with index 4096"), std::string::npos) << message;
}

TEST(VulkanDevices, EnvironmentSelectsWhenOptionsDoNot) {
  if (!vulkan_unavailable_reason().empty()) GTEST_SKIP() << vulkan_unavailable_reason();
  ScopedEnv env("GROVE_VULKAN_DEVICE", "no-such-gpu-from-env");
  const std::string message = error_of([] { Device::create(validated()); });
  EXPECT_NE(message.find("no-such-gpu-from-env"), std::string::npos) << message;
  // An explicit selection wins over the environment.
  DeviceOptions options;
  options.select = "0";
  GROVE_OPEN_VULKAN_OR_SKIP(device, options);
  EXPECT_EQ(device->info().index, 0u);
}

TEST(VulkanDevices, MissingDriverSaysWhatToInstall) {
  if (!vulkan_unavailable_reason().empty()) GTEST_SKIP() << vulkan_unavailable_reason();
  // Point the loader at a driver list with nothing in it.
  ScopedEnv icd("VK_ICD_FILENAMES", "/nonexistent/grove_no_driver.json");
  ScopedEnv driver_files("VK_DRIVER_FILES", "/nonexistent/grove_no_driver.json");
  const std::string message = error_of([] { Device::create(); });
  EXPECT_NE(message.find("mesa-vulkan-drivers"), std::string::npos) << message;
}

// The libraries loaded while the process's first device was made.
std::set<std::string> loaded_objects() {
  std::set<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name && *info->dlpi_name) static_cast<std::set<std::string>*>(out)->insert(info->dlpi_name);
        return 0;
      },
      &names);
  return names;
}

// Unloading a driver when its last instance goes and loading it again with
// the next one exhausted glibc's static TLS on NVIDIA's driver (an H200,
// after about 25 Programs): the loader and the drivers stay loaded once the
// process has used them. (ctest runs each test in a process of its own, so
// the device made here is the process's first.)
TEST(VulkanDevices, TheDriverStaysLoadedAfterTheLastDeviceGoes) {
  if (!vulkan_unavailable_reason().empty()) GTEST_SKIP() << vulkan_unavailable_reason();
  const std::set<std::string> before = loaded_objects();
  std::set<std::string> with_device;
  {
    std::unique_ptr<Device> device = Device::create();
    with_device = loaded_objects();
  }
  const std::set<std::string> after = loaded_objects();
  for (const std::string& name : with_device)
    if (!before.count(name)) {
      EXPECT_TRUE(after.count(name)) << name << " was unloaded with the last device";
    }
  for (int n = 0; n < 8; ++n) EXPECT_NO_THROW(Device::create()) << "device " << n;
}

TEST(VulkanDevices, ProfileCapsFeaturesAndBufferSize) {
  DeviceOptions options;
  options.profile.no_int64 = true;
  options.profile.no_float64 = true;
  options.profile.no_float_atomics = true;
  options.profile.max_storage_buffer_range = 1 << 20;
  GROVE_OPEN_VULKAN_OR_SKIP(device, options);
  const DeviceInfo& info = device->info();
  EXPECT_FALSE(info.shader_int64);
  EXPECT_FALSE(info.atomic_int64);
  EXPECT_FALSE(info.shader_float64);
  EXPECT_FALSE(info.atomic_float32_add);
  EXPECT_FALSE(info.atomic_float32_min_max);
  EXPECT_EQ(info.max_storage_buffer_range, 1u << 20);

  const BufferId fits = device->create_buffer(1 << 20, "fits");
  EXPECT_EQ(device->buffer_size(fits), 1u << 20);
  const std::string message = error_of([&] { device->create_buffer((1 << 20) + 4, "too_big"); });
  EXPECT_NE(message.find("storage buffer 'too_big' of 1048580 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("at most 1048576 bytes"), std::string::npos) << message;
  // The device is still usable after the rejection.
  std::uint32_t word = 1;
  device->read_buffer(fits, 0, &word, 4);
  EXPECT_EQ(word, 0u);
  device->sync();
  expect_no_validation_messages(*device);
}

TEST(VulkanDevices, BufferAboveDeviceLimitIsRejected) {
  GROVE_OPEN_VULKAN_OR_SKIP(device, DeviceOptions{});
  const std::uint64_t limit = device->info().max_storage_buffer_range;
  const std::string message = error_of([&] { device->create_buffer(limit + 1); });
  EXPECT_NE(message.find(std::to_string(limit + 1) + " bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("at most " + std::to_string(limit) + " bytes"), std::string::npos) << message;
  EXPECT_NE(error_of([&] { device->create_buffer(0); }).find("empty"), std::string::npos);
  expect_no_validation_messages(*device);
}

// The profile really disables the feature on the VkDevice: the validation
// layer flags a shader that uses Int64, and its messages reach both the
// callback and validation_messages().
TEST(VulkanDevices, CappedFeatureIsEnforcedByValidation) {
  std::vector<std::string> seen;
  DeviceOptions options;
  options.profile.no_int64 = true;
  options.on_validation_message = [&seen](std::string_view m) { seen.emplace_back(m); };
  GROVE_OPEN_VULKAN_OR_SKIP(device, options);
  try {
    device->create_pipeline(kAddU64, "main", 1, 4, "add_u64_without_int64");
  } catch (const Error&) {
    // A driver may also refuse it; the validation message is what we check.
  }
  const std::vector<std::string> messages = device->validation_messages();
  ASSERT_FALSE(messages.empty());
  EXPECT_EQ(seen, messages);
  EXPECT_NE(join(messages).find("Int64"), std::string::npos) << join(messages);

  device->clear_validation_messages();
  EXPECT_TRUE(device->validation_messages().empty());
}

TEST(VulkanDevices, EnvironmentEnablesValidation) {
  if (!vulkan_unavailable_reason().empty()) GTEST_SKIP() << vulkan_unavailable_reason();
  ScopedEnv env("GROVE_VULKAN_VALIDATION", "1");
  DeviceOptions options;  // validation left off here
  options.profile.no_int64 = true;
  std::unique_ptr<Device> device;
  try {
    device = Device::create(options);
  } catch (const Error& e) {
    if (std::string(e.what()).find("VK_LAYER_KHRONOS_validation") == std::string::npos) throw;
    GTEST_SKIP() << e.what();
  }
  try {
    device->create_pipeline(kAddU64, "main", 1, 4, "add_u64_without_int64");
  } catch (const Error&) {
  }
  EXPECT_FALSE(device->validation_messages().empty());
}

TEST(VulkanDevices, Int64ShaderIsCleanWhenTheFeatureIsOn) {
  GROVE_OPEN_VULKAN_OR_SKIP(device, DeviceOptions{});
  if (!device->info().shader_int64) GTEST_SKIP() << device->info().name << " has no shaderInt64";
  const PipelineId p = device->create_pipeline(kAddU64, "main", 1, 4, "add_u64");
  const BufferId values = device->create_buffer(8 * 100);
  std::vector<std::uint64_t> in(100);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = (std::uint64_t{1} << 40) + i;
  device->write_buffer(values, 0, in.data(), 8 * in.size());
  device->launch({Dispatch{p, {values}, {100}, 2}});
  std::vector<std::uint64_t> out(100);
  device->read_buffer(values, 0, out.data(), 8 * out.size());
  for (std::size_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i], in[i] + 1) << i;
  expect_no_validation_messages(*device);
}

}  // namespace
}  // namespace grove::vk::testing
