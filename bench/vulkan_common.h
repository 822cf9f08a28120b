// vulkan_common.h — what the Vulkan benchmarks share: the device the GLSL
// baselines run on (Grove's own), pipelines of the embedded shaders, and
// the hand-written side of the GPU workloads on Vulkan (gpu_common.h).
//
// Built only with GROVE_WITH_VULKAN.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <grove/grove.h>

#include "gpu_common.h"
#include "runtime/vulkan/device.h"

namespace grove_bench::vkb {

// The baseline names of the records.
inline constexpr std::string_view kGlsl = "glsl";          // a hand-written shader through vk::Device
inline constexpr std::string_view kDevice = "device";      // the dispatch recorded by hand
inline constexpr std::string_view kBudget = "budget_5ms";  // a fixed 5 ms budget

// Whether a usable Vulkan device exists (the Vulkan benchmarks are
// registered only then); `why` says what is missing otherwise.
bool device_available(std::string* why);

// Opens the device Grove's Programs pick by default (Config::vulkan_device
// empty: GROVE_VULKAN_DEVICE, else the best one).
std::unique_ptr<grove::vk::Device> open_device();

// The Vulkan device `program` runs on, for the hand-written side of a pair:
// both sides then record into one VkDevice and its queue and share the
// driver's threads (two devices' worker threads on a 2-core machine made
// the launch-overhead ratio swing by 30% from run to run). The pointer keeps
// `owner`, which owns the program, alive.
std::shared_ptr<grove::vk::Device> device_of(std::shared_ptr<const void> owner, const grove::Program& program);

// A compute pipeline of an embedded shader (grove::shaders::<name>).
grove::vk::PipelineId shader_pipeline(grove::vk::Device& device, std::span<const std::uint32_t> spirv,
                                      std::uint32_t num_buffers, std::uint32_t push_constant_bytes,
                                      const std::string& name);

// The hand-written side of a pair on the Vulkan device `program` runs on
// (device_of): each kernel a shader of shaders/ (gpu::Backend::open).
std::shared_ptr<gpu::HandWritten> hand_written(std::shared_ptr<const void> owner, const grove::Program& program);

}  // namespace grove_bench::vkb
