// vulkan_launch.cpp — launch overhead on Vulkan: a trivial Grove kernel (one
// store to a 0-D field) launched 10,000 times and then one sync, against
// the same work recorded by hand through runtime/vulkan's Device (one
// launch() of one dispatch of shaders/bench_store_one.comp, 10,000 times,
// then one sync). Both sides run in one pair benchmark (harness.h); the
// records are the time per launch.
#include <cstdint>
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
constexpr int kIterations = 15;  // runs of each side per repetition
constexpr std::string_view kWorkload = "vk_launch_overhead";

Pair launch_pair() {
  grove::Config config;
  config.arch = grove::Arch::Vulkan;
  auto prog = std::make_shared<grove::Program>(config);
  grove::Field out = prog->field(grove::i32, "out", {});
  auto store = std::make_shared<grove::Kernel>(prog->kernel("store_one", [out] { out() = 1; }));
  out.write({}, 0);
  (*store)();
  prog->sync();
  if (out.read<int>() != 1) throw grove::Error("Grove store_one did not store 1");

  std::shared_ptr<vk::Device> dev = vkb::device_of(prog, *prog);
  vk::BufferId buffer = dev->create_buffer(4, "out");
  vk::PipelineId pipe = vkb::shader_pipeline(*dev, grove::shaders::bench_store_one, 1, 0, "bench_store_one");
  const std::vector<vk::Dispatch> launch{{pipe, {buffer}, {}, 1}};
  dev->launch(launch);
  std::uint32_t value = 0;
  dev->read_buffer(buffer, 0, &value, 4);
  if (value != 1) throw grove::Error("bench_store_one did not store 1");

  Pair p;
  p.grove.run = [prog, store] {
    for (int n = 0; n < kLaunches; ++n) (*store)();
    prog->sync();
  };
  p.baseline.run = [dev, launch] {
    for (int n = 0; n < kLaunches; ++n) dev->launch(launch);
    dev->sync();
  };
  p.runs_per_sample = kLaunches;
  return p;
}

}  // namespace

void register_vulkan_launch() {
  register_pair(kWorkload, grove::Arch::Vulkan, vkb::kDevice, kIterations, vkb::kRepetitions, launch_pair);
}

}  // namespace grove_bench
