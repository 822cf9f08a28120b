// The profiler (Config::profile) on every backend: which tasks ran how
// often (known from the kernels and the list scheduler's rule), times that
// are device times of the work (positive, ordered, within the host's wall
// time, growing with the work), the table, and the switches.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend_fixture.h"

using namespace grove;
using ::testing::HasSubstr;

namespace {

class Profiler : public grove::testing::BackendTest {
 protected:
  Config profiled() const {
    Config c = config();
    c.profile = true;
    return c;
  }
};
GROVE_ALL_BACKENDS(Profiler);

std::vector<TaskProfile> of_kernel(const std::vector<TaskProfile>& all, const std::string& kernel) {
  std::vector<TaskProfile> out;
  for (const TaskProfile& t : all)
    if (t.kernel == kernel) out.push_back(t);
  return out;
}

void expect_consistent(const TaskProfile& t) {
  EXPECT_GT(t.count, 0) << t.kernel << " task " << t.task;
  EXPECT_GE(t.min, 0.0) << t.kernel << " task " << t.task;
  EXPECT_LE(t.min, t.mean()) << t.kernel << " task " << t.task;
  EXPECT_LE(t.mean(), t.max * (1 + 1e-12)) << t.kernel << " task " << t.task;
  EXPECT_NEAR(t.total, t.mean() * static_cast<double>(t.count), 1e-12 + 1e-9 * t.total);
}

TEST_P(Profiler, CountsEveryLaunchOfEveryTaskWithinTheHostsWallTime) {
  Program prog(profiled());
  constexpr int kN = 1 << 14;
  Field x = prog.field(f32, "x", {kN});
  Field total = prog.field(f32, "total", {});
  Kernel fill = prog.kernel("fill", {arg(f32, "a")}, [&](Args a) {
    for_range(0, kN, [&](Expr n) { x(n) = a[0]; });
  });
  // Two tasks: a serial clear, then a parallel sum.
  Kernel sum = prog.kernel("sum", [&] {
    total() = 0.0f;
    for_range(0, kN, [&](Expr n) { total() += x(n); });
  });
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < 5; ++r) fill(0.5f);
  for (int r = 0; r < 3; ++r) sum();
  prog.sync();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(total.read<float>(), 0.5f * kN);  // exact: sums of halves up to 2^13

  const std::vector<TaskProfile> all = prog.profile();
  const std::vector<TaskProfile> f = of_kernel(all, "fill"), s = of_kernel(all, "sum");
  ASSERT_EQ(f.size(), 1u);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(f[0].count, 5);
  EXPECT_EQ(s[0].count, 3);
  EXPECT_EQ(s[1].count, 3);
  EXPECT_EQ(s[0].task, 0);
  EXPECT_EQ(s[1].task, 1);
  double device = 0;
  for (const TaskProfile& t : all) {
    expect_consistent(t);
    EXPECT_FALSE(t.label.empty());
    device += t.total;
  }
  // The device did the work inside the host's interval.
  EXPECT_GT(device, 0.0);
  EXPECT_LE(device, wall);
}

TEST_P(Profiler, AListGenerationIsCountedOnlyWhenTheSchedulerRunsIt) {
  Program prog(profiled());
  Field x = prog.field(i32, "x");
  SNode& blocks = prog.root().pointer(i, 16);
  blocks.dense(i, 8).place(x);
  Field visited = prog.field(i32, "visited", {});
  Kernel seed = prog.kernel("seed", [&] { for_range(0, 5, [&](Expr n) { x(n * 20) = n; }); });
  Kernel visit = prog.kernel("visit", [&] { for_each(x, [&](Expr) { atomic_add(visited(), 1); }); });
  seed();
  for (int r = 0; r < 4; ++r) visit();  // nothing changes the tree: the list is made once
  EXPECT_EQ(visited.read<int32_t>(), 4 * 5 * 8);

  const std::vector<TaskProfile> v = of_kernel(prog.profile(), "visit");
  int64_t listgens = 0, loops = 0;
  for (const TaskProfile& t : v) {
    expect_consistent(t);
    if (t.label.find("listgen") != std::string::npos) listgens += t.count;
    if (t.label.find("struct_for") != std::string::npos) loops += t.count;
  }
  EXPECT_EQ(loops, 4) << prog.profile_report();
  // One generation per list level below the root, all in the first launch.
  EXPECT_GE(listgens, 1) << prog.profile_report();
  EXPECT_LE(listgens, 2) << prog.profile_report();
}

TEST_P(Profiler, MoreWorkTakesLonger) {
  Program prog(profiled());
  const int heavy_n = GetParam() == Arch::Interp ? 1 << 16 : 1 << 22;
  Field x = prog.field(f32, "x", {heavy_n});
  auto kernel = [&](const char* name, int n) {
    return prog.kernel(name, [&, n] {
      for_range(0, n, [&](Expr k) {
        Var v = cast(f32, k);
        for (int r = 0; r < 4; ++r) v = sin(v) * 0.5f + v;
        x(k) = v;
      });
    });
  };
  Kernel light = kernel("light", 16), heavy = kernel("heavy", heavy_n);
  for (int r = 0; r < 3; ++r) {
    light();
    heavy();
  }
  const std::vector<TaskProfile> all = prog.profile();
  const std::vector<TaskProfile> l = of_kernel(all, "light"), h = of_kernel(all, "heavy");
  ASSERT_EQ(l.size(), 1u);
  ASSERT_EQ(h.size(), 1u);
  // 4096 times the work (65,536 on the interpreter): the least time of
  // three is well apart from the other's.
  EXPECT_GT(h[0].min, l[0].min) << prog.profile_report();
}

TEST_P(Profiler, TheReportIsATableAndClearingStartsAfresh) {
  Program prog(profiled());
  Field x = prog.field(i32, "x", {64});
  Kernel k = prog.kernel("count_up", [&] { for_range(0, 64, [&](Expr n) { x(n) += 1; }); });
  k();
  k();
  const std::string report = prog.profile_report();
  EXPECT_THAT(report, HasSubstr("Grove profile"));
  EXPECT_THAT(report, HasSubstr(prog.device_name()));
  EXPECT_THAT(report, HasSubstr("count_up"));
  EXPECT_THAT(report, HasSubstr("count"));
  EXPECT_THAT(report, HasSubstr("all kernels"));
  prog.clear_profile();
  EXPECT_TRUE(prog.profile().empty());
  k();
  const std::vector<TaskProfile> again = of_kernel(prog.profile(), "count_up");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].count, 1);
  EXPECT_EQ(x.read<int32_t>({5}), 3);
}

TEST_P(Profiler, AnUnreportedTallyIsPrintedWhenTheProgramGoes) {
  ::testing::internal::CaptureStdout();
  {
    Program prog(profiled());
    Field x = prog.field(i32, "x", {8});
    Kernel k = prog.kernel("printed_at_exit", [&] { for_range(0, 8, [&](Expr n) { x(n) = n; }); });
    k();
  }
  EXPECT_THAT(::testing::internal::GetCapturedStdout(), HasSubstr("printed_at_exit"));

  // Once reported, the Program goes quietly.
  ::testing::internal::CaptureStdout();
  {
    Program prog(profiled());
    Field x = prog.field(i32, "x", {8});
    Kernel k = prog.kernel("reported", [&] { for_range(0, 8, [&](Expr n) { x(n) = n; }); });
    k();
    prog.profile();
  }
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
}

TEST_P(Profiler, IsOffUnlessAskedForAndTheEnvironmentTurnsItOn) {
  {
    Program prog(config());
    Field x = prog.field(i32, "x", {8});
    Kernel k = prog.kernel("k", [&] { for_range(0, 8, [&](Expr n) { x(n) = n; }); });
    k();
    EXPECT_FALSE(prog.config().profile);
    EXPECT_THAT(grove::testing::error_of([&] { prog.profile(); }), HasSubstr("Config::profile"));
  }
  setenv("GROVE_PROFILE", "1", 1);
  Program prog(config());
  unsetenv("GROVE_PROFILE");
  EXPECT_TRUE(prog.config().profile);
  Field x = prog.field(i32, "x", {8});
  Kernel k = prog.kernel("k", [&] { for_range(0, 8, [&](Expr n) { x(n) = n; }); });
  k();
  EXPECT_EQ(of_kernel(prog.profile(), "k").size(), 1u);
}

}  // namespace
