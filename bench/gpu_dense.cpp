// gpu_dense.cpp — Grove's kernels against hand-written ones on the same GPU
// (GLSL on Vulkan, nvcc's CUDA on CUDA: gpu_common.h), dense workloads:
//
//   <prefix>_saxpy        y = a * x + y over 1<<20 f32
//   <prefix>_stencil5     one Jacobi step of a 5-point stencil on 1024 x 1024 f32 (read a, write b)
//   <prefix>_stencil5_nd  the same step as a for_range over the interior's shape, its side an argument
//   <prefix>_reduce_sum   the sum of 1<<20 f32 into one value with atomics
//
// Each is one pair benchmark per GPU backend, "vk_saxpy/pair/vulkan/glsl",
// "cuda_saxpy/pair/cuda/nvcc" (harness.h): the Grove side is a kernel
// launched through the public API, the hand-written side a kernel of
// shaders/ or bench/cuda/ launched on buffers of the same size on the same
// device; a run of either is one launch and a sync. Before timing, the
// Grove side checks one launch against a C++ reference and the hand-written
// side checks one launch against the Grove result. Each side's bandwidth is
// reported, and its share of the device's peak where the API says it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "gpu_common.h"
#include "harness.h"

namespace grove_bench {
namespace {

using grove::Expr;
using gpu::HandWritten;

constexpr int kIterations = 100;  // runs of each side per repetition

// ---- saxpy ---------------------------------------------------------------------

constexpr int kSaxpyN = 1 << 20;
constexpr float kSaxpyA = 2.0f;

struct GroveSaxpy {
  explicit GroveSaxpy(grove::Arch arch) : prog(steady_config(arch)) {}
  grove::Program prog;
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

Pair saxpy_pair(const gpu::Backend& backend) {
  auto g = std::make_shared<GroveSaxpy>(backend.arch);
  const std::vector<float> got = g->first_result();
  std::vector<float> want = mod7_values(kSaxpyN);
  for (float& v : want) v = kSaxpyA * v + 1.0f;
  gpu::check(gpu::compare(got, want, 0.0f, "Grove saxpy"));

  std::shared_ptr<HandWritten> dev = backend.open(g, g->prog);
  const std::uint64_t bytes = std::uint64_t{kSaxpyN} * 4;
  HandWritten::Buffer x = dev->create_buffer(bytes, "x");
  HandWritten::Buffer y = dev->create_buffer(bytes, "y");
  const std::vector<float> xs = mod7_values(kSaxpyN);
  dev->write(x, 0, xs.data(), bytes);
  dev->fill(y, 0, bytes, gpu::float_bits(1.0f));
  const HandWritten::Launch launch =
      dev->prepare("bench_saxpy", {x, y}, {gpu::float_bits(kSaxpyA), kSaxpyN}, gpu::groups_for(kSaxpyN, 256), 256);
  dev->launch(launch);
  std::vector<float> theirs(kSaxpyN);
  dev->read(y, 0, theirs.data(), bytes);
  gpu::check(gpu::compare(theirs, got, 0.0f, std::string(backend.hand_written) + " saxpy vs Grove"));

  Pair p = gpu::hand_written_pair(
      [g] {
        g->saxpy(kSaxpyA);
        g->prog.sync();
      },
      dev, {launch}, kSaxpyN);
  gpu::report_bandwidth(p, 3.0 * bytes, dev->peak_bytes_per_second());  // x and y read, y written
  return p;
}

// ---- 5-point stencil -------------------------------------------------------------

constexpr int kStencilN = 1024;

// Small integers, so that every sum is exact in any order.
std::vector<float> stencil_a() {
  std::vector<float> a(static_cast<size_t>(kStencilN) * kStencilN);
  for (int i = 0; i < kStencilN; ++i)
    for (int j = 0; j < kStencilN; ++j)
      a[static_cast<size_t>(i) * kStencilN + static_cast<size_t>(j)] = static_cast<float>((i * 3 + j * 5) % 17);
  return a;
}

// `nd`: the step written as a for_range over the interior's shape, whose
// side is an argument (Taichi's ndrange with bounds only the launch knows):
// an invocation finds its point without a division by a constant.
struct GroveStencil {
  GroveStencil(grove::Arch arch, bool nd) : prog(steady_config(arch)), nd(nd) {}
  grove::Program prog;
  const bool nd;
  grove::Field a = prog.field(grove::f32, "a", {kStencilN, kStencilN});
  grove::Field b = prog.field(grove::f32, "b", {kStencilN, kStencilN});
  grove::Kernel flat = prog.kernel("jacobi", [this] {
    constexpr int n = kStencilN;
    grove::for_range(0, n * n, [&](Expr c) {
      Expr i = c / n, j = c % n;
      grove::if_(i > 0 && i < n - 1 && j > 0 && j < n - 1, [&] {
        b(i, j) = 0.25f * (a(i - 1, j).load() + a(i + 1, j).load() + a(i, j - 1).load() + a(i, j + 1).load());
      });
    });
  });
  grove::Kernel shaped = prog.kernel("jacobi_nd", {grove::arg(grove::i32, "n")}, [this](grove::Args args) {
    const Expr last = args[0] - 1;
    grove::for_range({{Expr(1), last}, {Expr(1), last}}, [&](Expr i, Expr j) {
      b(i, j) = 0.25f * (a(i - 1, j).load() + a(i + 1, j).load() + a(i, j - 1).load() + a(i, j + 1).load());
    });
  });
  void step() {
    if (nd) shaped(kStencilN);
    else flat();
  }

  std::vector<float> first_result() {
    a.from_vector(stencil_a());
    step();
    prog.sync();
    return b.to_vector<float>();
  }
};

Pair stencil_pair(const gpu::Backend& backend, bool nd) {
  auto g = std::make_shared<GroveStencil>(backend.arch, nd);
  const std::vector<float> got = g->first_result();
  const std::vector<float> as = stencil_a();
  std::vector<float> want(as.size(), 0.0f);
  constexpr size_t n = kStencilN;
  for (size_t i = 1; i + 1 < n; ++i)
    for (size_t j = 1; j + 1 < n; ++j)
      want[i * n + j] = 0.25f * (as[(i - 1) * n + j] + as[(i + 1) * n + j] + as[i * n + j - 1] + as[i * n + j + 1]);
  gpu::check(gpu::compare(got, want, 0.0f, "Grove stencil"));

  std::shared_ptr<HandWritten> dev = backend.open(g, g->prog);
  constexpr std::uint64_t cells = std::uint64_t{kStencilN} * kStencilN;
  HandWritten::Buffer a = dev->create_buffer(cells * 4, "a");
  HandWritten::Buffer b = dev->create_buffer(cells * 4, "b");
  dev->write(a, 0, as.data(), cells * 4);
  dev->fill(b, 0, cells * 4, 0);
  const HandWritten::Launch launch = dev->prepare("bench_stencil5", {a, b}, {kStencilN}, gpu::groups_for(cells, 256), 256);
  dev->launch(launch);
  std::vector<float> theirs(cells);
  dev->read(b, 0, theirs.data(), cells * 4);
  gpu::check(gpu::compare(theirs, got, 0.0f, std::string(backend.hand_written) + " stencil vs Grove"));

  Pair p = gpu::hand_written_pair(
      [g] {
        g->step();
        g->prog.sync();
      },
      dev, {launch}, static_cast<std::int64_t>(cells));
  gpu::report_bandwidth(p, 2.0 * cells * 4, dev->peak_bytes_per_second());  // a read once (caches), b written
  return p;
}

// ---- reduction --------------------------------------------------------------------

constexpr int kReduceN = 1 << 20;
constexpr std::uint32_t kReduceLocal = 256;
constexpr std::uint32_t kReducePerInvocation = 16;  // elements each hand-written invocation sums

struct GroveReduce {
  explicit GroveReduce(grove::Arch arch) : prog(steady_config(arch)) {}
  grove::Program prog;
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

Pair reduce_pair(const gpu::Backend& backend) {
  auto g = std::make_shared<GroveReduce>(backend.arch);
  const float got = g->first_result();
  double sum = 0;
  for (float v : mod7_values(kReduceN)) sum += v;
  const float want = static_cast<float>(sum);
  gpu::check(gpu::compare({&got, 1}, {&want, 1}, 0.0f, "Grove sum"));

  std::shared_ptr<HandWritten> dev = backend.open(g, g->prog);
  if (!dev->float_atomic_add())
    throw grove::Error("the device has no float atomic add (shaderBufferFloat32AtomicAdd) for the hand-written sum");
  constexpr std::uint64_t bytes = std::uint64_t{kReduceN} * 4;
  HandWritten::Buffer x = dev->create_buffer(bytes, "x");
  HandWritten::Buffer total = dev->create_buffer(4, "total");
  const std::vector<float> xs = mod7_values(kReduceN);
  dev->write(x, 0, xs.data(), bytes);
  dev->fill(total, 0, 4, gpu::float_bits(0.0f));
  const HandWritten::Launch launch = dev->prepare("bench_reduce_sum", {x, total}, {kReduceN},
                                                  gpu::groups_for(kReduceN, kReduceLocal * kReducePerInvocation),
                                                  kReduceLocal);
  dev->launch(launch);
  float theirs = 0;
  dev->read(total, 0, &theirs, 4);
  gpu::check(gpu::compare({&theirs, 1}, {&got, 1}, 0.0f, std::string(backend.hand_written) + " sum vs Grove"));

  Pair p = gpu::hand_written_pair(
      [g] {
        g->sum();
        g->prog.sync();
      },
      dev, {launch}, kReduceN);
  gpu::report_bandwidth(p, static_cast<double>(bytes), dev->peak_bytes_per_second());
  return p;
}

}  // namespace

void register_gpu_dense() {
  for (const gpu::Backend& b : gpu::backends()) {
    register_pair(gpu::workload(b, "saxpy"), b.arch, b.hand_written, kIterations, gpu::kRepetitions,
                  [b] { return saxpy_pair(b); });
    register_pair(gpu::workload(b, "stencil5"), b.arch, b.hand_written, kIterations, gpu::kRepetitions,
                  [b] { return stencil_pair(b, false); });
    register_pair(gpu::workload(b, "stencil5_nd"), b.arch, b.hand_written, kIterations, gpu::kRepetitions,
                  [b] { return stencil_pair(b, true); });
    register_pair(gpu::workload(b, "reduce_sum"), b.arch, b.hand_written, kIterations, gpu::kRepetitions,
                  [b] { return reduce_pair(b); });
  }
}

}  // namespace grove_bench
