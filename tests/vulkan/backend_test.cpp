// tests/vulkan/backend_test.cpp — what only the Vulkan backend has: queued
// launches, print and assert reports through the context buffer, a
// mobile-like device (no 64-bit types, no float atomics, small buffers),
// concurrency on sparse structures, math precision and SPIR-V dumps. Every
// test runs with the validation layer and the SPIR-V validator on, and fails
// if either complains; without a Vulkan device it is skipped with the reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <thread>

#include "../api/backend_fixture.h"
#include "../support/scratch_dir.h"
#include "../support/sums_over_one_node.h"
#include "grove/grove.h"
#include "program/program_impl.h"
#include "program/test_hooks.h"
#include "runtime/vulkan/device.h"

namespace grove {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

using grove::testing::error_of;
using grove::testing::vulkan_unavailable_reason;

class VulkanBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = grove::testing::vulkan_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    setenv("GROVE_VALIDATE_SPIRV", "1", 1);
    messages_before_ = detail::vulkan_validation_messages().size();
  }
  void TearDown() override {
    detail::set_vulkan_test_profile({});
    if (IsSkipped()) return;
    std::vector<std::string> all = detail::vulkan_validation_messages();
    std::string fresh;
    for (size_t n = messages_before_; n < all.size(); ++n) fresh += all[n] + "\n";
    EXPECT_TRUE(fresh.empty()) << "the Vulkan validation layer reported:\n" << fresh;
  }
  static Config config() {
    Config c;
    c.arch = Arch::Vulkan;
    c.vulkan_validation = true;
    return c;
  }
  // A device without shaderInt64/shaderFloat64/float atomics, with 1 MiB
  // buffers and Vulkan's minimum of 128 invocations per group.
  static void use_mobile_profile() {
    detail::VulkanTestProfile p;
    p.no_int64 = true;
    p.no_float64 = true;
    p.no_float_atomics = true;
    p.max_storage_buffer_range = 1 << 20;
    p.max_workgroup_invocations = 128;
    detail::set_vulkan_test_profile(p);
  }

 private:
  size_t messages_before_ = 0;
};

// ---- math precision --------------------------------------------------------------

constexpr int64_t kScratch = (1 << 14) * 4;  // the program's scratch buffer, bytes

int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  auto key = [](float f) {
    int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  return std::llabs(key(a) - key(b));
}

// The math legalize writes for Vulkan (Cephes' f32 algorithms) stays within
// a few ulp of the host's libm on the device; pow and sqrt are the driver's.
// (tests/ir/legalize_test.cpp holds the algorithms to their bounds over many
// more arguments on the interpreter.)
TEST_F(VulkanBackend, MathFunctionsStayCloseToTheHost) {
  Program prog(config());
  const int n = 4096;
  const int functions = 12;
  Field in = prog.field(f32, "in", {n});
  Field out = prog.field(f32, "out", {functions, n});
  std::vector<float> xs(n);
  for (int k = 0; k < n; ++k) xs[static_cast<size_t>(k)] = -6.0f + 12.0f * static_cast<float>(k) / n + 1e-3f;
  in.from_vector(xs);
  Kernel k = prog.kernel("math", [&] {
    for_range(0, n, [&](Expr i) {
      Expr x = in(i);
      Expr unit = x / 6.5f;  // inside (-1, 1) for asin/acos
      out(0, i) = sin(x);
      out(1, i) = cos(x);
      out(2, i) = tan(x);
      out(3, i) = asin(unit);
      out(4, i) = acos(unit);
      out(5, i) = atan(x);
      out(6, i) = exp(x);
      out(7, i) = log(abs(x));
      out(8, i) = pow(abs(x), 2.5f);
      out(9, i) = atan2(x, 2.0f);
      out(10, i) = tanh(x);
      out(11, i) = sqrt(abs(x));
    });
  });
  k();
  std::vector<float> r = out.to_vector<float>();
  const char* names[functions] = {"sin", "cos", "tan", "asin", "acos", "atan", "exp", "log", "pow", "atan2", "tanh", "sqrt"};
  const int64_t bound[functions] = {4, 4, 4, 4, 4, 4, 4, 4, 16, 4, 4, 0};
  for (int f = 0; f < functions; ++f) {
    int64_t worst = 0;
    float worst_x = 0;
    for (int i = 0; i < n; ++i) {
      float x = xs[static_cast<size_t>(i)], unit = x / 6.5f, want = 0;
      switch (f) {
        case 0: want = std::sin(x); break;
        case 1: want = std::cos(x); break;
        case 2: want = std::tan(x); break;
        case 3: want = std::asin(unit); break;
        case 4: want = std::acos(unit); break;
        case 5: want = std::atan(x); break;
        case 6: want = std::exp(x); break;
        case 7: want = std::log(std::fabs(x)); break;
        case 8: want = std::pow(std::fabs(x), 2.5f); break;
        case 9: want = std::atan2(x, 2.0f); break;
        case 10: want = std::tanh(x); break;
        case 11: want = std::sqrt(std::fabs(x)); break;
      }
      int64_t d = ulp_distance(r[static_cast<size_t>(f * n + i)], want);
      if (d > worst) {
        worst = d;
        worst_x = x;
      }
    }
    std::printf("[ math     ] %-6s worst %lld ulp (at x = %g)\n", names[f], static_cast<long long>(worst), worst_x);
    EXPECT_LE(worst, bound[f]) << names[f] << " at x = " << worst_x;
  }
}

// f64 math on a device with f64 and without 64-bit integers: legalize's
// f64 forms use none, so the kernel runs (and pow's signed zeros too).
TEST_F(VulkanBackend, F64MathNeedsNoSixtyFourBitIntegers) {
  detail::VulkanTestProfile profile;
  profile.no_int64 = true;
  detail::set_vulkan_test_profile(profile);
  Program prog(config());
  const std::vector<double> xs = {0.5, 1.75, -3.25, 100.0, 1e-3, -0.0};
  const int n = static_cast<int>(xs.size());
  Field x = prog.field(f64, "x", {n});
  Field out = prog.field(f64, "out", {6, n});
  x.from_vector(xs);
  Kernel k = prog.kernel("f64_math", [&] {
    for_range(0, n, [&](Expr i) {
      Expr v = x(i);
      out(0, i) = exp(v);
      out(1, i) = log(abs(v) + 1.0);
      out(2, i) = sin(v);
      out(3, i) = tan(v);
      out(4, i) = atan2(v, 2.0);
      out(5, i) = pow(v, 3.0);
    });
  });
  k();
  const std::vector<double> r = out.to_vector<double>();
  for (int i = 0; i < n; ++i) {
    const double v = xs[static_cast<size_t>(i)];
    const double want[6] = {std::exp(v), std::log(std::fabs(v) + 1.0), std::sin(v), std::tan(v), std::atan2(v, 2.0),
                            std::pow(v, 3.0)};
    for (int f = 0; f < 6; ++f) {
      const double got = r[static_cast<size_t>(f * n + i)];
      EXPECT_NEAR(got, want[f], 1e-4 * std::max(1.0, std::fabs(want[f]))) << "function " << f << " of " << v;
      EXPECT_EQ(std::signbit(got), std::signbit(want[f])) << "function " << f << " of " << v;
    }
  }
}

TEST_F(VulkanBackend, MathSpecialValuesMatchTheHost) {
  Program prog(config());
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> ys = {0.0f, -0.0f, 0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, inf, -inf, 3.0f, -3.0f, nan, 1e-30f};
  std::vector<float> xs = {0.0f, 0.0f, -0.0f, -0.0f, -inf, -inf, inf, inf, -inf, -inf, 0.0f, -0.0f, 1.0f, 1e30f};
  const int n = static_cast<int>(xs.size());
  Field fy = prog.field(f32, "y", {n}), fx = prog.field(f32, "x", {n});
  Field out = prog.field(f32, "out", {6, n});
  fy.from_vector(ys);
  fx.from_vector(xs);
  Kernel k = prog.kernel("special", [&] {
    for_range(0, n, [&](Expr i) {
      out(0, i) = atan2(fy(i), fx(i));
      out(1, i) = exp(fy(i) * 100.0f);
      out(2, i) = log(fx(i));
      out(3, i) = tanh(fy(i));
      out(4, i) = atan(fy(i));
      out(5, i) = asin(fy(i));
    });
  });
  k();
  std::vector<float> r = out.to_vector<float>();
  for (int i = 0; i < n; ++i) {
    float y = ys[static_cast<size_t>(i)], x = xs[static_cast<size_t>(i)];
    float want[6] = {std::atan2(y, x), std::exp(y * 100.0f), std::log(x), std::tanh(y), std::atan(y), std::asin(y)};
    for (int f = 0; f < 6; ++f) {
      float got = r[static_cast<size_t>(f * n + i)];
      EXPECT_LE(ulp_distance(got, want[f]), 4) << "function " << f << " of y = " << y << ", x = " << x << ": got "
                                                << got << ", want " << want[f];
      if (want[f] == 0.0f && got == 0.0f) {
        EXPECT_EQ(std::signbit(got), std::signbit(want[f])) << "function " << f << " of y = " << y << ", x = " << x;
      }
    }
  }
}

// ---- queued launches ------------------------------------------------------------

// The sparse runtime's tasks are compiled once per device: a second kernel
// over the same pointer makes pipelines only for its own tasks (its list's
// clearing and generation are the first kernel's), and both kernels visit
// the right cells.
// Invocations of a subgroup that find one block inactive together activate
// it once, where each took a candidate entry and all but one left theirs
// spare (1,024 blocks took ~2,040 entries on lavapipe, 8 lanes to a
// subgroup): the pool holds exactly the blocks' entries. Writes of every
// element, a piece of a row per invocation and (as a GPU runs them) a point
// per invocation, against the values written.
TEST_F(VulkanBackend, ASubgroupActivatesABlockOnceAndLeavesNoSpareEntries) {
  for (const bool gpu_layout : {false, true}) {
    SCOPED_TRACE(gpu_layout ? "a point per invocation" : "a piece of a row per invocation");
    detail::VulkanTestProfile profile;
    profile.gpu_layout = gpu_layout;
    detail::set_vulkan_test_profile(profile);
    Program prog(config());
    Field x = prog.field(i32, "x");
    SNode& blocks = prog.root().pointer(i, 1024);
    blocks.dense(i, 64).place(x);
    Kernel w = prog.kernel("w", [&] { for_range(0, 1 << 16, [&](Expr n) { x(n) = n * 3; }); });
    w();
    std::vector<int32_t> want(1 << 16);
    for (size_t n = 0; n < want.size(); ++n) want[n] = static_cast<int32_t>(n * 3);
    EXPECT_EQ(x.to_vector<int32_t>(), want);
    const std::vector<uint32_t> slots = detail::root_pointer_slots(prog, blocks);
    const uint32_t largest = *std::max_element(slots.begin(), slots.end());
    if (detail::vulkan_device(prog)->info().subgroup_arithmetic) {
      EXPECT_EQ(largest, 1024u) << "entries taken past the blocks' own: spare candidates";
    } else {
      EXPECT_GE(largest, 1024u);
    }
  }
}

TEST_F(VulkanBackend, KernelsOverOneNodeShareItsListsPipelines) {
  grove::testing::SumsOverOneNode p(config());
  p.fill();
  vk::Device* device = detail::vulkan_device(p.prog);
  const size_t before = device->pipeline_count();
  p.sum();
  const size_t after_sum = device->pipeline_count();
  p.sum_twice();
  const size_t after_twice = device->pipeline_count();
  EXPECT_GE(after_twice - after_sum, 1u);
  EXPECT_GE(after_sum - before, after_twice - after_sum + 2) << "clear_list and listgen made again";
  p.expect_sums();
}

TEST_F(VulkanBackend, LaunchesAreQueuedWithoutWaiting) {
  Program prog(config());
  const int inner = 20000;  // per item, well below lavapipe's loop limit
  Field count = prog.field(i32, "count", {}), sink = prog.field(i32, "sink", {1 << 16});
  Kernel slow = prog.kernel("slow", {arg(i32, "items")}, [&](Args a) {
    for_range(0, a[0], [&](Expr item) {
      Var i = 0;
      Var acc = item;
      while_([&] { return i < inner; }, [&] {
        acc = (acc ^ (acc >> 7)) * 1664525 + i;  // nothing a compiler can fold
        i += 1;
      });
      sink(item) = acc;
    });
    for_range(0, 1, [&](Expr) { count() += 1; });
  });
  slow(1);  // compiles
  uint32_t lcg = 0;
  for (uint32_t i = 0; i < inner; ++i) lcg = (lcg ^ static_cast<uint32_t>(static_cast<int32_t>(lcg) >> 7)) * 1664525u + i;
  EXPECT_EQ(static_cast<uint32_t>(sink.read<int32_t>({0})), lcg);
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::duration d) { return std::chrono::duration<double>(d).count(); };
  // Calibrate: one launch should take a few milliseconds on the device.
  int items = 64;
  double one = 0;
  for (; items < (1 << 16); items *= 2) {
    auto t0 = clock::now();
    slow(items);
    prog.sync();
    one = seconds(clock::now() - t0);
    if (one > 0.005) break;
  }
  const int launches = 12;  // fewer than the device layer keeps in flight
  // The best of three tries: on a machine busy with other tests the host
  // thread can lose its core while it queues.
  double best = 1;
  for (int attempt = 0; attempt < 3 && best >= 0.5; ++attempt) {
    count.write({}, 0);
    auto t0 = clock::now();
    for (int l = 0; l < launches; ++l) slow(items);
    double queued = seconds(clock::now() - t0);
    prog.sync();
    double total = seconds(clock::now() - t0);
    std::printf("[ queue    ] one launch (%d items) %.2f ms; %d launches queued in %.2f ms, done after %.2f ms\n",
                items, one * 1e3, launches, queued * 1e3, total * 1e3);
    EXPECT_EQ(count.read<int32_t>(), launches);  // in order, none lost
    best = std::min(best, queued / total);
  }
  EXPECT_LT(best, 0.5);
}

TEST_F(VulkanBackend, LoopsPastLavapipesLimitAreAnErrorNotWrongResults) {
  Program prog(config());
  Field sink = prog.field(i32, "sink", {});
  Kernel k = prog.kernel("long_loop", {arg(i32, "n")}, [&](Args a) {
    Var i = 0;
    Var acc = 0;
    while_([&] { return i < a[0]; }, [&] {
      acc = (acc ^ (acc >> 7)) * 1664525 + i;
      i += 1;
    });
    sink() = acc;
  });
  k(1000);
  EXPECT_NE(sink.read<int32_t>(), 0);
  k(200000);
  std::string m = error_of([&] { prog.sync(); });
  if (prog.impl()->context->device().name().find("llvmpipe") == std::string::npos) {
    EXPECT_EQ(m, "(no error)");  // a driver without the limit runs it all
  } else {
    EXPECT_THAT(m, HasSubstr("kernel 'long_loop': one invocation of task 0 ('serial') reached 65535 loop iterations"));
    k(1000);  // the error was cleared
    prog.sync();
  }
}

// llvmpipe's limit counts every pass through a loop's end and two more per
// loop instance; Grove's count must never fall behind it, or deep nests
// stop silently (a 3-deep nest of 40 each once gave 62307 instead of
// 64000, a 15-deep nest of 2 each 16391 instead of 32768, with no error).
// Nests whose count is just below the limit run in full; one more
// innermost iteration is an error.
TEST_F(VulkanBackend, NestedLoopsAtLavapipesLimitAreRightOrAnError) {
  const bool limited = Program(config()).device_name().find("llvmpipe") != std::string::npos;
  struct Nest {
    int depth, outer, inner;  // `outer` iterations at every level but the innermost
    int64_t passes() const {  // llvmpipe's count: iterations + 2 per loop instance
      int64_t count = 0, instances = 1;
      for (int d = 0; d < depth; ++d) {
        const int64_t it = d == depth - 1 ? inner : outer;
        count += instances * (it + 2);
        instances *= it;
      }
      return count;
    }
    int64_t total() const {
      int64_t t = inner;
      for (int d = 0; d + 1 < depth; ++d) t *= outer;
      return t;
    }
  };
  for (Nest nest : {Nest{3, 39, 40}, Nest{4, 10, 62}, Nest{6, 4, 60}, Nest{12, 2, 26}, Nest{15, 2, 2}}) {
    for (int extra : {0, 1}) {
      Nest n = nest;
      n.inner += extra;
      SCOPED_TRACE(std::to_string(n.depth) + " deep, " + std::to_string(n.outer) + " x .. x " + std::to_string(n.inner));
      Program prog(config());
      Field x = prog.field(i32, "x", {1});
      Kernel k = prog.kernel("nest", [&] {
        for_range(0, 1, [&](Expr i) {
          Var acc = 0;
          std::function<void(int)> go = [&](int d) {
            if (d == n.depth) {
              acc += 1;
              return;
            }
            for_range(0, d == n.depth - 1 ? n.inner : n.outer, [&](Expr) { go(d + 1); });
          };
          go(0);
          x(i) = acc;
        });
      });
      if (limited && n.passes() >= 65535) {
        EXPECT_THAT(error_of([&] {
                      k();
                      prog.sync();
                    }),
                    HasSubstr("reached 65535 loop iterations"));
      } else {
        k();
        EXPECT_EQ(x.read<int64_t>({0}), n.total());
      }
    }
  }
}

// lavapipe's compile time grows much faster than a shader: a task longer
// than kLavapipeTaskWords words of SPIR-V is refused before its pipeline
// is made (a chain of 4,000 multiply-adds took 24 s, 10,000 did not finish
// in 120 s), naming the kernel and the task, and the Program goes on. A
// shorter chain runs, with the value a plain C++ loop computes.
TEST_F(VulkanBackend, TasksTooLongForLavapipeToCompileAreRefusedBeforeThePipeline) {
  Program prog(config());
  if (prog.device_name().find("llvmpipe") == std::string::npos) GTEST_SKIP() << "the limit is lavapipe's";
  Field x = prog.field(i32, "x", {2});
  auto chain = [&](const std::string& name, int n) {
    return prog.kernel(name, [&, n] {
      for_range(0, 2, [&](Expr i) {
        Var acc = i;
        for (int d = 0; d < n; ++d) acc = acc * 3 + d;
        x(i) = acc;
      });
    });
  };
  EXPECT_THAT(error_of([&] { chain("long", 20000)(); }),
              AllOf(HasSubstr("task 0 ('range_for') of kernel 'long'"), HasSubstr("words of SPIR-V, more than the 65536"),
                    HasSubstr("split the kernel")));
  // 9,000 values kept across tasks (read back from scratch by the parallel
  // task) once never finished compiling inside lavapipe.
  Field a = prog.field(i32, "a", {9000});
  Kernel kept = prog.kernel("kept", [&] {
    std::vector<Expr> values;
    for (int n = 0; n < 9000; ++n) values.push_back(a(n) * 2 + 1);
    for_range(0, 2, [&](Expr i) {
      Expr sum = i;
      for (const Expr& v : values) sum = sum + v;
      x(i) = sum;
    });
  });
  EXPECT_THAT(error_of([&] { kept(); }), AllOf(HasSubstr("of kernel 'kept'"), HasSubstr("words of SPIR-V")));
  chain("short", 300)();
  uint32_t want = 1;  // i = 1, in i32 arithmetic that wraps
  for (int d = 0; d < 300; ++d) want = want * 3u + static_cast<uint32_t>(d);
  EXPECT_EQ(static_cast<uint32_t>(x.read<int32_t>({1})), want);
}

TEST_F(VulkanBackend, ManyLaunchesThenOneReadSeeThemAllInOrder) {
  Program prog(config());
  Field x = prog.field(i32, "x", {256});
  Kernel step = prog.kernel("step", {arg(i32, "k")}, [&](Args a) {
    for_range(0, 256, [&](Expr i) { x(i) = x(i) * 3 + a[0] + i; });
  });
  std::vector<uint32_t> want(256, 0);  // i32 arithmetic wraps in Grove: model it without C++'s overflow
  for (int k = 0; k < 100; ++k) {
    step(k);
    for (int i = 0; i < 256; ++i)
      want[static_cast<size_t>(i)] = want[static_cast<size_t>(i)] * 3u + static_cast<uint32_t>(k + i);
  }
  std::vector<int32_t> got = x.to_vector<int32_t>();
  EXPECT_EQ(std::vector<uint32_t>(got.begin(), got.end()), want);
}

// Bounds from arguments give exactly enough groups; bounds read from memory
// are counted on the device, which writes the groups of an indirect
// dispatch (in x and y past 65535 groups, or in x with a grid-stride loop
// for a body that continues).
TEST_F(VulkanBackend, ParallelLoopsCoverEveryIteration) {
  Program prog(config());
  Field hits = prog.field(i32, "hits", {1 << 20});
  Field n = prog.field(i32, "n", {});
  Field total = prog.field(i64, "total", {});
  Kernel by_arg = prog.kernel("by_arg", {arg(i32, "lo"), arg(i32, "hi")}, [&](Args a) {
    for_range(a[0], a[1], [&](Expr i) { hits(i + 100) += 1; });
  });
  Kernel by_field = prog.kernel("by_field", [&] {
    for_range(0, n(), [&](Expr i) {
      hits(i) += 1;
      atomic_add(total(), cast(i64, i));
    });
  });
  by_arg(-100, (1 << 20) - 100);
  n.write({}, 1 << 20);
  by_field();
  by_arg(5, 5);
  by_arg(7, -3);
  std::vector<int32_t> h = hits.to_vector<int32_t>();
  EXPECT_EQ(std::count(h.begin(), h.end(), 2), 1 << 20);
  EXPECT_EQ(total.read<int64_t>(), (int64_t{1} << 20) * ((1 << 20) - 1) / 2);
}

// On a GPU a for_range over a shape spreads over a 2-D or 3-D launch (grid
// loops: a point per invocation, found with no division); lavapipe itself
// takes pieces of rows, so the GPU's layout runs here through the test
// profile. C++ loops over the same shapes are the model: 2 and 3 axes with
// begins, 4 axes (the two leading ones one parallel loop), extents from
// arguments with a `continue`, updates at the point's own indices, and a
// grid of 300,000 x 2 points whose 75,000 groups along y are more than
// lavapipe launches at once (65,535): two dispatches, the second from its
// base.
TEST_F(VulkanBackend, ShapesSpreadOverAGridVisitEveryPointOnce) {
  const grove::testing::ScratchDir dir("grove_grid_vulkan_backend");
  setenv("GROVE_DUMP_DIR", dir.path().c_str(), 1);
  detail::VulkanTestProfile gpu;
  gpu.gpu_layout = true;
  detail::set_vulkan_test_profile(gpu);
  Program prog(config());
  Field a2 = prog.field(i32, "a2", {37, 45});
  Field a3 = prog.field(i32, "a3", {5, 6, 7});
  Field a4 = prog.field(i32, "a4", {3, 4, 5, 6});
  Field tall = prog.field(i32, "tall", {300000, 2});
  Field total = prog.field(i64, "total", {});
  Kernel k = prog.kernel("grid", {arg(i32, "lo"), arg(i32, "hi"), arg(i32, "rows"), arg(i32, "cols")}, [&](Args a) {
    for_range({{2, 37}, {a[0], a[1]}}, [&](Expr i, Expr j) {
      if_(j == 9, [&] { continue_(); });
      a2(i, j) += i * 100 + j;
    });
    for_range({{1, 5}, 6, {2, 7}}, [&](Expr i, Expr j, Expr l) { a3(i, j, l) += i * 100 + j * 10 + l; });
    for_range({3, 4, 5, 6}, [&](Indices I) { atomic_add(a4(I), ((I[0] * 10 + I[1]) * 10 + I[2]) * 10 + I[3]); });
    for_range({{0, a[2]}, {0, a[3]}}, [&](Expr i, Expr j) { tall(i, j) += i * 2 + j + 1; });
    for_range({{0, a[2]}, {0, a[3]}}, [&](Expr i, Expr j) { total() += cast(i64, i * 2 + j); });  // a sum
  });
  k(3, 44, 300000, 2);
  k(3, 44, 300000, 2);
  unsetenv("GROVE_DUMP_DIR");
  std::vector<int32_t> w2(37 * 45, 0), w3(5 * 6 * 7, 0), w4(3 * 4 * 5 * 6, 0), wt(300000 * 2, 0);
  for (int i = 2; i < 37; ++i)
    for (int j = 3; j < 44; ++j)
      if (j != 9) w2[static_cast<size_t>(i * 45 + j)] = 2 * (i * 100 + j);
  for (int i = 1; i < 5; ++i)
    for (int j = 0; j < 6; ++j)
      for (int l = 2; l < 7; ++l) w3[static_cast<size_t>((i * 6 + j) * 7 + l)] = 2 * (i * 100 + j * 10 + l);
  for (int e = 0; e < 3 * 4 * 5 * 6; ++e) {
    const int i = e / 120, j = e / 30 % 4, l = e / 6 % 5, m = e % 6;
    w4[static_cast<size_t>(e)] = 2 * (((i * 10 + j) * 10 + l) * 10 + m);
  }
  for (int e = 0; e < 300000 * 2; ++e) wt[static_cast<size_t>(e)] = 2 * (e + 1);
  EXPECT_EQ(a2.to_vector<int32_t>(), w2);
  EXPECT_EQ(a3.to_vector<int32_t>(), w3);
  EXPECT_EQ(a4.to_vector<int32_t>(), w4);
  EXPECT_EQ(tall.to_vector<int32_t>(), wt);
  EXPECT_EQ(total.read<int64_t>(), 2 * (int64_t{600000} * 599999 / 2));
  // Every shape's task spread over a grid.
  std::ifstream plan(dir / "grid.plan.json");
  std::stringstream text;
  text << plan.rdbuf();
  size_t grids = 0;
  for (size_t at = text.str().find("\"grid\": [{"); at != std::string::npos; at = text.str().find("\"grid\": [{", at + 1))
    ++grids;
  EXPECT_EQ(grids, 5u) << text.str();
}

// On a device that is a CPU a struct-for's iteration walks a run of cells,
// as long as the list leaves 2048 iterations (vulkan_backend.cpp): from one
// cell (few blocks) to 64 (many). However many blocks are active, every
// active cell is visited once: a C++ model of the same activations.
TEST_F(VulkanBackend, StructForRunsFollowTheListsLengthAndVisitEveryCellOnce) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& blocks_node = prog.root().pointer(axes({0}), {4096});
  blocks_node.dense(axes({0}), {64}).place({x});
  Field cells = prog.field(i32, "cells", {});
  Kernel activate = prog.kernel("activate", {arg(i32, "blocks"), arg(i32, "stride")}, [&](Args a) {
    for_range(0, a[0], [&](Expr b) { x(b * a[1] * 64 + 5) = 0; });
  });
  Kernel visit = prog.kernel("visit", [&] {
    for_each(x, [&](Expr i) {
      x(i) += i + 1;
      atomic_add(cells(), 1);
    });
  });
  // 1 and 40 blocks: runs of one cell; 100: of two; 2048: of 64.
  for (int blocks : {1, 40, 100, 2048}) {
    SCOPED_TRACE(blocks);
    const int stride = 4096 / blocks;
    blocks_node.deactivate_all();
    cells.write({}, 0);
    activate(blocks, stride);
    visit();
    visit();
    EXPECT_EQ(cells.read<int32_t>({}), 2 * blocks * 64);
    std::vector<int32_t> want(4096 * 64, 0);
    for (int b = 0; b < blocks; ++b)
      for (int c = 0; c < 64; ++c) {
        const int i = b * stride * 64 + c;
        want[static_cast<size_t>(i)] = 2 * (i + 1);
      }
    EXPECT_EQ(x.to_vector<int32_t>(), want);
  }
}

TEST_F(VulkanBackend, DeviceCountsPastTheLargestGridCoverEveryIteration) {
  Program prog(config());
  Field n = prog.field(i32, "n", {});
  Field marks = prog.field(i32, "marks", {5000});  // iterations divisible by 4096
  Field every = prog.field(i32, "every", {});       // iterations divisible by 4097
  Field last = prog.field(i32, "last", {});
  // One iteration per invocation (no sum kept in registers).
  Kernel flat = prog.kernel("flat", [&] {
    for_range(0, n(), [&](Expr i) {
      if_(i % 4096 == 0, [&] { marks(i / 4096) = 1; });
      atomic_max(last(), i);
    });
  });
  // A sum and a continue: the grid-stride loop.
  Kernel looped = prog.kernel("looped", [&] {
    for_range(0, n(), [&](Expr i) {
      if_(i % 4097 != 0, [&] { continue_(); });
      atomic_add(every(), 1);
    });
  });
  // 65535 groups of 256 invocations run 16776960 iterations.
  const int count = 17'000'000;
  n.write({}, count);
  flat();
  looped();
  std::vector<int32_t> m = marks.to_vector<int32_t>();
  const int want_marks = (count + 4095) / 4096;
  EXPECT_EQ(std::count(m.begin(), m.begin() + want_marks, 1), want_marks);
  EXPECT_EQ(std::count(m.begin() + want_marks, m.end(), 0), 5000 - want_marks);
  EXPECT_EQ(every.read<int32_t>(), (count + 4096) / 4097);
  EXPECT_EQ(last.read<int32_t>(), count - 1);
  n.write({}, 0);
  last.write({}, -1);
  flat();
  EXPECT_EQ(last.read<int32_t>(), -1);
}

// ---- print and assert --------------------------------------------------------------

TEST_F(VulkanBackend, PrintFromEveryInvocationArrivesOnce) {
  Program prog(config());
  std::string out;
  prog.set_print_sink([&](std::string_view s) { out += s; });
  Kernel k = prog.kernel("p", [&] { for_range(0, 1000, [&](Expr i) { print("i = ", i); }); });
  k();
  prog.sync();
  std::istringstream lines(out);
  std::set<std::string> seen;
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    seen.insert(line);
    ++count;
  }
  EXPECT_EQ(count, 1000);
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_TRUE(seen.count("i = 0") && seen.count("i = 999"));
}

TEST_F(VulkanBackend, PrintFormatsEveryTypeLikeTheInterpreter) {
  auto run = [](Arch arch) {
    Config c = config();
    c.arch = arch;
    Program prog(c);
    std::string out;
    prog.set_print_sink([&](std::string_view s) { out += s; });
    Kernel k = prog.kernel("types", {arg(i64, "big"), arg(f64, "d"), arg(u8, "small"), arg(i16, "neg")}, [&](Args a) {
      print("i64 ", a[0], " f64 ", a[1], " u8 ", a[2], " i16 ", a[3], " f32 ", Expr(0.1f), " u1 ", a[2] > 3,
            " {{braces}} ", cast(u32, a[3]), " ", -0.0f);
      print("second");
    });
    k(int64_t{-1} << 40, 1.0 / 3.0, uint8_t{250}, int16_t{-1234});
    prog.sync();
    return out;
  };
  std::string want = run(Arch::Interp);
  EXPECT_THAT(want, HasSubstr("i64 -1099511627776"));
  EXPECT_EQ(run(Arch::Vulkan), want);
}

TEST_F(VulkanBackend, AFullPrintBufferDropsRecordsSaysExactlyHowManyAndGrows) {
  Program prog(config());
  std::string out;
  prog.set_print_sink([&](std::string_view s) { out += s; });
  Kernel k = prog.kernel("flood", [&] { for_range(0, 100000, [&](Expr i) { print(i); }); });
  k();
  // The first ring holds 64 Ki words: 32768 records of 2 words (id, value).
  size_t lines = static_cast<size_t>(std::count(out.begin(), out.end(), '\n'));
  EXPECT_EQ(lines, 32768u + 1);  // and the warning
  EXPECT_THAT(out, HasSubstr("[grove] warning: kernel 'flood' printed 100000 lines in one launch and 67232 of "
                             "them were dropped: the print buffer held 256 KiB; it now holds 1024 KiB"));
  out.clear();
  k();  // the ring grew to what the first launch asked for
  EXPECT_EQ(static_cast<size_t>(std::count(out.begin(), out.end(), '\n')), 100000u);
  EXPECT_THAT(out, Not(HasSubstr("[grove]")));
  out.clear();
  k = prog.kernel("after", [&] { print("fine"); });
  k();
  EXPECT_EQ(out, "fine\n");  // the ring was emptied
}

TEST_F(VulkanBackend, AFailedDebugAssertNamesTheKernelAndTheProgramGoesOn) {
  Config c = config();
  c.debug = true;
  Program prog(c);
  Field x = prog.field(f32, "x", {16});
  Kernel k = prog.kernel("oob", {arg(i32, "n")}, [&](Args a) {
    for_range(0, a[0], [&](Expr i) { x(i) = cast(f32, i); });
  });
  k(16);
  std::string m = error_of([&] { k(20); });
  EXPECT_THAT(m, HasSubstr("kernel 'oob': field 'x' has shape (16); index (1"));
  EXPECT_THAT(m, HasSubstr(") is out of bounds on axis 0 (debug mode)"));
  k(16);  // the failure was cleared
  prog.sync();
  EXPECT_FLOAT_EQ(x.read<float>({15}), 15.0f);
}

// Host copies work on the tree buffer's own mapping where memory is unified
// (lavapipe) and through staging copies where it is not (a discrete GPU,
// here the profile's): the same values both ways, ordered with the
// launches around them, and what a launch before a copy printed is out when
// the copy returns.
TEST_F(VulkanBackend, HostCopiesAgreeInUnifiedMemoryAndThroughStaging) {
  for (const bool staged : {false, true}) {
    SCOPED_TRACE(staged ? "staged" : "unified");
    detail::VulkanTestProfile p;
    p.no_unified_memory = staged;
    detail::set_vulkan_test_profile(p);
    Program prog(config());
    std::string printed;
    prog.set_print_sink([&](std::string_view text) { printed += text; });
    constexpr int kN = 1000;
    Field v = prog.vector_field(3, f32, "v", {kN});
    Field s = prog.field(i32, "s");
    prog.root().pointer(i, 16).dense(i, 64).place(s);
    Kernel k = prog.kernel("k", {arg(i32, "n")}, [&](Args a) {
      for_range(0, a[0], [&](Expr n) {
        v(n) += Vec{1.0f, 2.0f, 3.0f};
        s(n) = s(n) * 2;
      });
    });
    std::vector<float> in(3 * kN);
    for (size_t e = 0; e < in.size(); ++e) in[e] = static_cast<float>(e) * 0.5f;
    std::vector<int32_t> sin(16 * 64);
    for (size_t e = 0; e < sin.size(); ++e) sin[e] = static_cast<int32_t>(e) - 7;
    for (int round = 0; round < 2; ++round) {
      v.from_vector(in);
      s.from_vector(sin);
      k(kN);
      k(kN);  // queued: the copies out wait for both
      const std::vector<float> out = v.to_vector<float>();
      for (size_t e = 0; e < in.size(); ++e) ASSERT_EQ(out[e], in[e] + 2.0f * static_cast<float>(1 + e % 3)) << e;
      const std::vector<int32_t> sout = s.to_vector<int32_t>();
      for (size_t e = 0; e < sin.size(); ++e) ASSERT_EQ(sout[e], e < kN ? sin[e] * 4 : sin[e]) << e;
    }
    v.fill(0.25f);
    v[1].write({5}, 9.0f);
    // A write to an active cell of the sparse field: a store on the
    // mapping, the writer kernel through staging.
    EXPECT_EQ(detail::field_in_host_memory(prog, s), !staged);
    s.write({3}, 42);
    k(kN);
    EXPECT_EQ(v[1].read<float>({5}), 11.0f);
    EXPECT_EQ(s.read<int32_t>({3}), 84);
    EXPECT_EQ(v.to_vector<float>()[3 * 7 + 2], 3.25f);
    Kernel say = prog.kernel("say", [&] { print("v0 = ", v(0)[0]); });
    say();
    EXPECT_EQ(v.to_vector<float>()[0], 1.25f);
    EXPECT_EQ(printed, "v0 = 1.25\n");
  }
}

// ---- a mobile-like device -------------------------------------------------------------

TEST_F(VulkanBackend, FloatAtomicsFallBackToCompareAndSwapExactly) {
  use_mobile_profile();
  Program prog(config());
  Field total = prog.field(f32, "total", {}), low = prog.field(f32, "low", {}), high = prog.field(f32, "high", {});
  Field down = prog.field(f32, "down", {});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 100000, [&](Expr i) {
      total() += 0.5f;
      down() -= 0.25f;
      atomic_min(low(), cast(f32, i) - 5000.0f);
      atomic_max(high(), cast(f32, i));
    });
  });
  k();
  EXPECT_EQ(total.read<float>(), 50000.0f);
  EXPECT_EQ(down.read<float>(), -25000.0f);
  EXPECT_EQ(low.read<float>(), -5000.0f);
  EXPECT_EQ(high.read<float>(), 99999.0f);
}

TEST_F(VulkanBackend, SixtyFourBitKernelsRaiseAClearErrorOnAMobileDevice) {
  use_mobile_profile();
  Program prog(config());
  Field big = prog.field(i64, "big", {4});
  Field d = prog.field(f64, "d", {4});
  Field ok = prog.field(i32, "ok", {4});
  Kernel k1 = prog.kernel("wide", [&] { for_range(0, 4, [&](Expr i) { big(i) = cast(i64, i); }); });
  EXPECT_EQ(error_of([&] { k1(); }),
            "kernel 'wide' uses i64 values, which this Vulkan device does not support (shaderInt64)");
  Kernel k2 = prog.kernel("precise", [&] { for_range(0, 4, [&](Expr i) { d(i) = cast(f64, i); }); });
  EXPECT_EQ(error_of([&] { k2(); }),
            "kernel 'precise' uses f64 values, which this Vulkan device does not support (shaderFloat64)");
  Kernel k3 = prog.kernel("narrow", [&] { for_range(0, 4, [&](Expr i) { ok(i) = i * 2; }); });
  k3();
  EXPECT_EQ(ok.read<int32_t>({3}), 6);
}

TEST_F(VulkanBackend, TreesFitTheDevicesLargestBuffer) {
  use_mobile_profile();  // 1 MiB buffers
  Program prog(config());  // device_memory stays 256 MiB
  Field x = prog.field(f32, "x");
  SNode& blocks = prog.root().pointer(i, 1 << 16);
  blocks.dense(i, 64).place(x);
  Kernel w = prog.kernel("w", [&] { for_range(0, 4096, [&](Expr n) { x(n * 7) = 1.0f; }); });
  w();
  Stats s = prog.stats();
  EXPECT_GT(s.find(blocks.name())->pool_capacity, 100);
  EXPECT_LE(s.tree_words * 4, (1 << 20) + kScratch);
  EXPECT_EQ(x.read<float>({7 * 4095}), 1.0f);
  // A dense field larger than a buffer is refused where it is declared.
  std::string m = error_of([&] { prog.field(f32, "huge", {512, 1024}); });  // 2 MiB of dense cells
  EXPECT_THAT(m, HasSubstr("'huge'"));
  EXPECT_THAT(m, HasSubstr("1048576 bytes"));
  EXPECT_THAT(m, HasSubstr("store it sparsely"));
  // Sparse trees too large for a buffer are refused at their layout.
  Field y = prog.field(f32, "y");
  prog.root().pointer(i, 1 << 16).capacity(1 << 16).dense(i, 64).place(y);
  m = error_of([&] { y.read<float>({0}); });
  EXPECT_THAT(m, HasSubstr("'y'"));
  EXPECT_THAT(m, HasSubstr("1048576 bytes"));
  EXPECT_THAT(m, HasSubstr("SNode::capacity"));
  // Fields declared after either go on working.
  Field after = prog.field(f32, "huge", {64});
  after.write({3}, 2.0f);
  EXPECT_EQ(after.read<float>({3}), 2.0f);
}

// ---- concurrency on sparse structures ----------------------------------------------------

// `tight`: pools hold the entries the data needs (4 * 98 chunks of 256
// elements, 64 cells), one subgroup of entries per device thread, and two
// more. A loser holds its candidate from its lost compare-and-swap until it
// leaves it in a spare slot, and a lavapipe thread runs one subgroup's lanes
// at a time, so a thread the OS preempts there holds back at most a
// subgroup's entries for as long as it sleeps (docs/memory.md, "Spares").
// Every other candidate lost in a race must be reused within the same
// kernel, and the ring of spare slots wraps (about 640 candidates on 410
// slots on two cores). With only two entries past the data, this failed
// about once in 60 runs under ctest -j2 (every append into a chunk the
// sleeping thread held back failed, and said so); without spare reuse it
// fails every run.
void append_and_count(const Config& config, bool tight = false) {
  Program prog(config);
  const int n = 100000;
  Field v = prog.field(i32, "v");
  SNode& lists = prog.root().dense(i, 4).dynamic(j, 32768, 256);
  lists.place(v);
  Field c = prog.field(i32, "c");
  SNode& cells = prog.root().pointer(i, 64);
  cells.place(c);
  if (tight) {
    std::uint32_t lanes = 1;
    for (const vk::DeviceInfo& d : vk::enumerate_devices()) lanes = std::max(lanes, d.subgroup_size);
    const int held = static_cast<int>(lanes * std::max(1u, std::thread::hardware_concurrency()));
    lists.capacity(4 * ((n / 4 + 255) / 256) + 2 + held);
    cells.capacity(64 + 2 + held);
  }
  Field lengths = prog.field(i32, "lengths", {4});
  Kernel fill = prog.kernel("fill", [&] {
    for_range(0, n, [&](Expr k) {
      append(lists, {k % 4}, k);
      c(k % 64) += 1;
    });
  });
  Kernel measure = prog.kernel("measure", [&] { for_range(0, 4, [&](Expr b) { lengths(b) = length(lists, {b}); }); });
  for (int round = 0; round < 3; ++round) {
    fill();
    measure();
    EXPECT_EQ(lengths.to_vector<int32_t>(), std::vector<int32_t>(4, n / 4)) << "round " << round;
    std::vector<int32_t> all = v.to_vector<int32_t>();  // (4, 32768), row-major
    for (int b = 0; b < 4; ++b) {
      std::vector<int32_t> got(all.begin() + b * 32768, all.begin() + b * 32768 + n / 4);
      std::sort(got.begin(), got.end());
      bool exact = true;
      for (int k = 0; k < n / 4; ++k) exact &= got[static_cast<size_t>(k)] == 4 * k + b;
      EXPECT_TRUE(exact) << "list " << b << " of round " << round << " does not hold each of its values once";
    }
    std::vector<int32_t> counts = c.to_vector<int32_t>();
    for (int k = 0; k < 64; ++k)
      EXPECT_EQ(counts[static_cast<size_t>(k)], n / 64 + (k < n % 64 ? 1 : 0)) << "cell " << k << ", round " << round;
    Stats s = prog.stats();
    EXPECT_EQ(s.find(cells.name())->active_cells, 64);
    // Candidates that lost a race wait in spare slots: not in use.
    EXPECT_EQ(s.find(cells.name())->pool_used, 64);
    EXPECT_EQ(s.find(lists.name())->pool_used, 4 * ((n / 4 + 255) / 256)) << "round " << round;
    EXPECT_EQ(s.allocation_failures, 0);
    lists.deactivate_all();
    cells.deactivate_all();
  }
  EXPECT_EQ(prog.stats().find(cells.name())->pool_used, 0);
}

TEST_F(VulkanBackend, ConcurrentAppendsAndActivationsAreExact) { append_and_count(config()); }

TEST_F(VulkanBackend, ConcurrentAppendsAndActivationsAreExactOnAMobileDevice) {
  use_mobile_profile();
  append_and_count(config());
}

TEST_F(VulkanBackend, ConcurrentAppendsAndActivationsFitTightlySizedPools) { append_and_count(config(), true); }

// ---- the rest ------------------------------------------------------------------------

// ---- kernel plans: tests/api/plan_test.cpp (every backend whose plans carry code) -----

TEST_F(VulkanBackend, DumpDirReceivesSpirvNextToTheIr) {
  const grove::testing::ScratchDir dir("grove_dump_vulkan_backend");
  setenv("GROVE_DUMP_DIR", dir.path().c_str(), 1);
  Program prog(config());
  Field x = prog.field(i32, "x", {4});
  Kernel k = prog.kernel("dumped", [&] { for_range(0, 4, [&](Expr n) { x(n) = n; }); });
  k();
  unsetenv("GROVE_DUMP_DIR");
  EXPECT_TRUE(std::filesystem::exists(dir / "dumped.00_frontend.ir"));
  std::ifstream plan(dir / "dumped.plan.json");
  std::stringstream plan_text;
  plan_text << plan.rdbuf();
  EXPECT_THAT(plan_text.str(), AllOf(HasSubstr("\"name\": \"dumped\""), HasSubstr("\"kind\": \"range_for\""),
                                     HasSubstr("\"static_iterations\": 4")));
  std::ifstream spv(dir / "dumped.t0_range_for.spv", std::ios::binary);
  ASSERT_TRUE(spv.good());
  uint32_t magic = 0;
  spv.read(reinterpret_cast<char*>(&magic), 4);
  EXPECT_EQ(magic, 0x07230203u);
  std::ifstream text(dir / "dumped.t0_range_for.spvasm");
  std::stringstream asm_text;
  asm_text << text.rdbuf();
  EXPECT_THAT(asm_text.str(), HasSubstr("OpEntryPoint GLCompute"));
  EXPECT_THAT(asm_text.str(), HasSubstr("\"dumped.t0.range_for\""));
  EXPECT_THAT(asm_text.str(), HasSubstr("LocalSize "));
}

// Eight writes of one statement group into a pointer's blocks (a cell's
// neighbours, each under its bounds check, as sparse_life counts them)
// carry one copy of the activation code in the SPIR-V, as many
// compare-and-swaps as one write carries, not eight times its own
// (ir::LowerAccessOptions::group_activations); the values are
// SparseMore's (tests/api/sparse_more_test.cpp).
TEST_F(VulkanBackend, AStatementGroupsWritesShareOneCopyOfTheActivationCode) {
  const grove::testing::ScratchDir dir("grove_group_vulkan_backend");
  setenv("GROVE_DUMP_DIR", dir.path().c_str(), 1);
  Program prog(config());
  Field n = prog.field(i32, "n");
  prog.root().pointer(ij, {8, 8}).dense(ij, {4, 4}).place(n);
  // Writes at the neighbours d of each point (i + j) % 5 == 0 of the grid.
  auto writes = [&](const std::vector<int>& ds) {
    for_range({32, 32}, [&](Expr i, Expr j) {
      for (const int d : ds) {
        Expr ni = i + (d / 3 - 1), nj = j + (d % 3 - 1);
        if_(ni >= 0 && ni < 32 && nj >= 0 && nj < 32 && (i + j) % 5 == 0, [&] { n(ni, nj) += 1; });
      }
    });
  };
  const std::vector<int> neighbours = {0, 1, 2, 3, 5, 6, 7, 8};
  prog.kernel("eight", [&] { writes(neighbours); })();
  prog.kernel("one", [&] { writes({1}); })();
  unsetenv("GROVE_DUMP_DIR");
  auto swaps = [&](const std::string& kernel) {
    std::ifstream spvasm(dir / (kernel + ".t0_range_for.spvasm"));
    std::stringstream text;
    text << spvasm.rdbuf();
    size_t count = 0;
    for (size_t at = text.str().find("OpAtomicCompareExchange"); at != std::string::npos;
         at = text.str().find("OpAtomicCompareExchange", at + 1))
      ++count;
    return count;
  };
  EXPECT_GT(swaps("one"), 0u);
  EXPECT_EQ(swaps("eight"), swaps("one"));
  int32_t total = 0;
  for (const int32_t v : n.to_vector<int32_t>()) total += v;
  int32_t want = 0;
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 32; ++j)
      for (const int d : neighbours) {
        const int ni = i + d / 3 - 1, nj = j + d % 3 - 1;
        if (ni >= 0 && ni < 32 && nj >= 0 && nj < 32 && (i + j) % 5 == 0) want += d == 1 ? 2 : 1;
      }
  EXPECT_EQ(total, want);
}

// Parallel tasks run groups of 256 invocations, or of the device's largest
// group when that is smaller (Vulkan's minimum, 128, on the mobile profile).
TEST_F(VulkanBackend, ParallelTasksUseTheLargestGroupUpTo256) {
  auto dumped_local_size = [](const std::string& kernel_name) {
    const grove::testing::ScratchDir dir("grove_local_size_test");
    setenv("GROVE_DUMP_DIR", dir.path().c_str(), 1);
    Program prog(config());
    const int n = 100000;
    Field x = prog.field(i32, "x", {n});
    Kernel k = prog.kernel(kernel_name, [&] { for_range(0, n, [&](Expr i) { x(i) = i * 3; }); });
    k();
    unsetenv("GROVE_DUMP_DIR");
    std::vector<int32_t> got = x.to_vector<int32_t>();
    for (int i = 0; i < n; i += 997) EXPECT_EQ(got[static_cast<size_t>(i)], i * 3) << i;
    EXPECT_EQ(got.back(), (n - 1) * 3);
    std::ifstream text(dir / (kernel_name + ".t0_range_for.spvasm"));
    std::stringstream asm_text;
    asm_text << text.rdbuf();
    const std::string s = asm_text.str();
    const size_t at = s.find("LocalSize ");
    return at == std::string::npos ? std::string("(none)") : s.substr(at, s.find('\n', at) - at);
  };
  // Every desktop driver and lavapipe take at least 256 invocations per group.
  EXPECT_EQ(dumped_local_size("wide_groups"), "LocalSize 256 1 1");
  use_mobile_profile();
  EXPECT_EQ(dumped_local_size("narrow_groups"), "LocalSize 128 1 1");
}

// Auto: a Vulkan GPU, then the CPU backend, then a CPU Vulkan driver
// (lavapipe here), and a device the user names before anything else.
TEST_F(VulkanBackend, AutoTakesAGpuThenTheCpuBackendThenLavapipe) {
  bool gpu = false;
  for (const vk::DeviceInfo& d : vk::enumerate_devices())
    gpu = gpu || (d.unsupported_reason.empty() && d.type != vk::DeviceType::cpu);
  const std::vector<Arch> built = compiled_backends();
  const bool cpu_built = std::find(built.begin(), built.end(), Arch::Cpu) != built.end();
  Config c;
  c.vulkan_validation = true;
  {
    Program prog(c);
    EXPECT_EQ(prog.arch(), gpu || !cpu_built ? Arch::Vulkan : Arch::Cpu) << prog.device_name();
  }
  c.vulkan_device = "0";
  Program named(c);
  EXPECT_EQ(named.arch(), Arch::Vulkan);
  EXPECT_NE(named.device_name().find(vk::enumerate_devices().front().name), std::string::npos)
      << named.device_name();
}

TEST_F(VulkanBackend, AMissingDeviceIsAClearError) {
  Config c = config();
  c.vulkan_device = "no such gpu";
  std::string m = error_of([&] { Program p(c); });
  EXPECT_THAT(m, HasSubstr("cannot start the Vulkan backend"));
  EXPECT_THAT(m, HasSubstr("no such gpu"));
}

}  // namespace
}  // namespace grove
