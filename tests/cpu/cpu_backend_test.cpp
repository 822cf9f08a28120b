// tests/cpu/cpu_backend_test.cpp — what is specific to the LLVM CPU backend
// (the shared behaviour runs on every backend in tests/api): its threads,
// its GROVE_DUMP_DIR output and the vector code in it, and the sparse
// runtime under real contention on every core, repeated to catch races.
// Expected values come from plain C++ in the test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <regex>
#include <csignal>
#include <cstdio>
#include <span>
#include <sys/resource.h>
#include <thread>
#include <set>
#include <sstream>
#include <vector>

#include "../api/backend_fixture.h"
#include "../support/scratch_dir.h"
#include "../support/sums_over_one_node.h"
#include "grove/grove.h"
#include "llvm_cpu/jit.h"
#include "program/test_hooks.h"
#include "runtime/core/plan.h"

using namespace grove;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Config cpu(int threads = 0) {
  Config c;
  c.arch = Arch::Cpu;
  c.cpu_threads = threads;
  return c;
}

// The sparse runtime's tasks are compiled once: a second kernel over the
// same pointer links the first one's objects for its list's clearing and
// generation and compiles only its own tasks; both visit the right cells.
TEST(CpuBackend, KernelsOverOneNodeCompileItsListTasksOnce) {
  grove::testing::SumsOverOneNode p(cpu());
  p.fill();
  p.sum();
  const int64_t after_sum = llvm_backend::Jit::shared_task_compilations();
  p.sum_twice();
  EXPECT_EQ(llvm_backend::Jit::shared_task_compilations(), after_sum);
  p.expect_sums();
  // Both plans name the same functions for those tasks.
  const rt::KernelPlan a = rt::deserialize_plan(detail::kernel_plan_bytes(p.prog, "sum"), "sum");
  const rt::KernelPlan b = rt::deserialize_plan(detail::kernel_plan_bytes(p.prog, "sum_twice"), "sum_twice");
  ASSERT_EQ(a.tasks.size(), b.tasks.size());
  int shared = 0;
  for (size_t t = 0; t < a.tasks.size(); ++t)
    if (a.tasks[t].kind == rt::TaskKind::listgen || a.tasks[t].kind == rt::TaskKind::clear_list) {
      EXPECT_EQ(a.tasks[t].entry_point, b.tasks[t].entry_point);
      ++shared;
    }
  EXPECT_GE(shared, 2);
}

// Config::cpu_threads: 0 is every core; a negative count is refused by
// name; one thread still runs parallel tasks (and their atomics) right.
TEST(CpuBackend, ThreadsComeFromTheConfig) {
  Config bad = cpu(-2);
  EXPECT_THAT(grove::testing::error_of([&] { Program p(bad); }), HasSubstr("Config::cpu_threads is -2"));
  for (int threads : {1, 3}) {
    Program prog(cpu(threads));
    EXPECT_EQ(prog.arch(), Arch::Cpu);
    EXPECT_THAT(prog.device_name(), HasSubstr(std::to_string(threads) + (threads == 1 ? " thread" : " threads")));
    Field hits = prog.field(i32, "hits", {});
    Field x = prog.field(i32, "x", {100000});
    Kernel k = prog.kernel("k", [&] {
      for_range(0, 100000, [&](Expr i) {
        x(i) = i * 3;
        atomic_add(hits(), 1);
      });
    });
    k();
    EXPECT_EQ(hits.read<int>(), 100000) << threads << " threads";
    std::vector<int> v = x.to_vector<int>();
    for (int i = 0; i < 100000; ++i) ASSERT_EQ(v[static_cast<size_t>(i)], i * 3) << i;
  }
}

// A Program of one thread runs each task on the launching thread and its
// operations take turns, so its code has no atomics: LLVM lowers them to
// plain loads and stores (a CAS loop per f32 add was most of a P2G), and
// its plans say so. Adds, a max and activations that many iterations aim
// at the same few cells give a plain model's values; the same kernel in a
// Program of two threads keeps its atomics. A one-thread plan loaded into
// the two-thread Program runs on the launching thread alone, with the same
// values.
TEST(CpuBackend, AProgramOfOneThreadCompilesItsAtomicsAsPlainStores) {
  auto run = [](int threads, const grove::testing::ScratchDir& dir, std::vector<uint8_t>* plan_out,
                const std::vector<uint8_t>* plan_in) {
    setenv("GROVE_DUMP_DIR", dir.path().c_str(), 1);
    Program prog(cpu(threads));
    Field sum = prog.field(f32, "sum", {8}), count = prog.field(i32, "count", {8}), most = prog.field(i32, "most", {});
    Field blocks = prog.field(i32, "blocks");
    prog.root().pointer(i, 64).dense(i, 16).place(blocks);
    Kernel k = prog.kernel("scatter", [&] {
      for_range(0, 200000, [&](Expr n) {
        sum(n % 8) += cast(f32, n % 5) * 0.5f;
        count(n % 8) += 1;
        atomic_max(most(), n * 7 % 1000003);
        blocks((n * 37) % 1024) += 1;
      });
    });
    if (plan_in != nullptr) detail::load_kernel_plan(prog, "scatter", *plan_in);
    k();
    unsetenv("GROVE_DUMP_DIR");
    if (plan_out != nullptr) *plan_out = detail::kernel_plan_bytes(prog, "scatter");
    std::vector<float> want_sum(8, 0.0f);
    std::vector<int> want_count(8, 0), want_blocks(1024, 0);
    int want_most = 0;
    for (int n = 0; n < 200000; ++n) {
      want_sum[static_cast<size_t>(n % 8)] += static_cast<float>(n % 5) * 0.5f;  // exact: multiples of 0.5 below 2^24
      ++want_count[static_cast<size_t>(n % 8)];
      want_most = std::max(want_most, n * 7 % 1000003);
      ++want_blocks[static_cast<size_t>((n * 37) % 1024)];
    }
    EXPECT_EQ(sum.to_vector<float>(), want_sum) << threads;
    EXPECT_EQ(count.to_vector<int>(), want_count) << threads;
    EXPECT_EQ(most.read<int>(), want_most) << threads;
    EXPECT_EQ(blocks.to_vector<int>(), want_blocks) << threads;
    return rt::deserialize_plan(detail::kernel_plan_bytes(prog, "scatter")).elf().one_thread;
  };
  const grove::testing::ScratchDir one_dir("grove_dump_cpu_one_thread"), two_dir("grove_dump_cpu_two_threads");
  std::vector<uint8_t> one_plan;
  EXPECT_TRUE(run(1, one_dir, &one_plan, nullptr));
  EXPECT_FALSE(run(2, two_dir, nullptr, nullptr));
  const std::regex atomic("atomicrmw|cmpxchg|load atomic|store atomic");
  EXPECT_FALSE(std::regex_search(read_file(one_dir / "scatter.cpu.opt.ll"), atomic));
  EXPECT_TRUE(std::regex_search(read_file(two_dir / "scatter.cpu.opt.ll"), atomic));
  const grove::testing::ScratchDir loaded_dir("grove_dump_cpu_one_thread_loaded");
  EXPECT_TRUE(run(2, loaded_dir, nullptr, &one_plan));
}

// GROVE_CPU_THREADS stands in for "every core" (cpu_threads 0) and leaves
// a count the program names alone; a value that is not a count is refused
// by name. (make tsan runs every CPU test with it set to 4.)
TEST(CpuBackend, ThreadsFromTheEnvironmentReplaceEveryCore) {
  const char* before = std::getenv("GROVE_CPU_THREADS");
  const std::string saved = before != nullptr ? before : "";
  setenv("GROVE_CPU_THREADS", "3", 1);
  EXPECT_THAT(Program(cpu()).device_name(), HasSubstr("3 threads"));
  EXPECT_THAT(Program(cpu(1)).device_name(), HasSubstr("1 thread"));
  for (const char* bad : {"0", "", "four", "2x", "-1"}) {
    setenv("GROVE_CPU_THREADS", bad, 1);
    EXPECT_THAT(grove::testing::error_of([&] { Program p(cpu()); }),
                HasSubstr(std::string("GROVE_CPU_THREADS is \"") + bad + "\"; give a number of threads"))
        << bad;
  }
  if (before != nullptr)
    setenv("GROVE_CPU_THREADS", saved.c_str(), 1);
  else
    unsetenv("GROVE_CPU_THREADS");
}

// Tiers of code (CpuBackend::compile_first). A kernel whose launch runs a
// bounded, small number of statements is compiled first at the quick tier
// and runs that code until its launches have run about as long as the full
// tier takes to compile; then it runs the full tier's code, with the same
// values (x[i] = launches * i, from plain C++). GROVE_CPU_TIERS=0 (the
// suite's api.cpu_full_tier run) makes everything at the full tier.
bool tiers_off() {
  const char* env = std::getenv("GROVE_CPU_TIERS");
  return env != nullptr && std::string(env) == "0";
}

// Launches kernel `name` by `launch` until its full tier's compile starts,
// in the background: the launch that starts it returns with the quick code
// still in place, not waiting for it. Then waits for that compile, whose
// code the kernel runs from then on. `launches`: those made before; returns
// them all.
int launch_until_full(Program& prog, const std::string& name, const std::function<void()>& launch, int launches) {
  // (A quick launch of these kernels takes microseconds and the full tier
  // milliseconds to compile: far fewer launches than the cap.)
  while (!detail::kernel_tiers_up(prog, name) && launches < 200000) {
    launch();
    ++launches;
  }
  EXPECT_TRUE(detail::kernel_tiers_up(prog, name));
  EXPECT_TRUE(detail::kernel_runs_quick_code(prog, name)) << "a launch waited for the full tier's compile";
  detail::wait_for_tier_ups(prog);
  EXPECT_FALSE(detail::kernel_tiers_up(prog, name));
  EXPECT_FALSE(detail::kernel_runs_quick_code(prog, name));
  return launches;
}

TEST(CpuBackend, ASmallKernelRunsQuickCodeUntilItsLaunchesPayForTheFullTier) {
  if (tiers_off()) GTEST_SKIP() << "GROVE_CPU_TIERS=0: every kernel is compiled at the full tier";
  Config c = cpu();
  c.cache_dir = "off";
  Program prog(c);
  constexpr int kN = 4096;
  Field x = prog.field(i32, "x", {kN});
  Kernel inc = prog.kernel("inc", [&] { for_range(0, kN, [&](Expr i) { x(i) = x(i) + i; }); });
  const int64_t quick_before = llvm_backend::Jit::quick_compilations(), before = llvm_backend::Jit::compilations();
  inc();
  EXPECT_EQ(llvm_backend::Jit::quick_compilations(), quick_before + 1);
  EXPECT_EQ(llvm_backend::Jit::compilations(), before + 1);
  EXPECT_TRUE(detail::kernel_runs_quick_code(prog, "inc"));
  EXPECT_EQ(prog.stats().kernels_on_quick_code, 1);
  int launches = launch_until_full(prog, "inc", [&] { inc(); }, 1);
  EXPECT_EQ(prog.stats().kernels_on_quick_code, 0);
  EXPECT_EQ(inc.compile_count(), 1);
  EXPECT_GT(launches, 1);
  EXPECT_EQ(llvm_backend::Jit::compilations(), before + 2);
  EXPECT_EQ(llvm_backend::Jit::quick_compilations(), quick_before + 1);
  inc();
  ++launches;
  const std::vector<int32_t> got = x.to_vector<int32_t>();
  for (int i = 0; i < kN; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], launches * i) << "x[" << i << "]";
  EXPECT_EQ(llvm_backend::Jit::compilations(), before + 2);
}

TEST(CpuBackend, AKernelOfUnknownOrMuchWorkIsCompiledAtTheFullTierAtOnce) {
  Config c = cpu();
  c.cache_dir = "off";
  Program prog(c);
  Field x = prog.field(i32, "x", {1 << 20});
  Kernel up_to = prog.kernel("up_to", {arg(i32, "n")}, [&](Args a) {
    for_range(0, a["n"], [&](Expr i) { x(i) = i; });
  });
  Kernel whole = prog.kernel("whole", [&] { for_range(0, 1 << 20, [&](Expr i) { x(i) = i * 2; }); });
  const int64_t quick_before = llvm_backend::Jit::quick_compilations();
  up_to(100);
  EXPECT_FALSE(detail::kernel_runs_quick_code(prog, "up_to"));
  EXPECT_EQ(x.read<int32_t>({99}), 99);
  whole();
  EXPECT_FALSE(detail::kernel_runs_quick_code(prog, "whole"));
  EXPECT_EQ(x.read<int32_t>({(1 << 20) - 1}), ((1 << 20) - 1) * 2);
  EXPECT_EQ(llvm_backend::Jit::quick_compilations(), quick_before);
  // And any kernel where Config::cpu_tiers is off.
  c.cpu_tiers = false;
  Program plain(c);
  Field y = plain.field(i32, "y", {16});
  Kernel small = plain.kernel("small", [&] { for_range(0, 16, [&](Expr i) { y(i) = i + 1; }); });
  small();
  EXPECT_FALSE(detail::kernel_runs_quick_code(plain, "small"));
  EXPECT_EQ(y.read<int32_t>({15}), 16);
  EXPECT_EQ(llvm_backend::Jit::quick_compilations(), quick_before);
}

// A Program that ends while a kernel's full tier compiles in the
// background waits for that compile (LLVM's work is not interrupted) and
// ends cleanly; so does a kernel whose compile has not started.
TEST(CpuBackend, AProgramEndsWhileItsFullTierCompiles) {
  if (tiers_off()) GTEST_SKIP() << "GROVE_CPU_TIERS=0: every kernel is compiled at the full tier";
  Config c = cpu();
  c.cache_dir = "off";
  for (int kernels : {1, 3}) {
    Program prog(c);
    Field x = prog.field(i32, "x", {1024});
    std::vector<Kernel> ks;
    for (int k = 0; k < kernels; ++k)
      ks.push_back(prog.kernel("add" + std::to_string(k),
                               [&, k] { for_range(0, 1024, [&](Expr i) { x(i) = x(i) + i * (k + 1); }); }));
    for (int k = 0; k < kernels; ++k) {
      for (int launches = 0; !detail::kernel_tiers_up(prog, "add" + std::to_string(k)) && launches < 200000; ++launches)
        ks[static_cast<size_t>(k)]();
      ASSERT_TRUE(detail::kernel_tiers_up(prog, "add" + std::to_string(k)));
      // The Program goes on meanwhile: a field of its own tree declared and
      // written (the compile reads a copy of the field table).
      Field more = prog.field(i32, "more" + std::to_string(k), {4});
      more.fill(k);
      EXPECT_EQ(more.read<int32_t>({3}), k);
    }
    EXPECT_EQ(prog.stats().kernels_on_quick_code, kernels);
  }
}

// A pool of 8 MiB is backed by transparent huge pages past its first 2 MiB
// where the kernel has them (rt::Device::advise_filled_in_order): the
// mapping of those entries carries MADV_HUGEPAGE's flag ("hg" in
// /proc/self/smaps), so that activating blocks there faults once per 2 MiB,
// not once per 4 KiB; the values written are read back.
TEST(CpuBackend, ABigPoolIsBackedByHugePages) {
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled"))
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  Program prog(cpu());
  Field x = prog.field(f32, "x");
  SNode& blocks = prog.root().pointer(ijk, {32, 32, 32});
  blocks.capacity(4096);  // blocks of 512 f32: 8 MiB of entries
  blocks.dense(ijk, 8).place(x);
  Kernel fill = prog.kernel("fill", [&] {
    for_range(0, 64, [&](Expr i) { x(i % 32 * 8, i / 32 * 8, 0) = cast(f32, i) + 0.5f; });
  });
  fill();
  for (int i = 0; i < 64; ++i) ASSERT_EQ(x.read<float>({i % 32 * 8, i / 32 * 8, 0}), static_cast<float>(i) + 0.5f);
  const std::span<const uint32_t> pool = detail::pool_words(prog, blocks);
  ASSERT_GE(pool.size_bytes(), size_t{8} << 20);
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  // (The first 2 MiB of a pool keep small pages: an instance using little
  // of a large pool costs no more than it uses.)
  const uintptr_t inside = (reinterpret_cast<uintptr_t>(pool.data()) + 2 * kHuge - 1) & ~(kHuge - 1);
  std::ifstream smaps("/proc/self/smaps");
  std::string line, flags;
  bool in = false, found = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {
      in = inside >= lo && inside < hi;
      continue;
    }
    if (in && line.rfind("VmFlags:", 0) == 0) {
      flags = line;
      found = true;
      break;
    }
  }
  ASSERT_TRUE(found) << "no mapping holds the pool's entries";
  EXPECT_NE((flags + " ").find(" hg "), std::string::npos) << flags;
}

// A Program that finds a kernel's full tier in the disk cache (another
// Program's, whose launches made it) runs that code from the first launch
// and compiles nothing.
TEST(CpuBackend, TheFullTierFoundOnDiskRunsFromTheFirstLaunch) {
  if (tiers_off()) GTEST_SKIP() << "GROVE_CPU_TIERS=0: every kernel is compiled at the full tier";
  const grove::testing::ScratchDir cache("grove_cpu_tiers_cache");
  Config c = cpu();
  c.cache_dir = cache.path().string();
  auto make = [&](Program& prog, Field& x) {
    return prog.kernel("fill", [&] { for_range(0, 256, [&](Expr i) { x(i) = i * 3; }); });
  };
  {
    Program prog(c);
    Field x = prog.field(i32, "x", {256});
    Kernel fill = make(prog, x);
    fill();
    EXPECT_TRUE(detail::kernel_runs_quick_code(prog, "fill"));
    launch_until_full(prog, "fill", [&] { fill(); }, 1);
  }
  const int64_t before = llvm_backend::Jit::compilations();
  Program prog(c);
  Field x = prog.field(i32, "x", {256});
  Kernel fill = make(prog, x);
  fill();
  EXPECT_FALSE(detail::kernel_runs_quick_code(prog, "fill"));
  EXPECT_EQ(llvm_backend::Jit::compilations(), before);
  EXPECT_EQ(x.read<int32_t>({255}), 255 * 3);
}

// The sparse runtime's list tasks have tiers too: a quick kernel's first
// compile makes them at the quick tier (a sparse kernel's first launch
// would otherwise wait for their full compile), its tier-up at the full
// one, and a later quick kernel over the same node takes the full ones as
// they are. Sums checked against a count made in the test.
TEST(CpuBackend, ListTasksAreMadeQuickUntilAKernelOverTheirNodeIsFull) {
  if (tiers_off()) GTEST_SKIP() << "GROVE_CPU_TIERS=0: every kernel is compiled at the full tier";
  Config c = cpu();
  c.cache_dir = "off";
  Program prog(c);
  Field x = prog.field(i32, "x"), total = prog.field(i32, "total");
  prog.root().pointer(i, 16).dense(i, 8).place(x);
  prog.root().place(total);
  // Blocks 0, 3 and 9 active (24 cells), x = n at n = 1, 26 and 77, 0 at
  // the others.
  for (int n : {1, 26, 77}) x.write({n}, n);
  const int expected = 1 + 26 + 77;
  Kernel sum = prog.kernel("sum", [&] { for_each(x, [&](Expr n) { total() += x(n); }); });
  const int64_t shared_before = llvm_backend::Jit::shared_task_compilations();
  total.write({}, 0);
  sum();
  ASSERT_TRUE(detail::kernel_runs_quick_code(prog, "sum"));
  const int64_t quick_shared = llvm_backend::Jit::shared_task_compilations() - shared_before;
  EXPECT_GT(quick_shared, 0);
  const int launches = launch_until_full(prog, "sum", [&] { sum(); }, 1);
  ASSERT_FALSE(detail::kernel_runs_quick_code(prog, "sum"));
  EXPECT_EQ(llvm_backend::Jit::shared_task_compilations() - shared_before, 2 * quick_shared);
  EXPECT_EQ(total.read<int32_t>({}), launches * expected);
  Kernel count = prog.kernel("count", [&] { for_each(x, [&](Expr) { total() += 1; }); });
  total.write({}, 0);
  count();
  EXPECT_TRUE(detail::kernel_runs_quick_code(prog, "count"));
  EXPECT_EQ(llvm_backend::Jit::shared_task_compilations() - shared_before, 2 * quick_shared);
  EXPECT_EQ(total.read<int32_t>({}), 24);
}

TEST(CpuBackend, ABadTierSettingIsRefusedByName) {
  const char* before = std::getenv("GROVE_CPU_TIERS");
  const std::string saved = before != nullptr ? before : "";
  setenv("GROVE_CPU_TIERS", "fast", 1);
  EXPECT_THAT(grove::testing::error_of([&] { Program p(cpu()); }),
              AllOf(HasSubstr("GROVE_CPU_TIERS is \"fast\""), HasSubstr("give 0")));
  if (before != nullptr)
    setenv("GROVE_CPU_TIERS", saved.c_str(), 1);
  else
    unsetenv("GROVE_CPU_TIERS");
}

// Config::cpu_target (and GROVE_CPU_TARGET) compile for a named CPU: a plan
// then records that CPU and its features, the device says so, and the code
// computes the same; an unknown name is refused by name.
TEST(CpuBackend, CodeCanTargetANamedCpu) {
#if defined(__x86_64__)
  Config c = cpu();
  c.cpu_target = "x86-64-v2";
  Program prog(c);
  EXPECT_THAT(prog.device_name(), HasSubstr("x86-64-v2, SSE2 128-bit vectors"));
  Field x = prog.field(f32, "x", {1000});
  Kernel k = prog.kernel("k", [&] { for_range(0, 1000, [&](Expr i) { x(i) = sqrt(cast(f32, i)) * 2.0f; }); });
  k();
  for (int i = 0; i < 1000; i += 37) EXPECT_EQ(x.read<float>({i}), std::sqrt(static_cast<float>(i)) * 2.0f);
  const rt::KernelPlan plan = rt::deserialize_plan(detail::kernel_plan_bytes(prog, "k"));
  EXPECT_THAT(plan.elf().target, HasSubstr(", x86-64-v2"));
  EXPECT_THAT(plan.elf().target_features, AllOf(HasSubstr("+sse4.2"), HasSubstr("-avx2")));
  setenv("GROVE_CPU_TARGET", "x86-64-v3", 1);
  EXPECT_THAT(Program(cpu()).device_name(), HasSubstr("x86-64-v3, AVX2 256-bit vectors"));
  unsetenv("GROVE_CPU_TARGET");
#endif
  Config bad = cpu();
  bad.cpu_target = "pentium-9000";
  EXPECT_THAT(grove::testing::error_of([&] { Program p(bad); }),
              AllOf(HasSubstr("Config::cpu_target"), HasSubstr("\"pentium-9000\""), HasSubstr("x86-64-v3")));
}

// GROVE_DUMP_DIR gets each kernel's LLVM IR before and after -O3 and its
// assembly; a saxpy's parallel loop over a contiguous axis is vector code
// in both (the host's widest float vectors: 4 lanes at least).
TEST(CpuBackend, DumpsLlvmIrAndAssemblyAndTheDenseLoopIsVectorCode) {
  const grove::testing::ScratchDir dir("grove_dump_cpu_backend");
  setenv("GROVE_DUMP_DIR", dir.path().c_str(), 1);
  Program prog(cpu());
  const int n = 1 << 16;
  Field x = prog.field(f32, "x", {n}), y = prog.field(f32, "y", {n});
  Kernel saxpy = prog.kernel("saxpy", {arg(f32, "a")}, [&](Args a) {
    for_range(0, n, [&](Expr i) { y(i) = a[0] * x(i) + y(i); });
  });
  std::vector<float> xs(n), ys(n);
  for (int i = 0; i < n; ++i) xs[static_cast<size_t>(i)] = static_cast<float>(i % 97), ys[static_cast<size_t>(i)] = 1.0f;
  x.from_vector(xs);
  y.from_vector(ys);
  saxpy(2.0f);
  unsetenv("GROVE_DUMP_DIR");
  const std::vector<float> got = y.to_vector<float>();
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], 2.0f * static_cast<float>(i % 97) + 1.0f) << i;
  const std::string before = read_file(dir / "saxpy.cpu.ll"), after = read_file(dir / "saxpy.cpu.opt.ll");
  const std::string assembly = read_file(dir / "saxpy.cpu.s");
  EXPECT_THAT(before, HasSubstr("define void @saxpy.t0.range_for("));
  EXPECT_FALSE(std::regex_search(before, std::regex("<[0-9]+ x float>")));
  std::smatch lanes;
  ASSERT_TRUE(std::regex_search(after, lanes, std::regex("<([0-9]+) x float>"))) << "no vector code after -O3";
  EXPECT_GE(std::stoi(lanes[1]), 4);
  EXPECT_THAT(assembly, HasSubstr("saxpy.t0.range_for"));
#if defined(__x86_64__)
  // Packed single-precision arithmetic on xmm/ymm/zmm registers.
  EXPECT_TRUE(std::regex_search(assembly, std::regex("v?(mul|add|fmadd[0-9]*)ps\\s[^\\n]*%[xyz]mm"))) << "no packed float math";
#elif defined(__aarch64__)
  EXPECT_TRUE(std::regex_search(assembly, std::regex("f(mul|add|mla)\\s+v[0-9]+\\.4s"))) << "no NEON float math";
#endif
}

// for_range over a 2-D shape whose rows are longer than a piece (4,096
// points) runs a piece of a row an iteration, its point found by dividing
// the iteration's number: LLVM is told a task's iterations are not
// negative, so the quotient and remainder are unsigned and the field
// indices made from them need no wrap (`and` with the row's size - 1 on
// every load of the vector loop, which cost a 2-D stencil 30%).
TEST(CpuBackend, PiecesOfRowsIndexTheirFieldsWithNoWrap) {
  const grove::testing::ScratchDir dir("grove_dump_cpu_pieces");
  setenv("GROVE_DUMP_DIR", dir.path().c_str(), 1);
  Program prog(cpu());
  const int rows = 16, cols = 8192;
  Field a = prog.field(f32, "a", {rows, cols}), b = prog.field(f32, "b", {rows, cols});
  Kernel step = prog.kernel("step", [&] {
    for_range({{1, rows - 1}, {1, cols - 1}}, [&](Expr i, Expr j) {
      b(i, j) = a(i - 1, j).load() + a(i + 1, j).load() + a(i, j - 1).load() + 2.0f * a(i, j + 1).load();
    });
  });
  std::vector<float> in(static_cast<size_t>(rows * cols));
  for (size_t k = 0; k < in.size(); ++k) in[k] = static_cast<float>((k * 7) % 13);
  a.from_vector(in);
  step();
  unsetenv("GROVE_DUMP_DIR");
  const std::vector<float> got = b.to_vector<float>();
  auto at = [&](int i, int j) { return in[static_cast<size_t>(i * cols + j)]; };
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const bool inside = i > 0 && i < rows - 1 && j > 0 && j < cols - 1;
      const float want = inside ? at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + 2.0f * at(i, j + 1) : 0.0f;
      ASSERT_EQ(got[static_cast<size_t>(i * cols + j)], want) << i << ", " << j;
    }
  const std::string after = read_file(dir / "step.cpu.opt.ll");
  EXPECT_THAT(after, HasSubstr("x float>"));
  EXPECT_FALSE(std::regex_search(after, std::regex("and i32 [^,\\n]+, 8191"))) << "a field index wraps";
}

#if defined(__x86_64__)
// A kernel argument read inside the loop must not size its lanes: its
// 64-bit slot is read once, in the entry block, so a saxpy's f32 loop at
// x86-64-v3 (AVX2: 256-bit registers) runs 8 lanes, not 4, and 4 at
// x86-64-v2 (SSE), not 2.
TEST(CpuBackend, KernelArgumentsDoNotNarrowTheVectorLoop) {
  for (const auto& [target, lanes] : {std::pair{"x86-64-v3", 8}, std::pair{"x86-64-v2", 4}}) {
    SCOPED_TRACE(target);
    const grove::testing::ScratchDir dir(std::string("grove_dump_cpu_lanes_") + target);
    setenv("GROVE_DUMP_DIR", dir.path().c_str(), 1);
    Config c = cpu();
    c.cpu_target = target;
    Program prog(c);
    const int n = 4096;
    Field x = prog.field(f32, "x", {n}), y = prog.field(f32, "y", {n});
    Kernel saxpy = prog.kernel("saxpy", {arg(f32, "a")}, [&](Args a) {
      for_range(0, n, [&](Expr i) { y(i) = a[0] * x(i) + y(i); });
    });
    x.fill(2.0f);
    y.fill(1.0f);
    saxpy(3.0f);
    unsetenv("GROVE_DUMP_DIR");
    EXPECT_EQ(y.read<float>({n - 1}), 7.0f);
    const std::string after = read_file(dir / "saxpy.cpu.opt.ll");
    EXPECT_THAT(after, HasSubstr("<" + std::to_string(lanes) + " x float>"));
    EXPECT_THAT(after, Not(HasSubstr("<" + std::to_string(lanes / 2) + " x float>")));
  }
}
#endif

// A loop that gathers from one field and writes another of the same tree
// (one buffer): each access names the field its word holds, LLVM is told
// the two never share a word, and the loop runs as vector code (with
// AVX2's gathers at x86-64-v3) instead of one element at a time, which it
// must when a store may change what a later iteration reads.
TEST(CpuBackend, AGatherIntoAnotherFieldOfTheTreeIsVectorised) {
  const grove::testing::ScratchDir dir("grove_dump_cpu_scopes");
  setenv("GROVE_DUMP_DIR", dir.path().c_str(), 1);
  Config c = cpu();
  c.cpu_target = "x86-64-v3";
  Program prog(c);
  const int n = 4096;
  Field x = prog.field(f32, "x", {n}), idx = prog.field(i32, "idx", {n}), y = prog.field(f32, "y", {n});
  Kernel gather = prog.kernel("gather", [&] { for_range(0, n, [&](Expr i) { y(i) = 2.0f * x(idx(i)); }); });
  std::vector<float> xv(n);
  std::vector<int32_t> iv(n);
  for (int i = 0; i < n; ++i) {
    xv[static_cast<size_t>(i)] = static_cast<float>(i) * 0.5f;
    iv[static_cast<size_t>(i)] = (i * 37 + 11) % n;
  }
  x.from_vector(xv);
  idx.from_vector(iv);
  gather();
  unsetenv("GROVE_DUMP_DIR");
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i) want[static_cast<size_t>(i)] = 2.0f * xv[static_cast<size_t>(iv[static_cast<size_t>(i)])];
  EXPECT_EQ(y.to_vector<float>(), want);
  const std::string before = read_file(dir / "gather.cpu.ll");
  EXPECT_THAT(before, HasSubstr("!alias.scope"));
  EXPECT_THAT(before, HasSubstr("!noalias"));
  EXPECT_THAT(read_file(dir / "gather.cpu.opt.ll"), HasSubstr("x float>"));
}

// The sparse runtime's allocation is an unlikely block (docs/ir.md),
// compiled once per pool as a function of its own that every activation
// calls: four writes into one pointer field's blocks (at indices computed
// from the loop's, as a stencil's neighbours are) make one such function,
// a write into another pointer's field a second (its pool's words
// differ). Values and active blocks are a plain model's.
TEST(CpuBackend, ActivationsShareOneOutOfLineAllocatorPerPool) {
  const grove::testing::ScratchDir dir("grove_dump_cpu_unlikely");
  setenv("GROVE_DUMP_DIR", dir.path().c_str(), 1);
  Program prog(cpu());
  Field x = prog.field(i32, "x"), y = prog.field(i32, "y");
  SNode& xb = prog.root().pointer(ij, {8, 4});  // 64 x 32 in blocks of 8 x 8
  xb.dense(ij, 8).place(x);
  SNode& yb = prog.root().pointer(i, 8);  // 64 in blocks of 8
  yb.dense(i, 8).place(y);
  auto columns = [](int i) { return std::array<int, 4>{i / 4, i / 4 + 9, 31 - i / 4, i / 2}; };
  Kernel write = prog.kernel("write", [&] {
    for_range(0, 64, [&](Expr i) {
      x(i, i / 4) += 1;
      x(i, i / 4 + 9) += 2;
      x(i, 31 - i / 4) += 3;
      x(i, i / 2) += 4;
      y(i) += i;
    });
  });
  write();
  write();
  unsetenv("GROVE_DUMP_DIR");
  std::vector<int> xm(64 * 32, 0);
  std::set<std::pair<int, int>> blocks;
  for (int i = 0; i < 64; ++i) {
    const std::array<int, 4> j = columns(i);
    for (int k = 0; k < 4; ++k) {
      xm[static_cast<size_t>(i * 32 + j[static_cast<size_t>(k)])] += 2 * (k + 1);
      blocks.insert({i / 8, j[static_cast<size_t>(k)] / 8});
    }
  }
  EXPECT_EQ(x.to_vector<int>(), xm);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(y.read<int>({i}), 2 * i);
  const auto stats = prog.stats();
  EXPECT_EQ(stats.at(xb.name()).active_cells, static_cast<int64_t>(blocks.size()));
  EXPECT_EQ(stats.at(yb.name()).active_cells, 8);
  const std::string ll = read_file(dir / "write.cpu.ll");
  const std::regex made("define internal [a-z0-9]+ @write\\.t[0-9]+\\.[a-z_]+\\.unlikely[0-9]+\\(");
  EXPECT_EQ(std::distance(std::sregex_iterator(ll.begin(), ll.end(), made), std::sregex_iterator()), 2) << ll;
  EXPECT_THAT(ll, HasSubstr("!prof"));  // the unlikely branches are weighted
}

// A struct-for over 8x8x8 blocks: an iteration reads its block's list entry
// once and walks the block's 512 cells in a loop of its own, which -O3
// turns into vector code that loads consecutive cells (one iteration per
// cell is vectorised too, but with a gather per field read); the sum it
// computes is the one worked out here.
TEST(CpuBackend, StructForWalksABlocksCellsInAVectorLoop) {
  const grove::testing::ScratchDir dir("grove_dump_cpu_struct_for");
  setenv("GROVE_DUMP_DIR", dir.path().c_str(), 1);
  Program prog(cpu());
  Field x = prog.field(i32, "x"), total = prog.field(i32, "total", {});
  prog.root().pointer(ijk, 16).dense(ijk, 8).place(x);
  Kernel fill = prog.kernel("fill", [&] {
    for_range(0, 3 * 512, [&](Expr n) {
      Expr blk = n / 512, c = n % 512;
      x(blk * 40 + c / 64, blk * 16 + c / 8 % 8, c % 8) = c + blk;
    });
  });
  Kernel sum = prog.kernel("sum", [&] { for_each(x, [&](Expr i, Expr j, Expr k) { total() += x(i, j, k); }); });
  fill();
  sum();
  unsetenv("GROVE_DUMP_DIR");
  int want = 0;
  for (int blk = 0; blk < 3; ++blk)
    for (int c = 0; c < 512; ++c) want += c + blk;
  EXPECT_EQ(total.read<int32_t>(), want);
  const std::string after = read_file(dir / "sum.cpu.opt.ll");
  // The struct_for task's function, found with plain searches (a regex over
  // the whole file recurses once per character in libstdc++).
  std::smatch header;
  ASSERT_TRUE(std::regex_search(after, header, std::regex("define [^\\n]*@sum\\.t[0-9]+\\.struct_for\\(")))
      << "no struct_for task in sum.cpu.opt.ll";
  const size_t begin = static_cast<size_t>(header.position(0)), end = after.find("\n}\n", begin);
  ASSERT_NE(end, std::string::npos);
  const std::string body = after.substr(begin, end - begin);
  // Contiguous vector loads of the block's cells; no gathers (what one
  // parallel iteration per cell, each with its own list entry, becomes).
  std::smatch lanes;
  ASSERT_TRUE(std::regex_search(body, lanes, std::regex("load <([0-9]+) x i32>, ptr")))
      << "the cell loop has no contiguous vector loads";
  EXPECT_GE(std::stoi(lanes[1]), 4);
  EXPECT_THAT(body, ::testing::Not(HasSubstr("masked.gather")));
}

// A CPU plan carries its kernel's code as a shared object, and the machine
// it was compiled for: a plan for another architecture, one whose code
// needs an instruction-set extension this CPU lacks, and one whose shared
// object is damaged are refused by name, and the kernel keeps its code.
TEST(CpuBackend, PlansForAnotherMachineOrWithDamagedCodeAreRefused) {
  Program prog(cpu());
  Field x = prog.field(i32, "x", {8});
  Kernel k = prog.kernel("k", [&] { for_range(0, 8, [&](Expr n) { x(n) = n * 2; }); });
  const rt::KernelPlan plan = rt::deserialize_plan(detail::kernel_plan_bytes(prog, "k"));
  EXPECT_EQ(plan.backend(), "cpu");
  ASSERT_GE(plan.elf().object.size(), 4u);
  EXPECT_EQ(std::string(plan.elf().object.begin(), plan.elf().object.begin() + 4), "\x7f" "ELF");
  EXPECT_THAT(plan.elf().target_features, HasSubstr("+"));
  auto refusal = [&](rt::KernelPlan p) {
    return grove::testing::error_of([&] { detail::load_kernel_plan(prog, "k", rt::serialize(p)); });
  };
  rt::KernelPlan other_arch = plan;
  other_arch.elf().target = "riscv32-unknown-linux-gnu generic-rv32";
  EXPECT_THAT(refusal(other_arch), AllOf(HasSubstr("kernel 'k' was compiled for riscv32"), HasSubstr("compile the kernel again")));
  rt::KernelPlan damaged = plan;
  std::fill(damaged.elf().object.begin() + 64, damaged.elf().object.end(), uint8_t{0xcc});
  EXPECT_THAT(refusal(damaged), AllOf(HasSubstr("kernel 'k'"), HasSubstr("does not load")));
  rt::KernelPlan no_entry = plan;
  no_entry.tasks[0].entry_point = "nowhere";
  EXPECT_THAT(refusal(no_entry), AllOf(HasSubstr("kernel 'k'"), HasSubstr("no entry point 'nowhere'")));
  rt::KernelPlan uncounted = plan;  // a loop only its code could count, without the code
  ASSERT_TRUE(uncounted.tasks[0].parallel);
  uncounted.tasks[0].static_iterations = -1;
  uncounted.tasks[0].end = {};
  EXPECT_THAT(refusal(uncounted), AllOf(HasSubstr("kernel 'k'"), HasSubstr("neither a count function nor a count known")));
#if defined(__x86_64__)
  // An extension this CPU lacks, if there is one the check knows.
  std::string lacking;
  if (!__builtin_cpu_supports("xop")) lacking = "xop";
  else if (!__builtin_cpu_supports("fma4")) lacking = "fma4";
  else if (!__builtin_cpu_supports("avx512bf16")) lacking = "avx512bf16";
  if (!lacking.empty()) {
    rt::KernelPlan needs = plan;
    needs.elf().target_features += ",+" + lacking;
    EXPECT_THAT(refusal(needs), AllOf(HasSubstr("compiled for a CPU with " + lacking), HasSubstr("this CPU lacks")));
  }
#endif
  k();  // the kernel was left as it was
  EXPECT_EQ(x.read<int>({7}), 14);
  // The plan as it was loads and runs.
  detail::load_kernel_plan(prog, "k", rt::serialize(plan));
  x.write({7}, 0);
  k();
  EXPECT_EQ(x.read<int>({7}), 14);
}

// A parallel loop whose bounds are constants or arguments is counted on the
// host from the plan; only one whose count is read from memory (a
// struct-for's list) gets a count function. Each runs the iterations a
// plain loop does, and a count past what the code's 32-bit offsets reach is
// an error, not a wrapped count.
TEST(CpuBackend, LoopsTheHostCanCountHaveNoCountFunction) {
  Program prog(cpu());
  Field x = prog.field(i32, "x", {64});
  Field y = prog.field(i32, "y");
  prog.root().pointer(i, 8).dense(i, 8).place(y);
  Kernel fixed = prog.kernel("fixed", [&] { for_range(3, 40, [&](Expr n) { x(n) = n * 2; }); });
  Kernel from_args = prog.kernel("from_args", {arg(i32, "lo"), arg(i32, "hi")}, [&](Args a) {
    for_range(a[0] + 1, a[1], [&](Expr n) { x(n) += 1000; });
  });
  Kernel listed = prog.kernel("listed", [&] { for_each(y, [&](Expr n) { y(n) = n + 1; }); });
  Kernel huge = prog.kernel("huge", {arg(i32, "lo"), arg(i32, "hi")}, [&](Args a) {
    for_range(a[0], a[1], [&](Expr n) { x(n % 64) = 1; });
  });
  fixed();
  from_args(9, 20);
  y.write({17}, 5);
  y.write({50}, 5);
  listed();
  std::vector<int> want(64, 0);
  for (int n = 3; n < 40; ++n) want[n] = n * 2;
  for (int n = 10; n < 20; ++n) want[n] += 1000;
  EXPECT_EQ(x.to_vector<int>(), want);
  for (int n = 0; n < 64; ++n) EXPECT_EQ(y.read<int>({n}), (n / 8 == 2 || n / 8 == 6) ? n + 1 : 0) << n;
  for (const char* name : {"fixed", "from_args"})
    for (const rt::TaskPlan& t : rt::deserialize_plan(detail::kernel_plan_bytes(prog, name)).tasks)
      EXPECT_EQ(t.count_entry_point, "") << name << ": " << t.label;
  bool struct_for_counted_by_code = false;
  for (const rt::TaskPlan& t : rt::deserialize_plan(detail::kernel_plan_bytes(prog, "listed")).tasks)
    if (t.kind == rt::TaskKind::struct_for) struct_for_counted_by_code = !t.count_entry_point.empty();
  EXPECT_TRUE(struct_for_counted_by_code);
  const std::string too_long = grove::testing::error_of([&] { huge(-2000000000, 2000000000); });
  EXPECT_THAT(too_long, AllOf(HasSubstr("kernel 'huge'"), HasSubstr("4000000000 iterations"), HasSubstr("split the loop")));
  huge(0, 5);  // the program goes on
  EXPECT_EQ(x.read<int>({4}), 1);
}

// Each kernel's code is a shared object, and no file descriptor stays open
// for it once loaded: with the descriptor limit lowered to a few above what
// the process has open, a Program still compiles and runs 150 kernels, and
// each one's code is its own (the loader does not mistake one for another).
// Compiling a kernel links it with lld, which makes LLVM register its
// signal handlers and give the thread it runs on an alternate signal stack
// of LLVM's own (malloc'd, replacing a smaller one). That happens on
// Grove's linker thread: an application thread that launches the first
// kernel keeps the signal stack it had (AddressSanitizer, which unmaps a
// thread's signal stack when the thread ends, aborted on LLVM's).
TEST(CpuBackend, CompilingLeavesTheApplicationThreadsSignalStackAlone) {
  stack_t before{}, after{};
  std::string failure;
  int got = -1;
  std::thread app([&] {
    sigaltstack(nullptr, &before);
    try {
      Config config = cpu(1);
      config.cache_dir = "off";  // compiled and linked here, whatever ran before
      Program prog(config);
      Field x = prog.field(i32, "x", {4});
      Kernel k = prog.kernel("k", [&] { for_range(0, 4, [&](Expr n) { x(n) = n * 5; }); });
      k();
      got = x.read<int>({3});
    } catch (const std::exception& e) {
      failure = e.what();
    }
    sigaltstack(nullptr, &after);
  });
  app.join();
  ASSERT_EQ(failure, "");
  EXPECT_EQ(got, 15);
  EXPECT_EQ(after.ss_sp, before.ss_sp);
  EXPECT_EQ(after.ss_size, before.ss_size);
  EXPECT_EQ(after.ss_flags, before.ss_flags);
}

TEST(CpuBackend, KernelCountIsNotBoundedByTheDescriptorLimit) {
  size_t open_now = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++open_now;
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = std::min<rlim_t>(saved.rlim_cur, open_now + 24);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::string failure;
  std::vector<int> got;
  try {
    Config config = cpu(2);
    config.cache_dir = "off";
    Program prog(config);
    Field x = prog.field(i32, "x", {4});
    std::vector<Kernel> kernels;
    for (int k = 0; k < 150; ++k) {
      kernels.push_back(prog.kernel("k" + std::to_string(k), [&, k] { for_range(0, 4, [&](Expr n) { x(n) = n + k; }); }));
      kernels.back()();
      got.push_back(x.read<int>({3}));
    }
    kernels[17]();  // an early kernel still runs its own code
    got.push_back(x.read<int>({3}));
  } catch (const std::exception& e) {
    failure = e.what();
  }
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_EQ(failure, "");
  ASSERT_EQ(got.size(), 151u);
  for (int k = 0; k < 150; ++k) EXPECT_EQ(got[k], 3 + k) << "kernel " << k;
  EXPECT_EQ(got[150], 3 + 17);
}

}  // namespace
