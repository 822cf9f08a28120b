// runtime/vulkan/target.cpp — Vulkan target descriptions (target.h).
#include "runtime/vulkan/target.h"

#include <algorithm>
#include <charconv>

#include "grove/error.h"
#include "runtime/vulkan/vulkan_device.h"

namespace grove::vk {

namespace {

// Invocations per group of a parallel task a device's target asks for: a
// multiple of every common subgroup size (8 on lavapipe, 32 on NVIDIA, 64
// on AMD, 16-32 on mobile), lowered to the device's limits (Vulkan
// guarantees 128). 256 rather than 128 halves the groups a dense launch
// dispatches, which lavapipe pays for one by one (saxpy over 1M f32,
// measured in vk_saxpy: 3-7% faster).
constexpr std::uint32_t kPreferredLocalSize = 256;
constexpr std::uint32_t kMaxLocalSize = 1024;
constexpr std::uint32_t kMinPushConstants = 128, kMaxPushConstants = 4096;

bool is_llvmpipe(const DeviceInfo& info) { return info.name.find("llvmpipe") != std::string::npos; }

Target preset_vulkan11() { return Target{}; }

Target preset_desktop() {
  Target t;
  t.features.shader_int64 = t.features.shader_float64 = t.features.atomic_int64 = true;
  t.features.subgroup_arithmetic = t.features.signed_zero_inf_nan_preserve = true;
  t.local_size = kPreferredLocalSize;
  return t;
}

// Mesa 22.3's lavapipe (Debian 12), as Grove's CI runs it.
Target preset_lavapipe() {
  Target t = preset_desktop();
  t.features.atomic_float32_add = true;
  t.llvmpipe = true;
  return t;
}

constexpr std::string_view kItems =
    "vulkan1.1, desktop, lavapipe, shader_int64, shader_float64, atomic_int64, atomic_float32_add, "
    "subgroup_arithmetic, signed_zero_inf_nan_preserve, denorm_preserve, local_size=N, push_constants=N, llvmpipe";

std::uint32_t number(std::string_view item, std::string_view value, std::uint32_t lo, std::uint32_t hi,
                     std::string_view what) {
  std::uint32_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n < lo || n > hi)
    throw Error(std::string(what) + ": '" + std::string(item) + "' takes a number from " + std::to_string(lo) +
                " to " + std::to_string(hi));
  return n;
}

}  // namespace

bool Target::operator==(const Target& o) const {
  bool same = local_size == o.local_size && push_constants == o.push_constants && llvmpipe == o.llvmpipe;
#define GROVE_FEATURE(field, device_name) same = same && features.field == o.features.field;
#include "runtime/core/features.def"
  return same;
}

Target parse_target(std::string_view text, std::string_view what) {
  Target t;
  if (text.empty()) throw Error(std::string(what) + " is empty; name a Vulkan target (" + std::string(kItems) + ")");
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    const size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    bool known = true;
    if (eq != std::string_view::npos) {
      if (key == "local_size") t.local_size = number(item, value, 1, kMaxLocalSize, what);
      else if (key == "push_constants") t.push_constants = number(item, value, kMinPushConstants, kMaxPushConstants, what);
      else known = false;
    } else if (item == "vulkan1.1") {
      t = preset_vulkan11();
    } else if (item == "desktop") {
      t = preset_desktop();
    } else if (item == "lavapipe") {
      t = preset_lavapipe();
    } else if (item == "llvmpipe") {
      t.llvmpipe = true;
    } else {
      known = false;
#define GROVE_FEATURE(field, device_name) \
  if (item == #field) {                   \
    t.features.field = true;              \
    known = true;                         \
  }
#include "runtime/core/features.def"
    }
    if (!known)
      throw Error(std::string(what) + ": no Vulkan target item '" + std::string(item) + "' (there are: " +
                  std::string(kItems) + ")");
  }
  return t;
}

std::string describe(const Target& target) {
  std::string out;
#define GROVE_FEATURE(field, device_name) \
  if (target.features.field) out += #field ",";
#include "runtime/core/features.def"
  out += "local_size=" + std::to_string(target.local_size) + ",push_constants=" + std::to_string(target.push_constants);
  if (target.llvmpipe) out += ",llvmpipe";
  return out;
}

Target target_of(const DeviceInfo& info) {
  Target t;
  t.features = device_features(info);
  t.local_size = std::min({kPreferredLocalSize, info.max_compute_workgroup_invocations, info.max_compute_workgroup_size_x});
  t.push_constants = std::clamp(info.max_push_constants_size, kMinPushConstants, kMaxPushConstants);
  t.llvmpipe = is_llvmpipe(info);
  return t;
}

std::string mismatch(const DeviceInfo& info, const Target& target) {
  std::string out;
  auto add = [&](const std::string& what) { out += (out.empty() ? "" : "; ") + what; };
  const rt::Features have = device_features(info);
  std::string missing;
#define GROVE_FEATURE(field, device_name) \
  if (target.features.field && !have.field) missing += (missing.empty() ? "" : ", ") + std::string(device_name);
#include "runtime/core/features.def"
  if (!missing.empty()) add("lacks " + missing);
  const std::uint32_t most = std::min(info.max_compute_workgroup_invocations, info.max_compute_workgroup_size_x);
  if (target.local_size > most)
    add("runs at most " + std::to_string(most) + " invocations per group, not local_size=" +
        std::to_string(target.local_size));
  if (target.push_constants > info.max_push_constants_size)
    add("takes at most " + std::to_string(info.max_push_constants_size) + " bytes of arguments, not push_constants=" +
        std::to_string(target.push_constants));
  if (is_llvmpipe(info) && !target.llvmpipe)
    add("is Mesa's llvmpipe, and code for a target without 'llvmpipe' lacks the workarounds it needs (its loop "
        "limit, its float folding): make it for the target 'lavapipe', or on this device");
  if (!is_llvmpipe(info) && target.llvmpipe)
    add("is not llvmpipe, and code for a target with 'llvmpipe' stops every loop after 65535 iterations: make it "
        "for a target without 'llvmpipe'");
  return out;
}

}  // namespace grove::vk
