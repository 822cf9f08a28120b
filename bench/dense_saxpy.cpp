// dense_saxpy.cpp — y[i] = a * x[i] + y[i] over 1<<16 f32 elements: a Grove
// for_range kernel on a dense 1-D field against a plain loop over std::vector.
#include <cmath>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "harness.h"

namespace grove_bench {
namespace {

constexpr int kSize = 1 << 16;
constexpr float kA = 0.5f;
constexpr std::string_view kWorkload = "dense_saxpy";

void saxpy_grove(benchmark::State& state, grove::Arch arch) {
  using namespace grove;
  try {
    Program prog(grove_bench::steady_config(arch));
    Field x = prog.field(f32, "x", {kSize});
    Field y = prog.field(f32, "y", {kSize});
    Kernel saxpy = prog.kernel("saxpy", {arg(f32, "a")}, [&](Args args) {
      for_range(0, kSize, [&](Expr i) { y(i) = args[0] * x(i).load() + y(i).load(); });
    });

    // Compile, and check one launch, outside the timed loop.
    const std::vector<float> xs = mod7_values(kSize);
    x.from_vector(xs);
    y.fill(1.0f);
    saxpy(2.0f);
    prog.sync();
    const std::vector<float> ys = y.to_vector<float>();
    for (size_t i = 0; i < ys.size(); ++i) {
      if (std::abs(ys[i] - (2.0f * xs[i] + 1.0f)) > 1e-6f) {
        state.SkipWithError(("wrong result at y[" + std::to_string(i) + "]").c_str());
        return;
      }
    }

    for (auto _ : state) {
      saxpy(kA);
      prog.sync();
    }
  } catch (const grove::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  state.SetItemsProcessed(state.iterations() * kSize);
  state.SetBytesProcessed(state.iterations() * kSize * 3 * int64_t{sizeof(float)});
}

void saxpy_cpp(benchmark::State& state) {
  const std::vector<float> x = mod7_values(kSize);
  std::vector<float> y(kSize, 1.0f);
  for (auto _ : state) {
    for (size_t i = 0; i < y.size(); ++i) y[i] = kA * x[i] + y[i];
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kSize);
  state.SetBytesProcessed(state.iterations() * kSize * 3 * int64_t{sizeof(float)});
}

}  // namespace

void register_dense_saxpy() {
  for (const grove::Arch arch : runnable_backends()) {
    benchmark::RegisterBenchmark(grove_name(kWorkload, arch).c_str(), saxpy_grove, arch)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark(baseline_name(kWorkload, "cpp").c_str(), saxpy_cpp)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

}  // namespace grove_bench
