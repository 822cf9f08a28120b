// vulkan_dense.cpp — Grove's generated SPIR-V against hand-written GLSL on
// the same Vulkan device, dense workloads:
//
//   vk_saxpy        y = a * x + y over 1<<20 f32
//   vk_stencil5     one Jacobi step of a 5-point stencil on 1024 x 1024 f32 (read a, write b)
//   vk_reduce_sum   the sum of 1<<20 f32 into one value with atomics
//
// Each is one pair benchmark, "<workload>/pair/vulkan/glsl" (harness.h):
// the Grove side is a kernel launched through the public API
// (Arch::Vulkan), the GLSL side a shader of shaders/ dispatched through
// runtime/vulkan's Device on buffers of the same size; a run of either is
// one launch and a sync. Before timing, the Grove side checks one launch
// against a C++ reference and the GLSL side checks one launch against the
// Grove result.
#include <cstdint>
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

constexpr int kIterations = 100;  // runs of each side per repetition

grove::Config vulkan_config() {
  grove::Config c;
  c.arch = grove::Arch::Vulkan;
  return c;
}

std::uint32_t groups_for(std::uint64_t invocations, std::uint32_t local_size) {
  return static_cast<std::uint32_t>((invocations + local_size - 1) / local_size);
}

// ---- saxpy ---------------------------------------------------------------------

constexpr int kSaxpyN = 1 << 20;
constexpr float kSaxpyA = 2.0f;
constexpr std::string_view kSaxpy = "vk_saxpy";

struct GroveSaxpy {
  grove::Program prog{vulkan_config()};
  grove::Field x = prog.field(grove::f32, "x", {kSaxpyN});
  grove::Field y = prog.field(grove::f32, "y", {kSaxpyN});
  grove::Kernel saxpy = prog.kernel("saxpy", {grove::arg(grove::f32, "a")}, [this](grove::Args a) {
    grove::for_range(0, kSaxpyN, [&](Expr i) { y(i) = a[0] * x(i).load() + y(i).load(); });
  });

  // y after one launch from x = mod7_values(kSaxpyN), y = 1.
  std::vector<float> first_result() {
    x.from_vector(mod7_values(kSaxpyN));
    y.fill(1.0f);
    saxpy(kSaxpyA);
    prog.sync();
    return y.to_vector<float>();
  }
};

Pair saxpy_pair() {
  auto g = std::make_shared<GroveSaxpy>();
  const std::vector<float> got = g->first_result();
  std::vector<float> want = mod7_values(kSaxpyN);
  for (float& v : want) v = kSaxpyA * v + 1.0f;
  vkb::check(vkb::compare(got, want, 0.0f, "Grove saxpy"));

  std::shared_ptr<vk::Device> dev = vkb::device_of(g, g->prog);
  const std::uint64_t bytes = std::uint64_t{kSaxpyN} * 4;
  vk::BufferId x = dev->create_buffer(bytes, "x");
  vk::BufferId y = dev->create_buffer(bytes, "y");
  vk::PipelineId pipe = vkb::shader_pipeline(*dev, grove::shaders::bench_saxpy, 2, 8, "bench_saxpy");
  const std::vector<float> xs = mod7_values(kSaxpyN);
  dev->write_buffer(x, 0, xs.data(), bytes);
  dev->fill_buffer(y, 0, bytes, vkb::float_bits(1.0f));
  const std::vector<vk::Dispatch> launch{
      {pipe, {x, y}, {vkb::float_bits(kSaxpyA), kSaxpyN}, groups_for(kSaxpyN, 256)}};
  dev->launch(launch);
  std::vector<float> glsl(kSaxpyN);
  dev->read_buffer(y, 0, glsl.data(), bytes);
  vkb::check(vkb::compare(glsl, got, 0.0f, "GLSL saxpy vs Grove"));

  return vkb::glsl_pair(
      [g] {
        g->saxpy(kSaxpyA);
        g->prog.sync();
      },
      dev, launch, kSaxpyN);
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

Pair stencil_pair() {
  auto g = std::make_shared<GroveStencil>();
  const std::vector<float> got = g->first_result();
  const std::vector<float> as = stencil_a();
  std::vector<float> want(as.size(), 0.0f);
  constexpr size_t n = kStencilN;
  for (size_t i = 1; i + 1 < n; ++i)
    for (size_t j = 1; j + 1 < n; ++j)
      want[i * n + j] = 0.25f * (as[(i - 1) * n + j] + as[(i + 1) * n + j] + as[i * n + j - 1] + as[i * n + j + 1]);
  vkb::check(vkb::compare(got, want, 0.0f, "Grove stencil"));

  std::shared_ptr<vk::Device> dev = vkb::device_of(g, g->prog);
  constexpr std::uint64_t cells = std::uint64_t{kStencilN} * kStencilN;
  vk::BufferId a = dev->create_buffer(cells * 4, "a");
  vk::BufferId b = dev->create_buffer(cells * 4, "b");
  vk::PipelineId pipe = vkb::shader_pipeline(*dev, grove::shaders::bench_stencil5, 2, 4, "bench_stencil5");
  dev->write_buffer(a, 0, as.data(), cells * 4);
  const std::vector<vk::Dispatch> launch{{pipe, {a, b}, {kStencilN}, groups_for(cells, 256)}};
  dev->launch(launch);
  std::vector<float> glsl(cells);
  dev->read_buffer(b, 0, glsl.data(), cells * 4);
  vkb::check(vkb::compare(glsl, got, 0.0f, "GLSL stencil vs Grove"));

  return vkb::glsl_pair(
      [g] {
        g->step();
        g->prog.sync();
      },
      dev, launch, static_cast<std::int64_t>(cells));
}

// ---- reduction --------------------------------------------------------------------

constexpr int kReduceN = 1 << 20;
constexpr std::uint32_t kReduceLocal = 256;
constexpr std::uint32_t kReducePerInvocation = 16;  // elements each GLSL invocation sums
constexpr std::string_view kReduce = "vk_reduce_sum";

struct GroveReduce {
  grove::Program prog{vulkan_config()};
  grove::Field x = prog.field(grove::f32, "x", {kReduceN});
  grove::Field total = prog.field(grove::f32, "total", {});
  grove::Kernel sum = prog.kernel("sum", [this] {
    grove::for_range(0, kReduceN, [&](Expr i) { total() += x(i).load(); });
  });

  float first_result() {
    x.from_vector(mod7_values(kReduceN));
    total.write({}, 0.0f);
    sum();
    prog.sync();
    return total.read<float>();
  }
};

Pair reduce_pair() {
  auto g = std::make_shared<GroveReduce>();
  const float got = g->first_result();
  double sum = 0;
  for (float v : mod7_values(kReduceN)) sum += v;
  const float want = static_cast<float>(sum);
  vkb::check(vkb::compare({&got, 1}, {&want, 1}, 0.0f, "Grove sum"));

  std::shared_ptr<vk::Device> dev = vkb::device_of(g, g->prog);
  if (!dev->info().atomic_float32_add)
    throw grove::Error("the device has no float atomic add (shaderBufferFloat32AtomicAdd) for the GLSL sum");
  constexpr std::uint64_t bytes = std::uint64_t{kReduceN} * 4;
  vk::BufferId x = dev->create_buffer(bytes, "x");
  vk::BufferId total = dev->create_buffer(4, "total");
  vk::PipelineId pipe = vkb::shader_pipeline(*dev, grove::shaders::bench_reduce_sum, 2, 4, "bench_reduce_sum");
  const std::vector<float> xs = mod7_values(kReduceN);
  dev->write_buffer(x, 0, xs.data(), bytes);
  dev->fill_buffer(total, 0, 4, vkb::float_bits(0.0f));
  const std::vector<vk::Dispatch> launch{
      {pipe, {x, total}, {kReduceN}, groups_for(kReduceN, kReduceLocal * kReducePerInvocation)}};
  dev->launch(launch);
  float glsl = 0;
  dev->read_buffer(total, 0, &glsl, 4);
  vkb::check(vkb::compare({&glsl, 1}, {&got, 1}, 0.0f, "GLSL sum vs Grove"));

  return vkb::glsl_pair(
      [g] {
        g->sum();
        g->prog.sync();
      },
      dev, launch, kReduceN);
}

}  // namespace

void register_vulkan_dense() {
  register_pair(kSaxpy, grove::Arch::Vulkan, vkb::kGlsl, kIterations, vkb::kRepetitions, saxpy_pair);
  register_pair(kStencil, grove::Arch::Vulkan, vkb::kGlsl, kIterations, vkb::kRepetitions, stencil_pair);
  register_pair(kReduce, grove::Arch::Vulkan, vkb::kGlsl, kIterations, vkb::kRepetitions, reduce_pair);
}

}  // namespace grove_bench
