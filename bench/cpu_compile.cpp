// cpu_compile.cpp — compile latency of the LLVM CPU backend, per kernel of
// examples/sparse_life (seed, count, update, prune, snapshot, from the
// example's own life.h on its default 16384^2 domain):
//
//   cpu_first_launch_<kernel>  everything a kernel's first use costs in a
//                              fresh Program with no disk cache: the DSL
//                              body, the pass pipeline, LLVM (-O3, object
//                              emission), lld (the shared object), dlopen;
//                              paired with a 50 ms
//                              budget
//   cpu_disk_hit_<kernel>      the same in a fresh Program whose disk cache
//                              holds the kernel (filled before timing): LLVM
//                              is not called (checked); 2 ms budget
//   cpu_memory_hit_<kernel>    the Jit asked again for a kernel it holds
//                              (the key is built and looked up): what a
//                              kernel recorded again with the same IR pays
//                              on top of its front end; 10 us budget
//   cpu_memory_hit_launch      a compiled Kernel launched again, as a user
//                              does: a trivial kernel (one increment of a
//                              0-D field, checked), time per launch over 10,000 launches
//                              (the Kernel holds its loaded code: no key,
//                              no lookup, no compile); 10 us budget
//   cpu_tier_up_longest_launch a small kernel (y += a x over 4096 f32) in a
//                              fresh Program, launched until it runs its
//                              full tier's code (Config::cpu_tiers): the
//                              longest of its launches after the first
//                              (which makes its quick code), where the
//                              full tier's compile would stall one; the
//                              counter `launches` says how many ran quick
//                              code; 1 ms budget
//
// Each budget is a baseline ("baseline/budget_50ms" ...), so the ratio is
// budget / time: at least 1 means within budget.
#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <string>

#include <grove/grove.h>

#include "harness.h"
#include "internals.h"
#include "llvm_cpu/jit.h"
#include "program/test_hooks.h"

namespace grove_bench {
namespace {

using namespace grove;



double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string cache_dir() {
  return (std::filesystem::temp_directory_path() / "grove_bench_cpu_cache").string();
}

// First use in a fresh Program (the tree exists before timing, as after an
// earlier kernel); `cache` is "off" or a primed directory.
double first_use(const std::string& kernel_name, const std::string& cache) {
  Config c;
  c.arch = Arch::Cpu;
  c.cache_dir = cache;
  Program prog(c);
  LifeKernels life(prog);
  life.world.field("alive").read<int>({0, 0});
  const Kernel kernel = life.by_name(kernel_name);
  const auto start = std::chrono::steady_clock::now();
  kernel.ir();
  return since(start);
}

void jit(benchmark::State& state, std::string kernel_name) {
  try {
    for (auto _ : state) state.SetIterationTime(first_use(kernel_name, "off"));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void disk_hit(benchmark::State& state, std::string kernel_name) {
  try {
    std::filesystem::remove_all(cache_dir());
    first_use(kernel_name, cache_dir());  // fills the cache
    const int64_t before = llvm_backend::Jit::compilations();
    for (auto _ : state) state.SetIterationTime(first_use(kernel_name, cache_dir()));
    if (llvm_backend::Jit::compilations() != before) state.SkipWithError("a disk-cache hit called LLVM");
    std::filesystem::remove_all(cache_dir());
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void memory_hit(benchmark::State& state, std::string kernel_name) {
  try {
    Config c;
    c.arch = Arch::Cpu;
    c.cache_dir = "off";
    Program prog(c);
    LifeKernels life(prog);
    const ir::Kernel& lowered = lowered_ir(prog, life.by_name(kernel_name));
    llvm_backend::Jit jit;
    jit.add(lowered);
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      llvm_backend::CpuCode k = jit.add(lowered);
      state.SetIterationTime(since(start));
      if (k.source != llvm_backend::CpuCode::Source::memory) throw Error("not an in-memory hit");
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void launch_again(benchmark::State& state) {
  try {
    Config c;
    c.arch = Arch::Cpu;
    c.cache_dir = "off";
    Program prog(c);
    Field out = prog.field(i32, "out", {});
    Kernel bump = prog.kernel("bump", [&] { out() = out() + 1; });
    bump();
    const int before = bump.compile_count();
    constexpr int kLaunches = 10000;
    int64_t launches = 1;
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      for (int n = 0; n < kLaunches; ++n) bump();
      state.SetIterationTime(since(start) / kLaunches);
      launches += kLaunches;
    }
    if (bump.compile_count() != before) throw Error("a launch compiled the kernel again");
    if (out.read<int>() != launches) throw Error("a launch did not run the kernel");
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void tier_up_longest(benchmark::State& state) {
  try {
    double launches = 0;
    for (auto _ : state) {
      Config c;
      c.arch = Arch::Cpu;
      c.cache_dir = "off";
      Program prog(c);
      constexpr int kN = 4096;
      Field x = prog.field(f32, "x", {kN}), y = prog.field(f32, "y", {kN});
      x.fill(1.0f);
      Kernel axpy = prog.kernel("axpy", [&] { for_range(0, kN, [&](Expr i) { y(i) = y(i) + 0.5f * x(i); }); });
      axpy();
      if (!detail::kernel_runs_quick_code(prog, "axpy")) throw Error("the kernel's first code is not quick");
      double longest = 0;
      int n = 1;
      for (; detail::kernel_runs_quick_code(prog, "axpy") && n < 10000000; ++n) {
        const auto start = std::chrono::steady_clock::now();
        axpy();
        longest = std::max(longest, since(start));
      }
      if (detail::kernel_runs_quick_code(prog, "axpy")) throw Error("the kernel never ran its full tier's code");
      if (y.read<float>({kN - 1}) != 0.5f * static_cast<float>(n)) throw Error("a launch did not run the kernel");
      state.SetIterationTime(longest);
      launches += n;
    }
    state.counters["launches"] = launches / static_cast<double>(state.iterations());
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

template <int kMicroseconds>
void budget(benchmark::State& state) {
  for (auto _ : state) state.SetIterationTime(kMicroseconds * 1e-6);
}

}  // namespace

void register_cpu_compile() {
  benchmark::RegisterBenchmark(grove_name("cpu_memory_hit_launch", Arch::Cpu).c_str(), launch_again)
      ->Unit(benchmark::kMicrosecond)->UseManualTime()->Iterations(20);
  benchmark::RegisterBenchmark(baseline_name("cpu_memory_hit_launch", "budget_10us").c_str(), budget<10>)
      ->Unit(benchmark::kMicrosecond)->UseManualTime()->Iterations(1);
  benchmark::RegisterBenchmark(grove_name("cpu_tier_up_longest_launch", Arch::Cpu).c_str(), tier_up_longest)
      ->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(10);
  benchmark::RegisterBenchmark(baseline_name("cpu_tier_up_longest_launch", "budget_1ms").c_str(), budget<1000>)
      ->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
  for (const char* kernel : {"seed", "count", "update", "prune", "snapshot"}) {
    const std::string k(kernel);
    benchmark::RegisterBenchmark(grove_name("cpu_first_launch_" + k, Arch::Cpu).c_str(), jit, k)
        ->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(5);
    benchmark::RegisterBenchmark(baseline_name("cpu_first_launch_" + k, "budget_50ms").c_str(), budget<50000>)
        ->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
    benchmark::RegisterBenchmark(grove_name("cpu_disk_hit_" + k, Arch::Cpu).c_str(), disk_hit, k)
        ->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(10);
    benchmark::RegisterBenchmark(baseline_name("cpu_disk_hit_" + k, "budget_2ms").c_str(), budget<2000>)
        ->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
    benchmark::RegisterBenchmark(grove_name("cpu_memory_hit_" + k, Arch::Cpu).c_str(), memory_hit, k)
        ->Unit(benchmark::kMicrosecond)->UseManualTime()->Iterations(1000);
    benchmark::RegisterBenchmark(baseline_name("cpu_memory_hit_" + k, "budget_10us").c_str(), budget<10>)
        ->Unit(benchmark::kMicrosecond)->UseManualTime()->Iterations(1);
  }
}

}  // namespace grove_bench
