// runtime/vulkan/target.h — a Vulkan target description: what SPIR-V code
// may use and assume of the device that runs it, with no device at hand.
// The code generator compiles for one (Config::vulkan_target, `grove aot
// --target`; by default the one a device describes), the plan records it
// (KernelPlan::target), and a device loads only plans whose target it
// covers. So AOT modules for Vulkan can be made on a machine with no
// Vulkan driver.
//
// Its text: comma-separated items, in any order —
//   a preset        vulkan1.1 (what every Vulkan 1.1 device offers), desktop
//                   (a desktop GPU: 64-bit values and atomics, subgroup
//                   operations, float controls), lavapipe (Mesa's CPU driver,
//                   with its workarounds)
//   a feature       a plan feature's name (runtime/core/features.def):
//                   shader_int64, shader_float64, atomic_int64,
//                   atomic_float32_add, subgroup_arithmetic (basic,
//                   arithmetic and ballot operations),
//                   signed_zero_inf_nan_preserve
//   local_size=N    invocations per group of a parallel task (1 to 1024)
//   push_constants=N  push-constant bytes the device takes (128 to 4096): a
//                     kernel's arguments and its message base
//   llvmpipe        the code carries the workarounds Mesa's llvmpipe needs
//                   (its loop limit, its float folding); such a device loads
//                   only code that does
// Later items add to earlier ones ("vulkan1.1,shader_int64").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/core/plan.h"
#include "runtime/vulkan/device.h"

namespace grove::vk {

struct Target {
  rt::Features features;
  std::uint32_t local_size = 128;
  std::uint32_t push_constants = 128;
  bool llvmpipe = false;
  bool operator==(const Target& o) const;
};

// Raises grove::Error naming `what` ("Config::vulkan_target") and the item
// it does not know, with the items it does.
Target parse_target(std::string_view text, std::string_view what);
// The canonical text: every item spelled out, in one order
// (parse_target(describe(t)) == t).
std::string describe(const Target& target);
// What a device offers: its features, the local size Grove prefers within
// its limits, its argument bytes, and llvmpipe's workarounds if it is one.
Target target_of(const DeviceInfo& info);
// Empty when `info` runs code made for `target`; else what is wrong, as
// the end of a sentence naming the device ("lacks shaderInt64, ...").
std::string mismatch(const DeviceInfo& info, const Target& target);

}  // namespace grove::vk
