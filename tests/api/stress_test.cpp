// The sparse runtime under contention, on every backend that runs a
// parallel task's iterations at once: many invocations activating the same
// blocks, activating scattered cells, appending to the same lists, and
// deactivating blocks that a later task of the same kernel reads. Each
// result is exact and known here: increments, active cells, pool entries
// used, the values appended, sums. The CPU backend runs them on eight
// threads as well (more than this machine's cores, so threads are
// preempted mid-task), Vulkan and CUDA with the device's own parallelism.
// The interpreter runs one iteration at a time, so nothing races there: it
// runs one round, as a reference (and so that ctest's PTX of the suite,
// written while the suite runs on the interpreter, has these kernels).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend_fixture.h"

using namespace grove;

namespace {

class Stress : public grove::testing::BackendTest {
 protected:
  // Rounds of each test: races show in some rounds, not every one.
  int rounds() const { return GetParam() == Arch::Interp ? 1 : 40; }
  // The backend's own parallelism; on the CPU, eight threads.
  Config contended() const {
    Config c = config();
    if (GetParam() == Arch::Cpu) c.cpu_threads = 8;
    return c;
  }
  // The above, and on the CPU every core's thread count too.
  std::vector<Config> configs() const {
    std::vector<Config> out{contended()};
    if (GetParam() == Arch::Cpu) out.push_back(config());
    return out;
  }
};
GROVE_ALL_BACKENDS(Stress);

// Every thread activates the same 64 blocks of a pointer SNode at once: each
// block is allocated exactly once, and no increment is lost.
TEST_P(Stress, ManyThreadsActivateTheSameBlocks) {
  for (const Config& c : configs()) {
    for (int round = 0; round < rounds(); ++round) {
      Program prog(c);
      Field x = prog.field(i32, "x");
      SNode& blocks = prog.root().pointer(i, 64);
      blocks.dense(i, 16).place(x);
      const int n = 1 << 20;
      Kernel k = prog.kernel("hammer", [&] { for_range(0, n, [&](Expr m) { atomic_add(x(m % 1024), 1); }); });
      k();
      const std::vector<int> got = x.to_vector<int>();
      for (int c = 0; c < 1024; ++c) ASSERT_EQ(got[static_cast<size_t>(c)], n / 1024) << "cell " << c << ", round " << round;
      const Stats s = prog.stats();
      ASSERT_EQ(s.find(blocks.name())->active_cells, 64) << round;
      ASSERT_EQ(s.find(blocks.name())->pool_used, 64) << "a block was allocated twice, round " << round;
    }
  }
}

// The same, with a pool of the blocks written and no more than the headroom
// docs/memory.md asks for ("Spares": a subgroup of entries per device
// thread, which a preempted thread may hold back, and two more): every
// candidate a race's loser took must come back through the spares, or a
// block finds the pool dry. Several launches each activate a new group of
// blocks at once (lavapipe's lanes in lockstep race on every block, and the
// losers' candidates outnumber the headroom), and a kernel that frees them
// all lets the next round start again from a collected pool.
TEST_P(Stress, RacesLosersCandidatesComeBackToATightlySizedPool) {
  for (const Config& c : configs()) {
    Program prog(c);
    Field x = prog.field(i32, "x");
    const int held = 64 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) + 2;
    SNode& blocks = prog.root().pointer(i, 4096).capacity(256 + held);
    blocks.dense(i, 16).place(x);
    const int n = 1 << 18;
    Kernel k = prog.kernel("hammer", {arg(i32, "group")}, [&](Args a) {
      // 64 blocks of group g: blocks 64g .. 64g + 63, each cell 256 times.
      for_range(0, n, [&](Expr m) { atomic_add(x(a[0] * 1024 + m % 1024), 1); });
    });
    Kernel clear = prog.kernel("clear", [&] { for_range(0, 4096, [&](Expr b) { deactivate(blocks, {b}); }); });
    for (int round = 0; round < rounds(); ++round) {
      for (int g = 0; g < 4; ++g) k(round % 16 * 4 + g);  // 4 x 64 blocks: the whole pool
      const std::vector<int> got = x.to_vector<int>();
      const int first = round % 16 * 4 * 1024;
      for (int e = 0; e < 4096 * 16; ++e) {
        const int want = e >= first && e < first + 4 * 1024 ? n / 1024 : 0;
        ASSERT_EQ(got[static_cast<size_t>(e)], want) << "cell " << e << ", round " << round;
      }
      const Stats s = prog.stats();
      ASSERT_EQ(s.find(blocks.name())->active_cells, 256) << round;
      ASSERT_EQ(s.find(blocks.name())->pool_used, 256) << round;
      clear();
    }
  }
}

// Threads activate different cells, scattered over a pointer's 16384 blocks:
// exactly the blocks written become active, and a struct-for visits exactly
// their cells. The pool's entries fill more bit words than one thread
// lists alone (a listgen iteration takes 16 words, a chunk at least 8
// iterations), so listgen runs in parallel too.
TEST_P(Stress, ManyThreadsActivateDifferentCells) {
  const int cells = 16384 * 16, writes = 80000;
  std::vector<char> written(static_cast<size_t>(cells), 0);
  for (int m = 0; m < writes; ++m) written[static_cast<size_t>((static_cast<int64_t>(m) * 7919) % cells)] = 1;
  std::vector<char> block(16384, 0);
  for (int c = 0; c < cells; ++c) block[static_cast<size_t>(c / 16)] |= written[static_cast<size_t>(c)];
  const int64_t blocks_written = std::count(block.begin(), block.end(), 1);
  for (int round = 0; round < rounds(); ++round) {
    Program prog(contended());
    Field x = prog.field(i32, "x");
    SNode& blocks = prog.root().pointer(i, 16384);
    blocks.dense(i, 16).place(x);
    Field visited = prog.field(i32, "visited", {}), marked = prog.field(i32, "marked", {});
    Kernel w = prog.kernel("w", [&] { for_range(0, writes, [&](Expr m) { x((m * 7919) % cells) = 1; }); });
    Kernel r = prog.kernel("r", [&] {
      for_each(x, [&](Expr c) {
        atomic_add(visited(), 1);
        atomic_add(marked(), x(c));
      });
    });
    w();
    r();
    ASSERT_GT(blocks_written, 8 * 16 * 32);  // more than one listgen chunk's entries
    ASSERT_EQ(prog.stats().find(blocks.name())->active_cells, blocks_written) << round;
    ASSERT_EQ(prog.stats().find(blocks.name())->pool_used, blocks_written) << round;
    ASSERT_EQ(visited.read<int>(), blocks_written * 16) << round;
    ASSERT_EQ(marked.read<int>(), std::count(written.begin(), written.end(), 1)) << round;
  }
}

// Threads append to the same four dynamic lists: every value lands exactly
// once, each list's length is exact, and chunks are allocated as needed
// and no more.
TEST_P(Stress, ManyThreadsAppendToTheSameLists) {
  const int n = 200000, chunk = 256;
  for (int round = 0; round < rounds(); ++round) {
    Program prog(contended());
    Field v = prog.field(i32, "v");
    SNode& ptr = prog.root().pointer(i, 4);
    SNode& list = ptr.dynamic(j, 1 << 16, chunk);
    list.place(v);
    Field len = prog.field(i32, "len", {4});
    Kernel k = prog.kernel("k", [&] {
      for_range(0, n, [&](Expr m) { append(list, {m % 4}, m); });
      for_range(0, 4, [&](Expr b) { len(b) = length(list, {b}); });
    });
    k();
    ASSERT_EQ(len.to_vector<int32_t>(), (std::vector<int32_t>{n / 4, n / 4, n / 4, n / 4})) << round;
    const std::vector<int32_t> all = v.to_vector<int32_t>();  // shape {4, 1 << 16}, one copy to the host
    for (int b = 0; b < 4; ++b) {
      const auto first = all.begin() + static_cast<ptrdiff_t>(b) * (1 << 16);
      std::vector<int32_t> got(first, first + n / 4);
      std::sort(got.begin(), got.end());
      for (int e = 0; e < n / 4; ++e) ASSERT_EQ(got[static_cast<size_t>(e)], 4 * e + b) << "list " << b << ", round " << round;
    }
    ASSERT_EQ(prog.stats().find(list.name())->pool_used, 4 * ((n / 4 + chunk - 1) / chunk)) << round;
  }
}

// One task deactivates every other block while a later task of the same
// kernel sums what is left, round after round, with the blocks written
// again in between: the sums are exact and freed blocks are reused.
TEST_P(Stress, DeactivationWhileLaterTasksRead) {
  Program prog(contended());
  Field x = prog.field(i64, "x");
  SNode& blocks = prog.root().pointer(i, 512);
  blocks.dense(i, 32).place(x);
  Field sum = prog.field(i64, "sum", {});
  Kernel fill = prog.kernel("fill", [&] { for_range(0, 512 * 32, [&](Expr c) { x(c) = cast(i64, c); }); });
  Kernel thin = prog.kernel("thin", {arg(i32, "parity")}, [&](Args a) {
    for_range(0, 512, [&](Expr b) { if_(b % 2 == a[0], [&] { deactivate(blocks, {b}); }); });
    for_each(x, [&](Expr c) { atomic_add(sum(), x(c)); });
  });
  for (int round = 0; round < rounds(); ++round) {
    const int parity = round % 2;
    fill();
    sum.write<int64_t>({}, 0);
    thin(parity);
    int64_t want = 0;
    for (int b = 0; b < 512; ++b)
      if (b % 2 != parity)
        for (int c = b * 32; c < b * 32 + 32; ++c) want += c;
    ASSERT_EQ(sum.read<int64_t>(), want) << round;
    ASSERT_EQ(prog.stats().find(blocks.name())->active_cells, 256) << round;
    ASSERT_LE(prog.stats().find(blocks.name())->pool_high_water, 512) << "freed blocks were not reused, round " << round;
  }
}


// Threads sharing one Program take turns (README, "Threads"): four
// threads make the first launch of one kernel at once (it compiles once),
// launch it, define and launch kernels of their own, write and read
// fields, and sync. Every value is exact: no launch is lost or doubled.
TEST_P(Stress, ThreadsSharingAProgramTakeTurns) {
  Program prog(contended());
  Field total = prog.field(i64, "total", {});
  Field mine = prog.field(i32, "mine", {4});
  Field block = prog.field(i32, "block");
  prog.root().pointer(i, 16).dense(i, 8).place(block);
  Kernel add = prog.kernel("add", {arg(i64, "n")}, [&](Args a) {
    for_range(0, 8, [&](Expr k) {
      atomic_add(total(), a[0]);
      block(k * 16) = 1;
    });
  });
  constexpr int kThreads = 4, kLaunches = 25;
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        Kernel own = prog.kernel("own" + std::to_string(t), [&, t] { for_range(0, 1, [&](Expr) { mine(t) = mine(t) + 1; }); });
        for (int l = 0; l < kLaunches; ++l) {
          add(int64_t{t + 1});
          own();
          if (l % 5 == 0) (void)total.read<int64_t>();
        }
        prog.sync();
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(t)] = e.what();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[static_cast<size_t>(t)], "") << "thread " << t;
  EXPECT_EQ(add.compile_count(), 1);
  EXPECT_EQ(total.read<int64_t>(), int64_t{8} * kLaunches * (1 + 2 + 3 + 4));
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mine.read<int32_t>({t}), kLaunches) << "thread " << t;
  EXPECT_EQ(block.read<int32_t>({7 * 16}), 1);
}

// A thread destroys the Program's last handle while another launches its
// kernel in a loop: the launch under way finishes, later ones are errors
// naming the destroyed Program, and nothing crashes.
TEST_P(Stress, DestroyingAProgramWhileAnotherThreadLaunches) {
  for (int round = 0; round < std::min(rounds(), 10); ++round) {
    auto prog = std::make_unique<Program>(contended());
    Field x = prog->field(i32, "x", {64});
    Kernel k = prog->kernel("k", [&] { for_range(0, 64, [&](Expr n) { x(n) = x(n) + 1; }); });
    k();
    std::atomic<bool> started{false};
    std::string last_error;
    int launched = 0;
    std::thread launcher([&] {
      try {
        for (;; ++launched) {
          k();
          started = true;
        }
      } catch (const Error& e) {
        last_error = e.what();
      }
    });
    while (!started) std::this_thread::yield();
    prog.reset();
    launcher.join();
    EXPECT_GE(launched, 1);
    EXPECT_NE(last_error.find("Program that was destroyed"), std::string::npos) << last_error;
  }
}

// Two threads each record a kernel of their own Program that reads the
// other Program's field: both get the error, again and again. Each error
// used to read the other Program's field name under that Program's lock
// while holding its own, so the two threads could wait for each other for
// ever.
TEST_P(Stress, OppositeMistakesInTwoProgramsDoNotDeadlock) {
  Program a(config());
  Program b(config());
  Field xa = a.field(i32, "xa", {8});
  Field xb = b.field(i32, "xb", {8});
  std::atomic<int> refused{0};
  auto misuse = [&](Program& own, const Field& mine, const Field& theirs, const std::string& tag) {
    for (int n = 0; n < 200; ++n) {
      Kernel k = own.kernel(tag + std::to_string(n), [&] { mine(0) = theirs(1) + mine(1); });
      try {
        k();
      } catch (const Error& e) {
        if (std::string(e.what()).find("which belongs to") != std::string::npos) ++refused;
      }
    }
  };
  auto both = std::async(std::launch::async, [&] {
    std::thread ta([&] { misuse(a, xa, xb, "a"); });
    std::thread tb([&] { misuse(b, xb, xa, "b"); });
    ta.join();
    tb.join();
  });
  if (both.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
    std::fprintf(stderr, "OppositeMistakesInTwoProgramsDoNotDeadlock: the threads are still waiting after 120 s\n");
    std::_Exit(1);  // deadlocked threads cannot be joined
  }
  both.get();
  EXPECT_EQ(refused.load(), 400);
}

}  // namespace
