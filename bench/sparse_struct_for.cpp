// sparse_struct_for.cpp — a struct-for's cost follows the active cells, not
// the domain: the same kernel over a domain of pointer blocks of 8 x 8 cells
// (4096 x 4096 cells; 512 x 512 on the slow interpreter), once with 1% of the
// blocks active and once with all of them,
// both timed per active cell. The record pairs the 1% run (as "grove") with
// the 100% run (as "baseline"): a ratio near 1 means the time per active cell
// does not depend on how much of the domain is inactive.
#include <chrono>
#include <string>

#include <grove/grove.h>

#include "harness.h"

namespace grove_bench {
namespace {

constexpr int kCells = 8;    // per block side

void struct_for(benchmark::State& state, grove::Arch arch, int percent) {
  using namespace grove;
  const int kBlocks = arch == Arch::Interp ? 64 : 512;  // per side
  try {
    Program prog(grove_bench::steady_config(arch));
    Field x = prog.field(f32, "x");
    SNode& blocks = prog.root().pointer(ij, {kBlocks, kBlocks});
    blocks.dense(ij, {kCells, kCells}).place(x);
    Field total = prog.field(f32, "total", {});
    Kernel activate_blocks = prog.kernel("activate_blocks", {arg(i32, "percent")}, [&](Args a) {
      for_range(0, kBlocks * kBlocks, [&](Expr b) {
        // Every block whose number falls in the first `percent` of each 100.
        if_(b % 100 < a[0], [&] { x((b / kBlocks) * kCells, (b % kBlocks) * kCells) = 1.0f; });
      });
    });
    // Reads only: no cell changes, so the lists are generated once and reused.
    Kernel sum = prog.kernel("sum", [&] { for_each(x, [&](Expr i, Expr j) { total() += x(i, j); }); });
    activate_blocks(percent);
    sum();
    prog.sync();
    const int64_t active = prog.stats().find(blocks.name())->active_cells * kCells * kCells;
    for (auto _ : state) {
      auto start = std::chrono::steady_clock::now();
      sum();
      prog.sync();
      std::chrono::duration<double> t = std::chrono::steady_clock::now() - start;
      state.SetIterationTime(t.count() / static_cast<double>(active));
    }
    state.counters["active_cells"] = static_cast<double>(active);
  } catch (const grove::Error& e) {
    state.SkipWithError(e.what());
  }
}

}  // namespace

void register_sparse_struct_for() {
  for (const grove::Arch arch : runnable_backends()) {
    const std::string workload = "struct_for_per_active_cell_" + std::string(grove::arch_name(arch));
    benchmark::RegisterBenchmark(grove_name(workload, arch).c_str(), struct_for, arch, 1)
        ->UseManualTime()
        ->Unit(benchmark::kNanosecond)
        ->Iterations(5);
    benchmark::RegisterBenchmark(baseline_name(workload, "all_active").c_str(), struct_for, arch, 100)
        ->UseManualTime()
        ->Unit(benchmark::kNanosecond)
        ->Iterations(5);
  }
}

}  // namespace grove_bench
