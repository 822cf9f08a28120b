// vulkan_instantiate.cpp — what a tree and a Program cost before any work:
//
//   vk_instantiate   Program::instantiate of a sparse tree type whose buffer
//                    is about 128 MiB (pointer pools sized by
//                    Config::device_memory): the call, which queues the
//                    buffer's zero fill on the device and uploads only the
//                    header. Against vk::Device::create_buffer of the same
//                    size (which queues the same fill), and a 5 ms budget.
//   vk_instantiate_ready  the same followed by a sync: the buffer exists and
//                    is zeroed (on lavapipe, the CPU touching 128 MiB of
//                    fresh pages).
//   vk_first_launch  a fresh Program end to end: its device, a 0-D field,
//                    a kernel storing 1 to it compiled and launched once,
//                    the result read. Against the same by hand: a fresh
//                    vk::Device, a buffer, the pipeline of a hand-written
//                    shader, one dispatch, the result read.
//
// Built only with GROVE_WITH_VULKAN.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "harness.h"
#include "shaders/embedded.h"
#include "vulkan_common.h"

namespace grove_bench {
namespace {

namespace vk = grove::vk;
using namespace grove;

constexpr std::string_view kInstantiate = "vk_instantiate";
constexpr std::string_view kFirstLaunch = "vk_first_launch";
constexpr double kBudgetSeconds = 0.005;

// `ready`: time until the tree is usable on the device (a sync after the
// call); else the call alone (the zero fill is queued and overlaps with
// whatever the host does next).
Pair instantiate_pair(bool ready) {
  Config config;
  config.arch = Arch::Vulkan;
  config.device_memory = int64_t{120} << 20;
  auto prog = std::make_shared<Program>(config);
  TreeType grid = prog->tree_type("grid", [](TreeTypeBuilder& b) {
    Field x = b.field(f32, "x");
    b.root().pointer(ij, 256).dense(ij, 16).place(x);
  });
  // A first instance, checked: fresh trees read zero and work.
  Tree first = prog->instantiate(grid);
  first.field("x").write({100, 200}, 2.0f);
  if (first.field("x").read<float>({100, 200}) != 2.0f || first.field("x").read<float>({101, 200}) != 0.0f)
    throw Error("a fresh instance does not read back what was written");
  const int64_t bytes = first.stats().tree_words * 4;
  first.destroy();

  std::shared_ptr<vk::Device> dev = vkb::device_of(prog, *prog);
  auto tree = std::make_shared<std::optional<Tree>>();
  auto buffer = std::make_shared<vk::BufferId>();

  Pair p;
  p.grove.run = [prog, grid, tree, ready] {
    *tree = prog->instantiate(grid);
    if (ready) prog->sync();
  };
  p.grove.after = [prog, tree] {
    prog->sync();
    (*tree)->destroy();
  };
  p.baseline.run = [dev, buffer, bytes, ready] {
    *buffer = dev->create_buffer(static_cast<uint64_t>(bytes), "baseline tree");
    if (ready) dev->sync();
  };
  p.baseline.after = [dev, buffer] {
    dev->sync();
    dev->destroy_buffer(*buffer);
  };
  p.counters.push_back({"tree_mib", static_cast<double>(bytes) / (1 << 20)});
  return p;
}

Pair first_launch_pair() {
  Pair p;
  p.grove.run = [] {
    Config config;
    config.arch = Arch::Vulkan;
    Program prog(config);
    Field out = prog.field(i32, "out", {});
    Kernel store = prog.kernel("store_one", [out] { out() = 1; });
    store();
    if (out.read<int>() != 1) throw Error("Grove's first launch did not store 1");
  };
  p.baseline.run = [] {
    std::unique_ptr<vk::Device> dev = vkb::open_device();
    vk::BufferId buffer = dev->create_buffer(4, "out");
    vk::PipelineId pipe = vkb::shader_pipeline(*dev, shaders::bench_store_one, 1, 0, "bench_store_one");
    dev->launch({{pipe, {buffer}, {}, 1}});
    std::uint32_t value = 0;
    dev->read_buffer(buffer, 0, &value, 4);
    if (value != 1) throw Error("bench_store_one did not store 1");
  };
  // Both sides once before timing (the driver's first-use costs).
  p.grove.run();
  p.baseline.run();
  return p;
}

void budget(benchmark::State& state) {
  for (auto _ : state) state.SetIterationTime(kBudgetSeconds);
}

}  // namespace

void register_vulkan_instantiate() {
  for (bool ready : {false, true}) {
    const std::string workload = std::string(kInstantiate) + (ready ? "_ready" : "");
    register_pair(workload, Arch::Vulkan, vkb::kDevice, 10, gpu::kRepetitions,
                  [ready] { return instantiate_pair(ready); });
    benchmark::RegisterBenchmark(baseline_name(workload, vkb::kBudget).c_str(), budget)
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(1);
  }
  register_pair(kFirstLaunch, Arch::Vulkan, vkb::kDevice, 5, gpu::kRepetitions, first_launch_pair);
}

}  // namespace grove_bench
