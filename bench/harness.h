// harness.h — pairs each Grove benchmark with its C++ baseline and reports
// both as records of out/bench.json.
//
// Benchmarks are registered under names of the form
//   <workload>/grove/<backend>      e.g. dense_saxpy/grove/interp
//   <workload>/baseline/<baseline>  e.g. dense_saxpy/baseline/cpp
// and every Grove result is paired with every baseline of the same workload.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <grove/program.h>

namespace grove_bench {

std::string grove_name(std::string_view workload, grove::Arch arch);
std::string baseline_name(std::string_view workload, std::string_view baseline);

// A workload measured as a pair inside one benchmark, registered as
//   <workload>/pair/<backend>/<baseline>  e.g. vk_saxpy/pair/vulkan/glsl
// Both sides are set up (and their results checked) first; then every
// iteration runs the Grove side and the baseline one right after the other,
// alternating which goes first, so that both see the same load on a shared
// machine. Each repetition reports the median time per run of each side
// (counters grove_s and baseline_s), and becomes one measurement of each.
struct Side {
  std::function<void()> run;    // the timed work (for example a launch and a sync)
  std::function<void()> after;  // untimed work before the next run; may be empty
};
using Counters = std::vector<std::pair<std::string, double>>;
struct Pair {
  Side grove, baseline;
  double runs_per_sample = 1;   // a run's time is divided by this (launches per run, say)
  std::int64_t items_per_run = 0;  // for Google Benchmark's items_per_second
  // Memory traffic of one run: with it, each side's bandwidth is reported
  // (counters grove_GBps and baseline_GBps, from the medians).
  double bytes_per_run = 0;
  Counters counters;  // extra columns (active_blocks, say)
  // Untimed work right before each run of the Grove side (state it needs
  // that a run of the baseline side may not have: stale lists, say).
  std::function<void()> before_grove;
  // The same before each run of the baseline side: work of the same cost
  // that leaves the baseline's state as it is, so that both sides start
  // from the same idle time and caches.
  std::function<void()> before_baseline;
  // Extra columns worked out from the two sides' medians.
  std::function<void(double grove_s, double baseline_s, Counters&)> derive;
};

// n floats 0, 1, ..., 6, 0, 1, ...: small integers, so sums of them are
// exact in any order. The input of the saxpy and reduction workloads.
std::vector<float> mod7_values(int n);

// A pair's setup check: throws grove::Error ("wrong result: " + what)
// unless `ok`, which skips the benchmark with that message.
void check(bool ok, const std::string& what);
// A CPU row's workload name for `threads` threads: "<name>_<threads>t".
std::string workload(std::string_view name, int threads);
// The CPU backend on `threads` threads, with no disk cache: every row
// compiles its kernels, at the full tier at once (Config::cpu_tiers off):
// a row's few timed runs measure the code a long run settles on.
grove::Config cpu_config(int threads);
// A Program's Config for a row that times the steady state on `arch`:
// on the CPU, every kernel at the full tier at once, as in cpu_config.
grove::Config steady_config(grove::Arch arch);

// The backends compiled in that can start here (a Program of each is
// created once); each one that cannot is reported on stderr with its
// reason ("no CUDA driver was found") and left out, so its rows are not
// registered rather than failing.
const std::vector<grove::Arch>& runnable_backends();

std::string pair_name(std::string_view workload, grove::Arch arch, std::string_view baseline);
// Registers the pair. `setup` throws on any failure, a wrong result
// included; the benchmark is then skipped with the exception's message.
void register_pair(std::string_view workload, grove::Arch arch, std::string_view baseline, int iterations,
                   int repetitions, std::function<Pair()> setup);

// One benchmark's outcome: mean real time per iteration over its repetitions
// (for a pair: the mean over repetitions of each side's median).
struct Measurement {
  std::string workload;  // includes benchmark arguments, e.g. "dense_saxpy/1024"
  bool is_grove = false;
  std::string variant;   // backend for Grove, baseline name otherwise
  // A pair's baseline side: the backend of the Grove side it ran beside
  // (each backend's pair times its own baseline); empty otherwise.
  std::string pair_backend;
  double seconds = 0;    // real time per iteration
  int repetitions = 0;
  std::string error;     // non-empty when the benchmark failed or skipped
  // The user counters of its last repetition, written into its records:
  // on the Grove side for unpaired benchmarks (bytes per kernel, say), on
  // the baseline side for pairs (each pair's own columns).
  std::vector<std::pair<std::string, double>> counters;
};

// One record of bench.json.
struct Record {
  std::string name;      // the workload
  std::string backend;
  std::string baseline;
  double grove_s = 0;
  double baseline_s = 0;
  double ratio = 0;      // baseline_s / grove_s: above 1 means Grove is faster
  std::vector<std::pair<std::string, double>> counters;  // written as "counters": {...} when any
};

// Prints the usual console output and keeps every measurement.
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override;
  const std::vector<Measurement>& measurements() const { return measurements_; }

 private:
  // Folds one repetition's time per iteration (negative: none) into the
  // measurement of (workload, side, variant).
  Measurement& add(const std::string& workload, bool is_grove, const std::string& variant, const Run& run,
                   double seconds, const std::string& pair_backend = "");

  std::vector<Measurement> measurements_;
};

std::vector<Record> pair_up(const std::vector<Measurement>& measurements);
// Writes the records as a JSON list, creating the parent directory.
void write_json(const std::filesystem::path& path, const std::vector<Record>& records);
void print_table(const std::vector<Record>& records);

// Workloads (one file each).
void register_dense_saxpy();
void register_sparse_struct_for();
// Every GPU backend that can run here (gpu_common.h): Grove's kernels
// against hand-written GLSL (Vulkan) and nvcc's CUDA (CUDA) on the same
// device, and launch overhead.
void register_gpu_dense();
void register_gpu_sparse();
void register_gpu_launch();
// Vulkan only (GROVE_WITH_VULKAN): tree instantiation and a fresh
// Program's first launch, and SPIR-V compile latency.
void register_vulkan_instantiate();
void register_spirv_compile();
// What each distinct kernel costs a Program (time to its first launch's end,
// memory kept), on every backend.
void register_many_kernels();
// Whole-field host copies (from_vector, to_vector, fill) against memcpy,
// on every backend.
void register_host_copy();
void register_vdb_exchange();
void register_example_steps();
// GROVE_WITH_LLVM builds only: compile latency; dense rows against
// hand-written C++ over oneTBB (cpu_baselines.h).
void register_cpu_compile();
void register_cpu_dense();
// examples/mpm88 against the same substep in plain C++ (one thread).
void register_cpu_mpm();
// With OpenVDB (GROVE_BENCH_OPENVDB): sparse rows against OpenVDB and a
// hand-written block grid, and the occupancy sweep.
void register_cpu_sparse();

}  // namespace grove_bench
