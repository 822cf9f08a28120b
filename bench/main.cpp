// main.cpp — runs every benchmark, then writes the paired results as JSON
// (--out_json=FILE, default out/bench.json) and prints a table.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "harness.h"
#include "gpu_common.h"

int main(int argc, char** argv) {
  // Take --out_json=FILE out of argv before Google Benchmark sees it.
  std::string out_json = "out/bench.json";
  constexpr std::string_view kFlag = "--out_json=";
  std::vector<char*> args;
  for (int a = 0; a < argc; ++a) {
    const std::string_view arg = argv[a];
    if (a > 0 && arg.starts_with(kFlag)) {
      out_json = std::string(arg.substr(kFlag.size()));
    } else {
      args.push_back(argv[a]);
    }
  }
  if (out_json.empty()) {
    std::fprintf(stderr, "grove_bench: --out_json needs a file name\n");
    return 2;
  }
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;

  grove_bench::register_dense_saxpy();
  grove_bench::register_sparse_struct_for();
  grove_bench::register_many_kernels();
  grove_bench::register_host_copy();
  grove_bench::register_example_steps();
#ifdef GROVE_BENCH_VDB
  grove_bench::register_vdb_exchange();
#endif
#ifdef GROVE_BENCH_CPU
  grove_bench::register_cpu_compile();
  grove_bench::register_cpu_dense();
  grove_bench::register_cpu_mpm();
#ifdef GROVE_BENCH_OPENVDB
  grove_bench::register_cpu_sparse();
#else
  std::fprintf(stderr, "grove_bench: skipping the CPU sparse rows: OpenVDB was not found when Grove was "
                       "configured (scripts/install-deps.sh installs libopenvdb-dev)\n");
#endif
#endif
  grove_bench::register_gpu_dense();
  grove_bench::register_gpu_sparse();
  grove_bench::register_gpu_launch();
#ifdef GROVE_BENCH_VULKAN
  for (const grove_bench::gpu::Backend& b : grove_bench::gpu::backends()) {
    if (b.arch != grove::Arch::Vulkan) continue;
    grove_bench::register_vulkan_instantiate();
    grove_bench::register_spirv_compile();
  }
#endif

  grove_bench::CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  int failures = 0;
  for (const grove_bench::Measurement& m : reporter.measurements()) {
    if (!m.error.empty()) {
      std::fprintf(stderr, "grove_bench: %s/%s failed: %s\n", m.workload.c_str(),
                   m.variant.c_str(), m.error.c_str());
      ++failures;
    }
  }
  const std::vector<grove_bench::Record> records = grove_bench::pair_up(reporter.measurements());
  try {
    grove_bench::write_json(out_json, records);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grove_bench: %s\n", e.what());
    return 1;
  }
  grove_bench::print_table(records);
  std::printf("wrote %s (%zu record(s))\n", out_json.c_str(), records.size());
  return failures == 0 ? 0 : 1;
}
