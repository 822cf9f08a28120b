// src/program/test_hooks.h — hooks for Grove's own tests into the backends;
// not part of the public API (include/grove), and not for applications.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace grove {
class Program;
namespace ir {
class Kernel;
}
namespace vk {
class Device;
}
}  // namespace grove

namespace grove::detail {

// Caps that make the Vulkan device look smaller (vk::DeviceProfile), for
// testing the fallbacks of a mobile-like device on a desktop one.
struct VulkanTestProfile {
  bool no_int64 = false;          // no shaderInt64, no 64-bit atomics
  bool no_float64 = false;        // no shaderFloat64
  bool no_float_atomics = false;  // no OpAtomicFAddEXT: f32 atomics become compare-and-swap loops
  uint64_t max_storage_buffer_range = 0;  // bytes; 0 = the device's own limit
  uint32_t max_workgroup_invocations = 0;  // invocations per group; 0 = the device's own limit
};

// Programs created after this call open their Vulkan device with `profile`
// (process-wide; set it back to {} when done).
void set_vulkan_test_profile(const VulkanTestProfile& profile);
VulkanTestProfile vulkan_test_profile();

// Every message the Vulkan validation layer reported in this process, oldest
// first (the Vulkan backend records them; tests fail on new ones).
std::vector<std::string> vulkan_validation_messages();
void record_vulkan_validation_message(std::string message);

// The Vulkan device `program` runs on (nullptr on other backends), so that a
// benchmark can race dispatches recorded by hand against Grove's on the same
// driver instance. Defined with the Vulkan backend.
vk::Device* vulkan_device(const Program& program);

// The serialized plan of kernel `name` of `program` (compiling it first).
std::vector<uint8_t> kernel_plan_bytes(Program& program, std::string_view name);
// Replaces the compiled form of kernel `name` by one the backend loads from
// `bytes` alone (the plan's own code, nothing from the IR), as an AOT module
// would; raises grove::Error for a plan the reader or the backend refuses.
void load_kernel_plan(Program& program, std::string_view name, std::span<const uint8_t> bytes);

// Calls `observer` with every kernel any Program compiles from now on,
// lowered, just before its backend gets it, and whether the Program is in
// debug mode (process-wide; {} removes it). The CUDA tests use it to
// translate every kernel of the API suite to PTX for ptxas.
using LoweredKernelObserver = std::function<void(const ir::Kernel& kernel, bool debug)>;
void set_lowered_kernel_observer(LoweredKernelObserver observer);
// Runs the observer, if any (ProgramImpl::compile).
void observe_lowered_kernel(const ir::Kernel& kernel, bool debug);

}  // namespace grove::detail
