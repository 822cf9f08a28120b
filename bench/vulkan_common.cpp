// vulkan_common.cpp — see vulkan_common.h.
#include "vulkan_common.h"

#include <bit>
#include <cmath>
#include <cstdio>

#include "program/program_impl.h"
#include "program/test_hooks.h"

namespace grove_bench::vkb {

bool device_available(std::string* why) {
  try {
    for (const grove::vk::DeviceInfo& info : grove::vk::enumerate_devices()) {
      if (info.unsupported_reason.empty()) return true;
    }
    *why = "no usable Vulkan device";
  } catch (const grove::Error& e) {
    *why = e.what();
  }
  return false;
}

std::unique_ptr<grove::vk::Device> open_device() {
  grove::vk::DeviceOptions options;  // select "": GROVE_VULKAN_DEVICE, else the best device
  return grove::vk::Device::create(options);
}

std::shared_ptr<grove::vk::Device> device_of(std::shared_ptr<const void> owner, const grove::Program& program) {
  grove::vk::Device* device = grove::detail::vulkan_device(program);
  if (device == nullptr) throw grove::Error("the program does not run on Vulkan");
  return {std::move(owner), device};
}

grove::vk::PipelineId shader_pipeline(grove::vk::Device& device, std::span<const std::uint32_t> spirv,
                                      std::uint32_t num_buffers, std::uint32_t push_constant_bytes,
                                      const std::string& name) {
  if (spirv.empty()) throw grove::Error("shader '" + name + "' is not embedded (shaders/CMakeLists.txt)");
  return device.create_pipeline(spirv, "main", num_buffers, push_constant_bytes, name);
}

void check(const std::string& error) {
  if (!error.empty()) throw grove::Error(error);
}

Pair glsl_pair(std::function<void()> grove_run, std::shared_ptr<grove::vk::Device> device,
               std::vector<grove::vk::Dispatch> dispatches, std::int64_t items_per_run) {
  Pair p;
  p.grove.run = std::move(grove_run);
  p.baseline.run = [device = std::move(device), dispatches = std::move(dispatches)] {
    device->launch(dispatches);
    device->sync();
  };
  p.items_per_run = items_per_run;
  return p;
}

std::uint32_t float_bits(float f) { return std::bit_cast<std::uint32_t>(f); }

grove::Expr hash_dsl(const grove::Expr& n, const grove::Expr& salt) {
  using grove::Expr;
  Expr h = n * 0x9E3779B1u ^ salt;
  h = (h ^ (h >> 15u)) * 0x2C1B3C6Du;
  h = (h ^ (h >> 12u)) * 0x297A2D39u;
  return h ^ (h >> 15u);
}

std::string compare(std::span<const float> got, std::span<const float> want, float tolerance,
                    std::string_view what) {
  if (got.size() != want.size()) {
    return std::string(what) + ": " + std::to_string(got.size()) + " values, expected " +
           std::to_string(want.size());
  }
  size_t first = got.size(), wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= tolerance)) {
      if (wrong++ == 0) first = i;
    }
  }
  if (wrong == 0) return {};
  char buf[160];
  std::snprintf(buf, sizeof buf, ": %zu mismatch(es), first at %zu: %.9g, expected %.9g", wrong, first,
                static_cast<double>(got[first]), static_cast<double>(want[first]));
  return std::string(what) + buf;
}

}  // namespace grove_bench::vkb
