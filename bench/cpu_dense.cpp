// cpu_dense.cpp — the CPU backend's dense rows against hand-written C++
// (cpu_baselines.h: the same loops over oneTBB, -O3 -march=native), each on
// 1 and on 2 threads (Config::cpu_threads and the baseline's task arena):
//
//   cpu_copy      b = a                   2^28 f32 (2 GiB per side)   STREAM copy
//   cpu_triad     a = b + s c             2^28 f32 (3 GiB per side)   STREAM triad
//   cpu_saxpy     y = a x + y             2^28 f32 (2 GiB per side)
//   cpu_saxpy_nd  y += a x over a 2^14 x 2^14 shape (Taichi's ndrange form)
//   cpu_stencil5  one Jacobi step, 8192^2 f32 (512 MiB per side)
//   cpu_stencil5_nd  the same written as for_range over the shape (Taichi's ndrange)
//   cpu_sum       the sum of 2^28 i32    (1 GiB per side)
//
// Copy and triad calibrate: their baselines run at the machine's memory
// bandwidth, the limit the other rows are read against (counters grove_GBps
// and baseline_GBps: bytes each side moves per second, STREAM's counting:
// a write counts once). Each is a pair benchmark named
// "<workload>_<threads>t/pair/cpu/cpp_tbb" (harness.h); a run of either side
// is one launch (one call). Both sides are checked against values worked
// out here before timing.
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "cpu_baselines.h"
#include "harness.h"

namespace grove_bench {
namespace {

using grove::Expr;

constexpr std::int64_t kN = std::int64_t{1} << 28;
constexpr std::int64_t kStencilN = 8192;
constexpr int kIterations = 6;    // runs of each side per repetition
constexpr int kRepetitions = 2;
constexpr std::string_view kBaseline = "cpp_tbb";

// i % 7 as floats (exact sums), without a second copy.
void fill_mod7(float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 7);
}

// Grove's fields are filled by kernels and checked at these elements (the
// first, the last, and 4096 spread between): a host copy of a whole 2^28
// field would double the memory these rows take.
std::vector<std::int64_t> samples(std::int64_t n) {
  std::vector<std::int64_t> out{0, n - 1};
  for (std::int64_t s = 0; s < 4096; ++s) out.push_back((s * 65537 + 12345) % n);
  return out;
}

// Checks Grove's field f against want(i) at the samples.
void check_samples(const grove::Field& f, std::int64_t n, const std::function<float(std::int64_t)>& want,
                   const std::string& what) {
  for (const std::int64_t i : samples(n)) {
    const float got = f.read<float>({i});
    if (got != want(i))
      throw grove::Error("wrong result: " + what + " at " + std::to_string(i) + ": " + std::to_string(got) +
                         ", want " + std::to_string(want(i)));
  }
}

// ---- STREAM copy and triad -------------------------------------------------------

Pair copy_pair(int threads) {
  struct Grove {
    grove::Program prog;
    grove::Field a, b;
    grove::Kernel init, copy;
    explicit Grove(int threads) : prog(cpu_config(threads)) {
      a = prog.field(grove::f32, "a", {kN});
      b = prog.field(grove::f32, "b", {kN});
      init = prog.kernel("init", [this] { grove::for_range(0, kN, [&](Expr i) { a(i) = grove::cast(grove::f32, i % 7); }); });
      copy = prog.kernel("copy", [this] { grove::for_range(0, kN, [&](Expr i) { b(i) = a(i).load(); }); });
    }
  };
  auto g = std::make_shared<Grove>(threads);
  auto t = std::make_shared<cpp::Threads>(threads);
  auto a = std::make_shared<cpp::LineVector<float>>(kN);
  auto b = std::make_shared<cpp::LineVector<float>>(kN, 0.0f);
  fill_mod7(a->data(), kN);
  g->init();
  g->copy();
  cpp::copy(*t, a->data(), b->data(), kN);
  check_samples(g->b, kN, [](std::int64_t i) { return static_cast<float>(i % 7); }, "Grove copy");
  check(*b == *a, "C++ copy");
  return {.grove = {[g] { g->copy(); }, {}},
          .baseline = {[t, a, b] { cpp::copy(*t, a->data(), b->data(), kN); }, {}},
          .items_per_run = kN,
          .bytes_per_run = 2.0 * 4 * kN};
}

constexpr float kS = 3.0f;  // triad's scalar
constexpr float kA = 0.5f;  // saxpy's

Pair triad_pair(int threads) {
  struct Grove {
    grove::Program prog;
    grove::Field a, b, c;
    grove::Kernel init, triad;
    explicit Grove(int threads) : prog(cpu_config(threads)) {
      a = prog.field(grove::f32, "a", {kN});
      b = prog.field(grove::f32, "b", {kN});
      c = prog.field(grove::f32, "c", {kN});
      init = prog.kernel("init", [this] {
        grove::for_range(0, kN, [&](Expr i) {
          b(i) = grove::cast(grove::f32, i % 7);
          c(i) = 2.0f;
        });
      });
      triad = prog.kernel("triad", {grove::arg(grove::f32, "s")}, [this](grove::Args s) {
        grove::for_range(0, kN, [&](Expr i) { a(i) = b(i).load() + s[0] * c(i).load(); });
      });
    }
  };
  auto g = std::make_shared<Grove>(threads);
  auto t = std::make_shared<cpp::Threads>(threads);
  auto a = std::make_shared<cpp::LineVector<float>>(kN, 0.0f);
  auto b = std::make_shared<cpp::LineVector<float>>(kN);
  auto c = std::make_shared<cpp::LineVector<float>>(kN, 2.0f);
  fill_mod7(b->data(), kN);
  g->init();
  g->triad(kS);
  cpp::triad(*t, a->data(), b->data(), c->data(), kS, kN);
  check_samples(g->a, kN, [](std::int64_t i) { return static_cast<float>(i % 7) + kS * 2.0f; }, "Grove triad");
  for (std::int64_t i = 0; i < kN; ++i)
    if ((*a)[static_cast<size_t>(i)] != static_cast<float>(i % 7) + kS * 2.0f) check(false, "C++ triad");
  return {.grove = {[g] { g->triad(kS); }, {}},
          .baseline = {[t, a, b, c] { cpp::triad(*t, a->data(), b->data(), c->data(), kS, kN); }, {}},
          .items_per_run = kN,
          .bytes_per_run = 3.0 * 4 * kN};
}

// ---- saxpy -----------------------------------------------------------------------

// The ndrange form: y += a x as Taichi writes it over a 2-D shape,
// `for i, j in ti.ndrange(n, n): y[i, j] += a * x[i, j]`, for_range over
// the shape with +=, which is each point's own element, so no atomic
// (demote_atomics); 2^14 x 2^14 f32, the same bytes, against the same flat
// C++ loop.
constexpr std::int64_t kSide = std::int64_t{1} << 14;
static_assert(kSide * kSide == kN);

Pair saxpy_pair(int threads, bool ndrange) {
  struct Grove {
    grove::Program prog;
    grove::Field x, y;
    grove::Kernel init, saxpy;
    Grove(int threads, bool ndrange) : prog(cpu_config(threads)) {
      if (ndrange) {
        x = prog.field(grove::f32, "x", {kSide, kSide});
        y = prog.field(grove::f32, "y", {kSide, kSide});
        init = prog.kernel("init", [this] {
          grove::for_range({kSide, kSide}, [&](Expr i, Expr j) {
            x(i, j) = grove::cast(grove::f32, (i * static_cast<int>(kSide) + j) % 7);
            y(i, j) = 1.0f;
          });
        });
        saxpy = prog.kernel("saxpy_nd", {grove::arg(grove::f32, "a")}, [this](grove::Args a) {
          grove::for_range({kSide, kSide}, [&](Expr i, Expr j) { y(i, j) += a[0] * x(i, j).load(); });
        });
        return;
      }
      x = prog.field(grove::f32, "x", {kN});
      y = prog.field(grove::f32, "y", {kN});
      init = prog.kernel("init", [this] {
        grove::for_range(0, kN, [&](Expr i) {
          x(i) = grove::cast(grove::f32, i % 7);
          y(i) = 1.0f;
        });
      });
      saxpy = prog.kernel("saxpy", {grove::arg(grove::f32, "a")}, [this](grove::Args a) {
        grove::for_range(0, kN, [&](Expr i) { y(i) = a[0] * x(i).load() + y(i).load(); });
      });
    }
  };
  auto g = std::make_shared<Grove>(threads, ndrange);
  auto t = std::make_shared<cpp::Threads>(threads);
  auto x = std::make_shared<cpp::LineVector<float>>(kN);
  auto y = std::make_shared<cpp::LineVector<float>>(kN, 1.0f);
  fill_mod7(x->data(), kN);
  g->init();
  g->saxpy(kA);
  cpp::saxpy(*t, kA, x->data(), y->data(), kN);
  // Exact: halves of small integers.
  const auto want = [](std::int64_t i) { return kA * static_cast<float>(i % 7) + 1.0f; };
  if (ndrange) {
    for (const std::int64_t s : samples(kN))
      check(g->y.read<float>({s / kSide, s % kSide}) == want(s), "Grove saxpy_nd at " + std::to_string(s));
  } else {
    check_samples(g->y, kN, want, "Grove saxpy");
  }
  for (std::int64_t i = 0; i < kN; ++i)
    if ((*y)[static_cast<size_t>(i)] != want(i)) check(false, "C++ saxpy");
  return {.grove = {[g] { g->saxpy(kA); }, {}},
          .baseline = {[t, x, y] { cpp::saxpy(*t, kA, x->data(), y->data(), kN); }, {}},
          .items_per_run = kN,
          .bytes_per_run = 3.0 * 4 * kN};
}

// ---- 5-point stencil -------------------------------------------------------------

// Small integers: every sum is exact in any order.
cpp::LineVector<float> stencil_input() {
  cpp::LineVector<float> a(static_cast<size_t>(kStencilN * kStencilN));
  for (std::int64_t i = 0; i < kStencilN; ++i)
    for (std::int64_t j = 0; j < kStencilN; ++j)
      a[static_cast<size_t>(i * kStencilN + j)] = static_cast<float>((i * 3 + j * 5) % 17);
  return a;
}

Pair stencil_pair(int threads, bool ndrange) {
  struct Grove {
    grove::Program prog;
    grove::Field a, b;
    grove::Kernel init, step;
    Grove(int threads, bool ndrange) : prog(cpu_config(threads)) {
      a = prog.field(grove::f32, "a", {kStencilN, kStencilN});
      b = prog.field(grove::f32, "b", {kStencilN, kStencilN});
      init = prog.kernel("init", [this] {
        grove::for_range(0, kStencilN, [&](Expr i) {
          grove::for_range(0, kStencilN, [&](Expr j) { a(i, j) = grove::cast(grove::f32, (i * 3 + j * 5) % 17); });
        });
      });
      // Rows in parallel, each row a serial loop: Taichi's
      // `for i, j in ti.ndrange((1, n - 1), (1, n - 1))` as written by hand.
      if (ndrange) {  // Taichi's form itself: for_range over the shape
        step = prog.kernel("jacobi_nd", [this] {
          constexpr int n = static_cast<int>(kStencilN);
          grove::for_range({{1, n - 1}, {1, n - 1}}, [&](Expr i, Expr j) {
            b(i, j) = 0.25f * (a(i - 1, j).load() + a(i + 1, j).load() + a(i, j - 1).load() + a(i, j + 1).load());
          });
        });
        return;
      }
      step = prog.kernel("jacobi", [this] {
        constexpr std::int64_t n = kStencilN;
        grove::for_range(1, n - 1, [&](Expr i) {
          grove::for_range(1, n - 1, [&](Expr j) {
            b(i, j) = 0.25f * (a(i - 1, j).load() + a(i + 1, j).load() + a(i, j - 1).load() + a(i, j + 1).load());
          });
        });
      });
    }
  };
  auto g = std::make_shared<Grove>(threads, ndrange);
  auto t = std::make_shared<cpp::Threads>(threads);
  auto a = std::make_shared<cpp::LineVector<float>>(stencil_input());
  auto b = std::make_shared<cpp::LineVector<float>>(a->size(), 0.0f);
  g->init();
  g->step();
  cpp::stencil5(*t, a->data(), b->data(), kStencilN);
  const std::int64_t n = kStencilN;
  const auto in = [](std::int64_t r, std::int64_t c) { return static_cast<float>((r * 3 + c * 5) % 17); };
  const auto want = [&](std::int64_t i, std::int64_t j) {
    if (i == 0 || j == 0 || i == n - 1 || j == n - 1) return 0.0f;  // the border is not written
    return 0.25f * (in(i - 1, j) + in(i + 1, j) + in(i, j - 1) + in(i, j + 1));
  };
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      if ((*b)[static_cast<size_t>(i * n + j)] != want(i, j)) check(false, "C++ stencil");
  for (const std::int64_t s : samples(n * n))
    check(g->b.read<float>({s / n, s % n}) == want(s / n, s % n), "Grove stencil at " + std::to_string(s));
  const double cells = static_cast<double>((n - 2) * (n - 2));
  return {.grove = {[g] { g->step(); }, {}},
          .baseline = {[t, a, b] { cpp::stencil5(*t, a->data(), b->data(), kStencilN); }, {}},
          .items_per_run = static_cast<std::int64_t>(cells),
          .bytes_per_run = 2.0 * 4 * cells};
}

// ---- sum reduction ---------------------------------------------------------------

Pair sum_pair(int threads) {
  struct Grove {
    grove::Program prog;
    grove::Field x, total;
    grove::Kernel init, sum;
    explicit Grove(int threads) : prog(cpu_config(threads)) {
      x = prog.field(grove::i32, "x", {kN});
      total = prog.field(grove::i32, "total", {});
      init = prog.kernel("init", [this] { grove::for_range(0, kN, [&](Expr i) { x(i) = grove::cast(grove::i32, i % 7); }); });
      sum = prog.kernel("sum", [this] {
        total() = 0;
        grove::for_range(0, kN, [&](Expr i) { total() += x(i).load(); });
      });
    }
  };
  auto g = std::make_shared<Grove>(threads);
  auto t = std::make_shared<cpp::Threads>(threads);
  auto x = std::make_shared<cpp::LineVector<std::int32_t>>(kN);
  std::int64_t want = 0;
  for (std::int64_t i = 0; i < kN; ++i) want += (*x)[static_cast<size_t>(i)] = static_cast<std::int32_t>(i % 7);
  g->init();
  g->sum();
  check(g->total.read<std::int32_t>() == want, "Grove sum " + std::to_string(g->total.read<std::int32_t>()) +
                                                   ", want " + std::to_string(want));
  check(cpp::sum(*t, x->data(), kN) == want, "C++ sum");
  auto sink = std::make_shared<std::int32_t>(0);
  return {.grove = {[g] { g->sum(); }, {}},
          .baseline = {[t, x, sink] { *sink = cpp::sum(*t, x->data(), kN); }, {}},
          .items_per_run = kN,
          .bytes_per_run = 4.0 * kN};
}

}  // namespace

void register_cpu_dense() {
  for (const int threads : {1, 2}) {
    register_pair(workload("cpu_copy", threads), grove::Arch::Cpu, kBaseline, kIterations, kRepetitions,
                  [threads] { return copy_pair(threads); });
    register_pair(workload("cpu_triad", threads), grove::Arch::Cpu, kBaseline, kIterations, kRepetitions,
                  [threads] { return triad_pair(threads); });
    register_pair(workload("cpu_saxpy", threads), grove::Arch::Cpu, kBaseline, kIterations, kRepetitions,
                  [threads] { return saxpy_pair(threads, false); });
    register_pair(workload("cpu_saxpy_nd", threads), grove::Arch::Cpu, kBaseline, kIterations, kRepetitions,
                  [threads] { return saxpy_pair(threads, true); });
    register_pair(workload("cpu_stencil5", threads), grove::Arch::Cpu, kBaseline, kIterations, kRepetitions,
                  [threads] { return stencil_pair(threads, false); });
    register_pair(workload("cpu_stencil5_nd", threads), grove::Arch::Cpu, kBaseline, kIterations, kRepetitions,
                  [threads] { return stencil_pair(threads, true); });
    register_pair(workload("cpu_sum", threads), grove::Arch::Cpu, kBaseline, kIterations, kRepetitions,
                  [threads] { return sum_pair(threads); });
  }
}

}  // namespace grove_bench
