// vulkan_dense.cpp — Grove's generated SPIR-V against hand-written GLSL on
// the same Vulkan device, dense workloads:
//
//   vk_saxpy        y = a * x + y over 1<<20 f32
//   vk_stencil5     one Jacobi step of a 5-point stencil on 1024 x 1024 f32 (read a, write b)
//   vk_reduce_sum   the sum of 1<<20 f32 into one value with atomics
//
// Each pair: "<workload>/grove/vulkan" is a Grove kernel launched through
// the public API (Arch::Vulkan); "<workload>/baseline/glsl" is a shader of
// shaders/ dispatched through runtime/vulkan's Device on buffers of the same
// size. Both time one launch and a sync per iteration. Before timing, the
// Grove side checks one launch against a C++ reference and the GLSL side
// checks one launch against the Grove result.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "harness.h"
#include "shaders/embedded.h"
#include "vulkan_common.h"

namespace grove_bench {
namespace {

using grove::Expr;
namespace vk = grove::vk;

constexpr int kIterations = 100;  // launches timed per benchmark (each one sync'd)

grove::Config vulkan_config() {
  grove::Config c;
  c.arch = grove::Arch::Vulkan;
  return c;
}

// Runs `body`, turning any exception into a skipped benchmark.
template <typename F>
void guarded(benchmark::State& state, F&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

std::uint32_t groups_for(std::uint64_t invocations, std::uint32_t local_size) {
  return static_cast<std::uint32_t>((invocations + local_size - 1) / local_size);
}

// ---- saxpy ---------------------------------------------------------------------

constexpr int kSaxpyN = 1 << 20;
constexpr float kSaxpyA = 2.0f;
constexpr std::string_view kSaxpy = "vk_saxpy";

std::vector<float> saxpy_x() {
  std::vector<float> x(kSaxpyN);
  for (int i = 0; i < kSaxpyN; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 7);
  return x;
}

struct GroveSaxpy {
  grove::Program prog{vulkan_config()};
  grove::Field x = prog.field(grove::f32, "x", {kSaxpyN});
  grove::Field y = prog.field(grove::f32, "y", {kSaxpyN});
  grove::Kernel saxpy = prog.kernel("saxpy", {grove::arg(grove::f32, "a")}, [this](grove::Args a) {
    grove::for_range(0, kSaxpyN, [&](Expr i) { y(i) = a[0] * x(i).load() + y(i).load(); });
  });

  // y after one launch from x = saxpy_x(), y = 1.
  std::vector<float> first_result() {
    x.from_vector(saxpy_x());
    y.fill(1.0f);
    saxpy(kSaxpyA);
    prog.sync();
    return y.to_vector<float>();
  }
};

std::vector<float>& saxpy_reference() {
  static std::vector<float> result;
  return result;
}

void saxpy_grove(benchmark::State& state) {
  guarded(state, [&] {
    GroveSaxpy g;
    std::vector<float> got = g.first_result();
    std::vector<float> want = saxpy_x();
    for (float& v : want) v = kSaxpyA * v + 1.0f;
    if (std::string e = vkb::compare(got, want, 0.0f, "Grove saxpy"); !e.empty()) {
      state.SkipWithError(e.c_str());
      return;
    }
    saxpy_reference() = std::move(got);
    for (auto _ : state) {
      g.saxpy(kSaxpyA);
      g.prog.sync();
    }
    state.SetItemsProcessed(state.iterations() * kSaxpyN);
  });
}

void saxpy_glsl(benchmark::State& state) {
  guarded(state, [&] {
    if (saxpy_reference().empty()) saxpy_reference() = GroveSaxpy().first_result();
    std::unique_ptr<vk::Device> dev = vkb::open_device();
    const std::uint64_t bytes = std::uint64_t{kSaxpyN} * 4;
    vk::BufferId x = dev->create_buffer(bytes, "x");
    vk::BufferId y = dev->create_buffer(bytes, "y");
    vk::PipelineId pipe = vkb::shader_pipeline(*dev, grove::shaders::bench_saxpy, 2, 8, "bench_saxpy");
    const std::vector<float> xs = saxpy_x();
    dev->write_buffer(x, 0, xs.data(), bytes);
    dev->fill_buffer(y, 0, bytes, vkb::float_bits(1.0f));
    const std::vector<vk::Dispatch> launch{
        {pipe, {x, y}, {vkb::float_bits(kSaxpyA), kSaxpyN}, groups_for(kSaxpyN, 256)}};
    dev->launch(launch);
    std::vector<float> got(kSaxpyN);
    dev->read_buffer(y, 0, got.data(), bytes);
    if (std::string e = vkb::compare(got, saxpy_reference(), 0.0f, "GLSL saxpy vs Grove"); !e.empty()) {
      state.SkipWithError(e.c_str());
      return;
    }
    for (auto _ : state) {
      dev->launch(launch);
      dev->sync();
    }
    state.SetItemsProcessed(state.iterations() * kSaxpyN);
  });
}

// ---- 5-point stencil -------------------------------------------------------------

constexpr int kStencilN = 1024;
constexpr std::string_view kStencil = "vk_stencil5";

// Small integers, so that every sum is exact in any order.
std::vector<float> stencil_a() {
  std::vector<float> a(static_cast<size_t>(kStencilN) * kStencilN);
  for (int i = 0; i < kStencilN; ++i)
    for (int j = 0; j < kStencilN; ++j)
      a[static_cast<size_t>(i) * kStencilN + static_cast<size_t>(j)] = static_cast<float>((i * 3 + j * 5) % 17);
  return a;
}

struct GroveStencil {
  grove::Program prog{vulkan_config()};
  grove::Field a = prog.field(grove::f32, "a", {kStencilN, kStencilN});
  grove::Field b = prog.field(grove::f32, "b", {kStencilN, kStencilN});
  grove::Kernel step = prog.kernel("jacobi", [this] {
    constexpr int n = kStencilN;
    grove::for_range(0, n * n, [&](Expr c) {
      Expr i = c / n, j = c % n;
      grove::if_(i > 0 && i < n - 1 && j > 0 && j < n - 1, [&] {
        b(i, j) = 0.25f * (a(i - 1, j).load() + a(i + 1, j).load() + a(i, j - 1).load() + a(i, j + 1).load());
      });
    });
  });

  std::vector<float> first_result() {
    a.from_vector(stencil_a());
    step();
    prog.sync();
    return b.to_vector<float>();
  }
};

std::vector<float>& stencil_reference() {
  static std::vector<float> result;
  return result;
}

void stencil_grove(benchmark::State& state) {
  guarded(state, [&] {
    GroveStencil g;
    std::vector<float> got = g.first_result();
    const std::vector<float> a = stencil_a();
    std::vector<float> want(a.size(), 0.0f);
    constexpr size_t n = kStencilN;
    for (size_t i = 1; i + 1 < n; ++i)
      for (size_t j = 1; j + 1 < n; ++j)
        want[i * n + j] = 0.25f * (a[(i - 1) * n + j] + a[(i + 1) * n + j] + a[i * n + j - 1] + a[i * n + j + 1]);
    if (std::string e = vkb::compare(got, want, 0.0f, "Grove stencil"); !e.empty()) {
      state.SkipWithError(e.c_str());
      return;
    }
    stencil_reference() = std::move(got);
    for (auto _ : state) {
      g.step();
      g.prog.sync();
    }
    state.SetItemsProcessed(state.iterations() * kStencilN * kStencilN);
  });
}

void stencil_glsl(benchmark::State& state) {
  guarded(state, [&] {
    if (stencil_reference().empty()) stencil_reference() = GroveStencil().first_result();
    std::unique_ptr<vk::Device> dev = vkb::open_device();
    constexpr std::uint64_t cells = std::uint64_t{kStencilN} * kStencilN;
    vk::BufferId a = dev->create_buffer(cells * 4, "a");
    vk::BufferId b = dev->create_buffer(cells * 4, "b");
    vk::PipelineId pipe = vkb::shader_pipeline(*dev, grove::shaders::bench_stencil5, 2, 4, "bench_stencil5");
    const std::vector<float> as = stencil_a();
    dev->write_buffer(a, 0, as.data(), cells * 4);
    const std::vector<vk::Dispatch> launch{{pipe, {a, b}, {kStencilN}, groups_for(cells, 256)}};
    dev->launch(launch);
    std::vector<float> got(cells);
    dev->read_buffer(b, 0, got.data(), cells * 4);
    if (std::string e = vkb::compare(got, stencil_reference(), 0.0f, "GLSL stencil vs Grove"); !e.empty()) {
      state.SkipWithError(e.c_str());
      return;
    }
    for (auto _ : state) {
      dev->launch(launch);
      dev->sync();
    }
    state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(cells));
  });
}

// ---- reduction --------------------------------------------------------------------

constexpr int kReduceN = 1 << 20;
constexpr std::uint32_t kReduceLocal = 256;
constexpr std::uint32_t kReducePerInvocation = 16;  // elements each GLSL invocation sums
constexpr std::string_view kReduce = "vk_reduce_sum";

// Integers 0..6: every partial sum is an integer below 2^24, exact in any order.
std::vector<float> reduce_x() {
  std::vector<float> x(kReduceN);
  for (int i = 0; i < kReduceN; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 7);
  return x;
}

struct GroveReduce {
  grove::Program prog{vulkan_config()};
  grove::Field x = prog.field(grove::f32, "x", {kReduceN});
  grove::Field total = prog.field(grove::f32, "total", {});
  grove::Kernel sum = prog.kernel("sum", [this] {
    grove::for_range(0, kReduceN, [&](Expr i) { total() += x(i).load(); });
  });

  float first_result() {
    x.from_vector(reduce_x());
    total.write({}, 0.0f);
    sum();
    prog.sync();
    return total.read<float>();
  }
};

std::vector<float>& reduce_reference() {
  static std::vector<float> result;
  return result;
}

void reduce_grove(benchmark::State& state) {
  guarded(state, [&] {
    GroveReduce g;
    const float got = g.first_result();
    double sum = 0;
    for (float v : reduce_x()) sum += v;
    const float want = static_cast<float>(sum);
    if (std::string e = vkb::compare({&got, 1}, {&want, 1}, 0.0f, "Grove sum"); !e.empty()) {
      state.SkipWithError(e.c_str());
      return;
    }
    reduce_reference() = {got};
    for (auto _ : state) {
      g.sum();
      g.prog.sync();
    }
    state.SetItemsProcessed(state.iterations() * kReduceN);
  });
}

void reduce_glsl(benchmark::State& state) {
  guarded(state, [&] {
    if (reduce_reference().empty()) reduce_reference() = {GroveReduce().first_result()};
    std::unique_ptr<vk::Device> dev = vkb::open_device();
    if (!dev->info().atomic_float32_add) {
      state.SkipWithError("the device has no float atomic add (shaderBufferFloat32AtomicAdd)");
      return;
    }
    constexpr std::uint64_t bytes = std::uint64_t{kReduceN} * 4;
    vk::BufferId x = dev->create_buffer(bytes, "x");
    vk::BufferId total = dev->create_buffer(4, "total");
    vk::PipelineId pipe = vkb::shader_pipeline(*dev, grove::shaders::bench_reduce_sum, 2, 4, "bench_reduce_sum");
    const std::vector<float> xs = reduce_x();
    dev->write_buffer(x, 0, xs.data(), bytes);
    dev->fill_buffer(total, 0, 4, vkb::float_bits(0.0f));
    const std::vector<vk::Dispatch> launch{
        {pipe, {x, total}, {kReduceN}, groups_for(kReduceN, kReduceLocal * kReducePerInvocation)}};
    dev->launch(launch);
    float got = 0;
    dev->read_buffer(total, 0, &got, 4);
    if (std::string e = vkb::compare({&got, 1}, reduce_reference(), 0.0f, "GLSL sum vs Grove"); !e.empty()) {
      state.SkipWithError(e.c_str());
      return;
    }
    for (auto _ : state) {
      dev->launch(launch);
      dev->sync();
    }
    state.SetItemsProcessed(state.iterations() * kReduceN);
  });
}

void add(std::string_view workload, void (*grove_fn)(benchmark::State&), void (*glsl_fn)(benchmark::State&)) {
  benchmark::RegisterBenchmark(grove_name(workload, grove::Arch::Vulkan).c_str(), grove_fn)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime()
      ->Iterations(kIterations)
      ->Repetitions(vkb::kRepetitions);
  benchmark::RegisterBenchmark(baseline_name(workload, vkb::kGlsl).c_str(), glsl_fn)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime()
      ->Iterations(kIterations)
      ->Repetitions(vkb::kRepetitions);
}

}  // namespace

void register_vulkan_dense() {
  add(kSaxpy, saxpy_grove, saxpy_glsl);
  add(kStencil, stencil_grove, stencil_glsl);
  add(kReduce, reduce_grove, reduce_glsl);
}

}  // namespace grove_bench
