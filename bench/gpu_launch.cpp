// gpu_launch.cpp — launch overhead on each GPU backend: a trivial Grove
// kernel (one store to a 0-D field) launched 10,000 times and then one
// sync, against the same work launched by hand on the same device (one
// launch of the one-thread kernel bench_store_one, 10,000 times, then one
// sync): on Vulkan a dispatch recorded through runtime/vulkan's Device
// (baseline "device"), on CUDA a raw cuLaunchKernel (baseline "driver").
// Both sides run in one pair benchmark (harness.h); the records are the
// time per launch.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "gpu_common.h"
#include "harness.h"

namespace grove_bench {
namespace {

using gpu::HandWritten;

constexpr int kLaunches = 10000;
constexpr int kIterations = 15;  // runs of each side per repetition

Pair launch_pair(const gpu::Backend& backend) {
  auto prog = std::make_shared<grove::Program>(steady_config(backend.arch));
  grove::Field out = prog->field(grove::i32, "out", {});
  auto store = std::make_shared<grove::Kernel>(prog->kernel("store_one", [out] { out() = 1; }));
  out.write({}, 0);
  (*store)();
  prog->sync();
  if (out.read<int>() != 1) throw grove::Error("Grove store_one did not store 1");

  std::shared_ptr<HandWritten> dev = backend.open(prog, *prog);
  HandWritten::Buffer buffer = dev->create_buffer(4, "out");
  dev->fill(buffer, 0, 4, 0);
  const HandWritten::Launch launch = dev->prepare("bench_store_one", {buffer}, {}, 1, 1);
  dev->launch(launch);
  std::uint32_t value = 0;
  dev->read(buffer, 0, &value, 4);
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

void register_gpu_launch() {
  for (const gpu::Backend& b : gpu::backends()) {
    register_pair(gpu::workload(b, "launch_overhead"), b.arch, b.raw_launch, kIterations, gpu::kRepetitions,
                  [b] { return launch_pair(b); });
  }
}

}  // namespace grove_bench
