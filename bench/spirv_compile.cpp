// spirv_compile.cpp — compile latency of the SPIR-V backend, per kernel of
// examples/sparse_life (seed, count, update, prune, snapshot; their bodies
// are replicated here, on the example's default 16384^2 domain):
//
//   spirv_codegen_<kernel>           lowered IR -> SPIR-V words of every task
//                                    (spirv::generate_kernel), without the driver
//   spirv_codegen_pipeline_<kernel>  the same plus vkCreateComputePipelines
//                                    of every task (vk::Device::create_pipeline)
//   kernel_compile_<kernel>          everything a kernel's first launch compiles
//                                    in a fresh Program: the DSL body, the pass
//                                    pipeline, code generation, pipelines
//
// Each is paired with a fixed 5 ms budget ("baseline/budget_5ms"), so the
// ratio is budget / time: at least 1 means within budget. The lowered IR is
// the one the Program compiled (an internal hook, vkb::lowered_ir), and the
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
#include "spirv/codegen.h"
#include "vulkan_common.h"

namespace grove_bench {
namespace {

using namespace grove;

constexpr int kBlock = 8;
constexpr int kView = 256;
constexpr int kMap = 256;
constexpr int kPatch = 48;
constexpr int kN = 16384;
constexpr double kBudgetSeconds = 0.005;

// examples/sparse_life's kernels, replicated.
struct LifeKernels {
  int n = kN;
  Field alive, neighbours, view, map;
  SNode* blocks = nullptr;
  Kernel seed, count, update, prune, snapshot;

  explicit LifeKernels(Program& prog) {
    alive = prog.field(i32, "alive");
    neighbours = prog.field(i32, "neighbours");
    blocks = &prog.root().pointer(ij, {n / kBlock, n / kBlock});
    blocks->dense(ij, {kBlock, kBlock}).place(alive, neighbours);
    view = prog.field(u8, "view", {kView, kView});
    map = prog.field(u8, "map", {kMap, kMap});

    seed = prog.kernel("seed", {arg(i32, "x0"), arg(i32, "y0"), arg(u32, "salt")}, [&](Args a) {
      for_range(0, kPatch * kPatch, [&](Expr k) {
        Expr i = a[0] + k / kPatch, j = a[1] + k % kPatch;
        Var h = cast(u32, i) * 0x9E3779B1u ^ cast(u32, j) * 0x85EBCA77u ^ a[2];
        h = (h ^ (h >> 15u)) * 0x2C1B3C6Du;
        h = h ^ (h >> 12u);
        if_(h % 3u == 0u, [&] { alive(i, j) = 1; });
      });
    });

    count = prog.kernel("count", [&] {
      for_each(alive, [&](Expr i, Expr j) {
        if_(alive(i, j) == 1, [&] {
          for (int di = -1; di <= 1; ++di)
            for (int dj = -1; dj <= 1; ++dj) {
              if (di == 0 && dj == 0) continue;
              Expr ni = i + di, nj = j + dj;
              if_(ni >= 0 && ni < n && nj >= 0 && nj < n, [&] { neighbours(ni, nj) += 1; });
            }
        });
      });
    });

    update = prog.kernel("update", [&] {
      for_each(alive, [&](Expr i, Expr j) {
        Expr c = neighbours(i, j);
        alive(i, j) = select(c == 3 || (c == 2 && alive(i, j) == 1), 1, 0);
        neighbours(i, j) = 0;
      });
    });

    prune = prog.kernel("prune", [&] {
      for_each(*blocks, [&](Indices B) {
        Var any = 0;
        for_range(0, kBlock * kBlock, [&](Expr k) {
          any = any | alive(B[0] * kBlock + k / kBlock, B[1] * kBlock + k % kBlock);
        });
        if_(any == 0, [&] { deactivate(*blocks, B); });
      });
    });

    snapshot = prog.kernel("snapshot", {arg(i32, "cx"), arg(i32, "cy")}, [&](Args a) {
      for_each(view, [&](Expr i, Expr j) {
        view(i, j) = cast(u8, alive(a[0] - kView / 2 + i, a[1] - kView / 2 + j));
      });
      for_each(map, [&](Expr i, Expr j) { map(i, j) = cast(u8, 0); });
      for_each(*blocks, [&](Indices B) {
        map(B[0] * kMap / (n / kBlock), B[1] * kMap / (n / kBlock)) = cast(u8, 1);
      });
    });
  }

  Kernel by_name(std::string_view name) const {
    for (const Kernel& k : {seed, count, update, prune, snapshot})
      if (k.name() == name) return k;
    throw Error("no sparse_life kernel named '" + std::string(name) + "'");
  }
};

// The options src/program/vulkan_backend.cpp gives the code generator.
spirv::CodegenOptions backend_options(const vk::DeviceInfo& info) {
  spirv::CodegenOptions o;
  o.features.shader_int64 = info.shader_int64;
  o.features.shader_float64 = info.shader_float64;
  o.features.atomic_int64 = info.atomic_int64;
  o.features.atomic_float32_add = info.atomic_float32_add;
  o.local_size = 128;
  o.validate = false;
  if (info.name.find("llvmpipe") != std::string::npos) o.max_loop_iterations = 65535;
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
    life.alive.read<int>({0, 0});
    const Kernel kernel = life.by_name(kernel_name);
    const auto start = std::chrono::steady_clock::now();
    kernel.ir();
    state.SetIterationTime(vkb::seconds_since(start));
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
    const ir::Kernel& lowered = vkb::lowered_ir(prog, life.by_name(kernel_name));
    const ir::SNodeForest& forest = vkb::snode_forest(prog);
    std::unique_ptr<vk::Device> dev = vkb::open_device();
    const spirv::CodegenOptions options = backend_options(dev->info());
    const std::uint32_t push_limit = dev->info().max_push_constants_size;
    std::size_t words = 0, tasks = 0;
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      spirv::KernelModules modules = spirv::generate_kernel(lowered, forest, options, push_limit);
      std::vector<vk::PipelineId> pipelines;
      if (with_pipelines) {
        for (const spirv::TaskModule& task : modules.tasks) {
          pipelines.push_back(dev->create_pipeline(task.words, task.entry_point,
                                                   1 + static_cast<std::uint32_t>(task.trees.size()),
                                                   modules.arg_words * 4, task.entry_point));
        }
      }
      state.SetIterationTime(vkb::seconds_since(start));
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
