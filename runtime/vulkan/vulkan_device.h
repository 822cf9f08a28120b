// runtime/vulkan/vulkan_device.h — rt::Device on a Vulkan device: tree
// buffers, kernels loaded from plans (one compute pipeline per task, from the
// plan's SPIR-V), launches queued without waiting, and the context buffer
// through which print output and failed assertions come back (formatted on
// the host at the next sync or read; in debug mode every launch waits, so an
// error names the launch that caused it). Knows nothing of the IR.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/core/device.h"
#include "runtime/vulkan/device.h"

namespace grove::vk {

struct RuntimeOptions {
  bool debug = false;  // every launch waits for its result
  rt::PrintSink print;  // where print output goes (stdout if empty)
  DeviceOptions device;
  // Run on an application's own Vulkan device (Device::adopt) instead of
  // opening one; unset: Device::create(device).
  std::optional<ExternalDevice> external;
};

// The plan features (runtime/core/features.def) a device offers.
rt::Features device_features(const DeviceInfo& info);

// Opens a Vulkan device; raises grove::Error saying what is missing.
std::unique_ptr<rt::Device> make_vulkan_device(const RuntimeOptions& options);
// The vk::Device under an rt::Device made by make_vulkan_device (nullptr
// for any other device), for the code generator's options and benchmarks.
Device* vulkan_device_of(rt::Device& device);
// The VkBuffer (as void*) of buffer `id` of a Vulkan rt::Device; raises
// grove::Error for any other device.
void* vulkan_buffer_of(rt::Device& device, int id);

}  // namespace grove::vk
