// vulkan_common.h — what the Vulkan benchmarks share: the device the GLSL
// baselines run on (Grove's own), pipelines of the embedded shaders, the
// hash the sparse workloads use (the same in C++, the Grove DSL and GLSL),
// result checks, and the internal hook that hands out a compiled kernel's
// lowered IR.
//
// Built only with GROVE_WITH_VULKAN.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>
#include <grove/grove.h>

#include "harness.h"
#include "runtime/vulkan/device.h"

namespace grove::ir {
class Kernel;
class SNodeForest;
}  // namespace grove::ir

namespace grove_bench::vkb {

// The baseline names of the records.
inline constexpr std::string_view kGlsl = "glsl";          // a hand-written shader through vk::Device
inline constexpr std::string_view kDevice = "device";      // the dispatch recorded by hand
inline constexpr std::string_view kBudget = "budget_5ms";  // a fixed 5 ms budget

// Repetitions of each device benchmark (a record averages them): lavapipe
// runs on the host's cores, so other load on the machine shows up as noise.
inline constexpr int kRepetitions = 3;

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

std::uint32_t float_bits(float f);

// A 32-bit integer hash (the finaliser of a multiplicative hash). Written
// out identically in shaders/bench_sparse_activate.comp and, through
// hash_dsl, in the Grove kernels.
constexpr std::uint32_t hash_u32(std::uint32_t n, std::uint32_t salt) {
  std::uint32_t h = n * 0x9E3779B1u ^ salt;
  h = (h ^ (h >> 15u)) * 0x2C1B3C6Du;
  h = (h ^ (h >> 12u)) * 0x297A2D39u;
  return h ^ (h >> 15u);
}
// The same inside a Grove kernel (n and salt: u32 expressions).
grove::Expr hash_dsl(const grove::Expr& n, const grove::Expr& salt);

// "" if got == want element by element (|difference| <= tolerance), else a
// message naming the first mismatch and how many there are.
std::string compare(std::span<const float> got, std::span<const float> want, float tolerance,
                    std::string_view what);

// Throws `error` as a grove::Error unless it is empty (the result of compare()).
void check(const std::string& error);

// A pair whose baseline side is one launch of `dispatches` and a sync.
Pair glsl_pair(std::function<void()> grove_run, std::shared_ptr<grove::vk::Device> device,
               std::vector<grove::vk::Dispatch> dispatches, std::int64_t items_per_run);

// Seconds since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace grove_bench::vkb
