// tests/vulkan/vulkan_fixture.h — the fixture every Vulkan test uses: it
// probes for a device (skipping with the reason if there is none), opens it
// with the validation layer on, and fails the test if the layer said anything.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grove/error.h"
#include "runtime/vulkan/device.h"

namespace grove::vk::testing {

// Empty if a usable Vulkan device exists, else why not (probed once).
inline const std::string& vulkan_unavailable_reason() {
  static const std::string reason = []() -> std::string {
    try {
      for (const DeviceInfo& d : enumerate_devices()) {
        if (d.unsupported_reason.empty()) return "";
      }
      return "the Vulkan loader reports no usable device";
    } catch (const Error& e) {
      return e.what();
    }
  }();
  return reason;
}

// DeviceOptions for tests: validation always on.
inline DeviceOptions validated(DeviceOptions options = {}) {
  options.validation = true;
  return options;
}

inline std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// Opens a validated device, or returns null with *skip_reason saying why
// the test cannot run (no device, or no validation layer to check it with).
// Other errors propagate: they are failures.
inline std::unique_ptr<Device> open_device(const DeviceOptions& options, std::string* skip_reason) {
  if (!vulkan_unavailable_reason().empty()) {
    *skip_reason = "no Vulkan device: " + vulkan_unavailable_reason();
    return nullptr;
  }
  try {
    return Device::create(validated(options));
  } catch (const Error& e) {
    if (std::string(e.what()).find("VK_LAYER_KHRONOS_validation") != std::string::npos) {
      *skip_reason = e.what();
      return nullptr;
    }
    throw;
  }
}

// Fails the test if the validation layer reported anything on `device`.
inline void expect_no_validation_messages(const Device& device) {
  const std::vector<std::string> messages = device.validation_messages();
  EXPECT_TRUE(messages.empty()) << "the Vulkan validation layer reported:\n" << join(messages);
}

// In a TEST body: `GROVE_OPEN_VULKAN_OR_SKIP(device, options);` declares
// std::unique_ptr<Device> device, or skips the test with the reason.
#define GROVE_OPEN_VULKAN_OR_SKIP(var, options)                                      \
  std::string var##_skip_reason;                                                     \
  std::unique_ptr<::grove::vk::Device> var =                                         \
      ::grove::vk::testing::open_device((options), &var##_skip_reason);              \
  if (!var) GTEST_SKIP() << var##_skip_reason

class VulkanTest : public ::testing::Test {
 protected:
  // Override to open the fixture's device with other options.
  virtual DeviceOptions options() const { return {}; }

  void SetUp() override {
    std::string reason;
    device_ = open_device(options(), &reason);
    if (!device_) GTEST_SKIP() << reason;
  }

  void TearDown() override {
    if (!device_) return;
    device_->sync();
    expect_no_validation_messages(*device_);
  }

  Device& device() { return *device_; }

  std::vector<std::uint32_t> read_words(BufferId buffer) {
    std::vector<std::uint32_t> words(device_->buffer_size(buffer) / 4);
    device_->read_buffer(buffer, 0, words.data(), words.size() * 4);
    return words;
  }

  std::unique_ptr<Device> device_;
};

}  // namespace grove::vk::testing
