// harness.h — pairs each Grove benchmark with its C++ baseline and reports
// both as records of out/bench.json.
//
// Benchmarks are registered under names of the form
//   <workload>/grove/<backend>      e.g. dense_saxpy/grove/interp
//   <workload>/baseline/<baseline>  e.g. dense_saxpy/baseline/cpp
// and every Grove result is paired with every baseline of the same workload.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>
#include <grove/program.h>

namespace grove_bench {

std::string grove_name(std::string_view workload, grove::Arch arch);
std::string baseline_name(std::string_view workload, std::string_view baseline);

// One benchmark's outcome: mean real time per iteration over its repetitions.
struct Measurement {
  std::string workload;  // includes benchmark arguments, e.g. "dense_saxpy/1024"
  bool is_grove = false;
  std::string variant;   // backend for Grove, baseline name otherwise
  double seconds = 0;    // real time per iteration
  int repetitions = 0;
  std::string error;     // non-empty when the benchmark failed or skipped
};

// One record of bench.json.
struct Record {
  std::string name;      // the workload
  std::string backend;
  std::string baseline;
  double grove_s = 0;
  double baseline_s = 0;
  double ratio = 0;      // baseline_s / grove_s: above 1 means Grove is faster
};

// Prints the usual console output and keeps every measurement.
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override;
  const std::vector<Measurement>& measurements() const { return measurements_; }

 private:
  std::vector<Measurement> measurements_;
};

std::vector<Record> pair_up(const std::vector<Measurement>& measurements);
// Writes the records as a JSON list, creating the parent directory.
void write_json(const std::filesystem::path& path, const std::vector<Record>& records);
void print_table(const std::vector<Record>& records);

// Workloads (one file each).
void register_dense_saxpy();
void register_sparse_struct_for();
// Vulkan only (GROVE_WITH_VULKAN): generated SPIR-V against hand-written
// GLSL, launch overhead, and SPIR-V compile latency.
void register_vulkan_dense();
void register_vulkan_sparse();
void register_vulkan_launch();
void register_spirv_compile();

}  // namespace grove_bench
