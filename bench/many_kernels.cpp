// many_kernels.cpp — what each distinct kernel costs a Program, on every
// backend compiled in:
//
//   many_kernels_dense   a range-for writing a dense field (one task)
//   many_kernels_sparse  that, plus a struct-for over a pointer field (six
//                        tasks: the range-for, two clear_list + listgen
//                        pairs, the struct-for)
//
// The dense row defines 10,000 kernels in a fresh Program (more than a
// process's usual 1,024 file descriptors: kernel count is bounded by
// memory alone; 1,000 on CUDA, where the two runs on an H200 stopped the
// row after 110 and 150 s, each kernel going through LLVM's NVPTX and the
// driver's PTX compiler), the sparse row 200; each launches every kernel
// once. The
// time is per kernel, from its definition to the end of its first launch
// (recording, passes, code generation, pipelines, the launch), and the
// counter kb_per_kernel is the growth of the process's resident memory per
// kernel (what the Program keeps for later launches, a driver's pipelines
// included). Paired with a 5 ms budget per kernel: the ratio is budget /
// time, so at least 1 means within it.
#include <chrono>
#include <exception>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "harness.h"

namespace grove_bench {
namespace {

using namespace grove;

constexpr double kBudgetSeconds = 0.005;
constexpr const char* kBudgetName = "budget_5ms";

// Resident memory of this process, in KiB (Linux).
double resident_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6));
  return 0;
}

void many(benchmark::State& state, Arch arch, bool sparse) {
  const int kernel_count = sparse ? 200 : arch == Arch::Cuda ? 1000 : 10000;
  try {
    double kib = 0;
    for (auto _ : state) {
      Config config;
      config.arch = arch;
      config.cache_dir = "off";  // compiled, not read back from an earlier run's cache
      Program prog(config);
      Field x = prog.field(f32, "x", {1024});
      Field y = prog.field(f32, "y");
      prog.root().pointer(i, 64).dense(i, 16).place(y);
      y.write({5}, 1.0f);  // the trees exist before the first kernel
      std::vector<Kernel> kernels;
      kernels.reserve(kernel_count);
      const double before = resident_kib();
      const auto start = std::chrono::steady_clock::now();
      for (int k = 0; k < kernel_count; ++k) {
        kernels.push_back(prog.kernel("k" + std::to_string(k), [&, k] {
          for_range(0, 1024, [&](Expr n) { x(n) = cast(f32, n) + static_cast<float>(k); });
          if (sparse) for_each(y, [&](Expr n) { y(n) += 1.0f; });
        }));
        kernels.back()();
      }
      prog.sync();
      state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                             kernel_count);
      kib = (resident_kib() - before) / kernel_count;
      if (x.read<float>({3}) != 3.0f + (kernel_count - 1)) throw Error("the last kernel wrote a wrong value");
    }
    state.counters["kib_per_kernel"] = kib;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void budget(benchmark::State& state) {
  for (auto _ : state) state.SetIterationTime(kBudgetSeconds);
}

// instance_churn_<backend>: tree instances made, launched on and destroyed
// in one Program, 4 rounds of `per_round` cycles. The Grove side is the time
// per cycle of the last round, the baseline ("first_round") that of the
// first: a ratio of about 1 means destroyed instances cost nothing (each
// check of pool failures once walked every instance ever made: 30,000
// cycles took 8-22 s against 0.4-2.8 s for the first 10,000).
std::map<Arch, double>& first_round() {
  static std::map<Arch, double> seconds;
  return seconds;
}

void churn(benchmark::State& state, Arch arch) {
  const int per_round = arch == Arch::Vulkan ? 2000 : 10000;
  try {
    for (auto _ : state) {
      Config config;
      config.arch = arch;
      Program prog(config);
      TreeType grid = prog.tree_type("grid", [&](TreeTypeBuilder& b) {
        Field v = b.field(i32, "v");
        b.root().pointer(i, 16).dense(i, 16).place(v);
      });
      Kernel touch = prog.kernel("touch", {arg(grid, "t")}, [&](Args a) {
        Field v = a.tree("t").field("v");
        for_range(0, 4, [&](Expr q) { v(q * 20) = q; });
      });
      double last = 0;
      for (int round = 0; round < 4; ++round) {
        const auto start = std::chrono::steady_clock::now();
        for (int c = 0; c < per_round; ++c) {
          Tree t = prog.instantiate(grid);
          touch(t);
          t.destroy();
        }
        prog.sync();
        last = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / per_round;
        if (round == 0) first_round()[arch] = last;
      }
      state.SetIterationTime(last);
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void first_round_time(benchmark::State& state, Arch arch) {
  for (auto _ : state) state.SetIterationTime(first_round().count(arch) ? first_round()[arch] : 0);
}

}  // namespace

void register_many_kernels() {
  for (bool sparse : {false, true}) {
    const std::string workload = sparse ? "many_kernels_sparse" : "many_kernels_dense";
    for (Arch arch : runnable_backends()) {
      benchmark::RegisterBenchmark(grove_name(workload, arch).c_str(), many, arch, sparse)
          ->Unit(benchmark::kMillisecond)
          ->UseManualTime()
          ->Iterations(1);
    }
    benchmark::RegisterBenchmark(baseline_name(workload, kBudgetName).c_str(), budget)
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(1);
  }
  for (Arch arch : runnable_backends()) {
    const std::string workload = "instance_churn_" + std::string(arch_name(arch));
    benchmark::RegisterBenchmark(grove_name(workload, arch).c_str(), churn, arch)
        ->Unit(benchmark::kMicrosecond)
        ->UseManualTime()
        ->Iterations(1);
    benchmark::RegisterBenchmark(baseline_name(workload, "first_round").c_str(), first_round_time, arch)
        ->Unit(benchmark::kMicrosecond)
        ->UseManualTime()
        ->Iterations(1);
  }
}

}  // namespace grove_bench
