// vulkan_launch.cpp — launch overhead on Vulkan: a trivial Grove kernel (one
// store to a 0-D field) launched 10,000 times and then one sync, against
// the same work recorded by hand through runtime/vulkan's Device (one
// launch() of one dispatch of shaders/bench_store_one.comp, 10,000 times,
// then one sync). Both records are the time per launch.
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "harness.h"
#include "shaders/embedded.h"
#include "vulkan_common.h"

namespace grove_bench {
namespace {

namespace vk = grove::vk;

constexpr int kLaunches = 10000;
constexpr int kIterations = 3;
constexpr std::string_view kWorkload = "vk_launch_overhead";

void launch_grove(benchmark::State& state) {
  try {
    grove::Config config;
    config.arch = grove::Arch::Vulkan;
    grove::Program prog(config);
    grove::Field out = prog.field(grove::i32, "out", {});
    grove::Kernel store = prog.kernel("store_one", [&] { out() = 1; });
    out.write({}, 0);
    store();
    prog.sync();
    if (out.read<int>() != 1) {
      state.SkipWithError("Grove store_one did not store 1");
      return;
    }
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      for (int n = 0; n < kLaunches; ++n) store();
      prog.sync();
      state.SetIterationTime(vkb::seconds_since(start) / kLaunches);
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void launch_device(benchmark::State& state) {
  try {
    std::unique_ptr<vk::Device> dev = vkb::open_device();
    vk::BufferId out = dev->create_buffer(4, "out");
    vk::PipelineId pipe = vkb::shader_pipeline(*dev, grove::shaders::bench_store_one, 1, 0, "bench_store_one");
    const std::vector<vk::Dispatch> launch{{pipe, {out}, {}, 1}};
    dev->launch(launch);
    std::uint32_t value = 0;
    dev->read_buffer(out, 0, &value, 4);
    if (value != 1) {
      state.SkipWithError("bench_store_one did not store 1");
      return;
    }
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      for (int n = 0; n < kLaunches; ++n) dev->launch(launch);
      dev->sync();
      state.SetIterationTime(vkb::seconds_since(start) / kLaunches);
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

}  // namespace

void register_vulkan_launch() {
  benchmark::RegisterBenchmark(grove_name(kWorkload, grove::Arch::Vulkan).c_str(), launch_grove)
      ->Unit(benchmark::kMicrosecond)
      ->UseManualTime()
      ->Iterations(kIterations)
      ->Repetitions(vkb::kRepetitions);
  benchmark::RegisterBenchmark(baseline_name(kWorkload, vkb::kDevice).c_str(), launch_device)
      ->Unit(benchmark::kMicrosecond)
      ->UseManualTime()
      ->Iterations(kIterations)
      ->Repetitions(vkb::kRepetitions);
}

}  // namespace grove_bench
