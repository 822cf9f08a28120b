// spirv_compile.cpp — compile latency of the SPIR-V backend, per kernel of
// examples/sparse_life (seed, count, update, prune, snapshot, from the
// example's own examples/sparse_life/life.h, on its default 16384^2 domain):
//
//   spirv_codegen_<kernel>           lowered IR -> SPIR-V words of every task
//                                    (spirv::generate_kernel), without the driver
//   spirv_codegen_pipeline_<kernel>  the same plus vkCreateComputePipelines
//                                    of every task (vk::Device::create_pipelines)
//   kernel_compile_<kernel>          everything a kernel's first launch compiles
//                                    in a fresh Program: the DSL body, the pass
//                                    pipeline, code generation, pipelines
//
// Each is paired with a fixed 5 ms budget ("baseline/budget_5ms"), so the
// ratio is budget / time: at least 1 means within budget. The lowered IR is
// the one the Program compiled (an internal hook, lowered_ir), and the
// code generator runs with the options the Vulkan backend uses on this
// device; the SPIRV-Tools validator is off (as in a release build).
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "harness.h"
#include "internals.h"
#include "program/vulkan_backend.h"
#include "spirv/codegen.h"
#include "vulkan_common.h"

namespace grove_bench {
namespace {

using namespace grove;

constexpr double kBudgetSeconds = 0.005;

// The options the Vulkan backend gives the code generator, validator off
// (as in a release build).
spirv::CodegenOptions backend_options(const vk::DeviceInfo& info) {
  spirv::CodegenOptions o = detail::codegen_options_for(info);
  o.validate = false;
  return o;
}

enum class Scope { codegen, codegen_pipelines, full };

// The whole first-use compile of a kernel in a fresh Program: recording the
// DSL body, the pass pipeline (with the IR verifier, on by default), code
// generation and pipeline creation: Kernel::ir() forces it. The tree's
// buffer is allocated before timing (a host read), as it would be by an
// earlier kernel.
void compile_full(benchmark::State& state, const std::string& kernel_name) {
  Config config;
  config.arch = Arch::Vulkan;
  int compiles = 0;
  for (auto _ : state) {
    Program prog(config);
    LifeKernels life(prog);
    life.world.field("alive").read<int>({0, 0});
    const Kernel kernel = life.by_name(kernel_name);
    const auto start = std::chrono::steady_clock::now();
    kernel.ir();
    state.SetIterationTime(gpu::seconds_since(start));
    compiles = kernel.compile_count();
  }
  if (compiles != 1) state.SkipWithError("the kernel was not compiled exactly once");
}

void compile(benchmark::State& state, std::string kernel_name, Scope scope) {
  try {
    if (scope == Scope::full) {
      compile_full(state, kernel_name);
      return;
    }
    const bool with_pipelines = scope == Scope::codegen_pipelines;
    Config config;
    config.arch = Arch::Vulkan;
    Program prog(config);
    LifeKernels life(prog);
    const ir::Kernel& lowered = lowered_ir(prog, life.by_name(kernel_name));
    const ir::SNodeForest& forest = snode_forest(prog);
    std::unique_ptr<vk::Device> dev = vkb::open_device();
    const spirv::CodegenOptions options = backend_options(dev->info());
    const std::uint32_t push_limit = dev->info().max_push_constants_size;
    std::size_t words = 0, tasks = 0;
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      spirv::KernelModules modules = spirv::generate_kernel(lowered, forest, options, push_limit);
      std::vector<vk::PipelineId> pipelines;
      if (with_pipelines) {  // all at once, as the Vulkan backend loads a kernel
        std::vector<vk::PipelineRequest> requests;
        for (const spirv::TaskModule& task : modules.tasks)
          requests.push_back({task.words, task.entry_point, 1 + static_cast<std::uint32_t>(task.trees.size()),
                              modules.arg_words * 4, task.entry_point});
        pipelines = dev->create_pipelines(requests);
      }
      state.SetIterationTime(gpu::seconds_since(start));
      for (vk::PipelineId p : pipelines) dev->destroy_pipeline(p);  // untimed
      tasks = modules.tasks.size();
      words = 0;
      for (const spirv::TaskModule& task : modules.tasks) words += task.words.size();
    }
    state.counters["tasks"] = static_cast<double>(tasks);
    state.counters["spirv_words"] = static_cast<double>(words);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void budget(benchmark::State& state) {
  for (auto _ : state) state.SetIterationTime(kBudgetSeconds);
}

}  // namespace

void register_spirv_compile() {
  struct Variant {
    const char* prefix;
    Scope scope;
    int iterations;
  };
  constexpr Variant kVariants[] = {{"spirv_codegen_", Scope::codegen, 200},
                                   {"spirv_codegen_pipeline_", Scope::codegen_pipelines, 10},
                                   {"kernel_compile_", Scope::full, 5}};
  for (const char* kernel : {"seed", "count", "update", "prune", "snapshot"}) {
    for (const Variant& v : kVariants) {
      const std::string workload = std::string(v.prefix) + kernel;
      benchmark::RegisterBenchmark(grove_name(workload, Arch::Vulkan).c_str(), compile, std::string(kernel),
                                   v.scope)
          ->Unit(benchmark::kMicrosecond)
          ->UseManualTime()
          ->Iterations(v.iterations);
      benchmark::RegisterBenchmark(baseline_name(workload, vkb::kBudget).c_str(), budget)
          ->Unit(benchmark::kMicrosecond)
          ->UseManualTime()
          ->Iterations(1);
    }
  }
}

}  // namespace grove_bench
