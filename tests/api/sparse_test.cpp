// Sparse SNodes: pointer, bitmasked and dynamic under every parent kind,
// activation on write, reads that never activate, struct-fors over active
// cells only, deactivation and reuse.
#include <algorithm>
#include <array>
#include <numeric>
#include <set>
#include <span>
#include <tuple>

#include "backend_fixture.h"

using namespace grove;
using ::testing::HasSubstr;

namespace {

class Sparse : public grove::testing::BackendTest {};
GROVE_ALL_BACKENDS(Sparse);

// Counts the cells a struct-for over `f` visits, and sums i*1000+j (or i).
struct Visit {
  int32_t count;
  int64_t sum;
};

Visit visit_1d(Program& prog, Field f, const char* name) {
  Field count = prog.field(i32, std::string(name) + "_count", {});
  Field sum = prog.field(i64, std::string(name) + "_sum", {});
  Kernel k = prog.kernel(std::string(name) + "_visit", [&] {
    for_each(f, [&](Expr i) {
      atomic_add(count(), 1);
      atomic_add(sum(), cast(i64, i));
    });
  });
  k();
  return {count.read<int32_t>(), sum.read<int64_t>()};
}

TEST_P(Sparse, SeedPointerExampleActivatesOnWrite) {
  // The seed's tree: root.pointer(i, 4) with two dense children.
  Program prog(config());
  Field x = prog.field(i32, "x"), y = prog.field(i32, "y"), z = prog.field(i32, "z");
  SNode& S1 = prog.root().pointer(i, 4);
  S1.dense(i, 2).place(x, y);
  S1.dense(i, 2).place(z);
  Kernel k = prog.kernel("k", [&] {
    x(3) = 30;
    z(6) = 60;
  });
  k();
  EXPECT_EQ(x.read<int32_t>({3}), 30);
  EXPECT_EQ(y.read<int32_t>({3}), 0);
  EXPECT_EQ(z.read<int32_t>({6}), 60);
  EXPECT_EQ(x.read<int32_t>({0}), 0);
  Stats s = prog.stats();
  EXPECT_EQ(s.find(S1.name())->active_cells, 2);  // cells 1 (x[3]) and 3 (z[6])
  EXPECT_EQ(s.find(S1.name())->pool_used, 2);
}

TEST_P(Sparse, ReadingAnInactiveCellGivesZeroAndActivatesNothing) {
  Program prog(config());
  Field x = prog.field(f32, "x");
  SNode& blocks = prog.root().pointer(i, 16);
  blocks.dense(i, 4).place(x);
  Field out = prog.field(f32, "out", {});
  Kernel k = prog.kernel("k", [&] { for_range(0, 64, [&](Expr n) { out() += x(n); }); });
  k();
  EXPECT_EQ(out.read<float>(), 0.0f);
  EXPECT_EQ(prog.stats().find(blocks.name())->active_cells, 0);
  EXPECT_EQ(prog.stats().find(blocks.name())->pool_used, 0);
}

TEST_P(Sparse, StructForVisitsExactlyTheActiveCells) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& blocks = prog.root().pointer(i, 32);
  blocks.dense(i, 8).place(x);
  Kernel w = prog.kernel("w", [&] {
    x(3) = 1;     // block 0
    x(100) = 1;   // block 12
    x(101) = 1;   // block 12
  });
  w();
  Visit v = visit_1d(prog, x, "v");
  // Active blocks 0 and 12: 16 cells, indices 0..7 and 96..103.
  EXPECT_EQ(v.count, 16);
  EXPECT_EQ(v.sum, (0 + 7) * 8 / 2 + (96 + 103) * 8 / 2);
}

TEST_P(Sparse, PointerOverPointerNested) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& outer = prog.root().pointer(i, 8);
  SNode& inner = outer.pointer(i, 8);
  inner.dense(i, 4).place(x);
  EXPECT_EQ(x.shape(), (Shape{256}));
  Kernel w = prog.kernel("w", {arg(i32, "n")}, [&](Args a) { x(a[0]) = a[0] + 1; });
  for (int n : {0, 5, 37, 255, 254}) w(n);
  EXPECT_EQ(x.read<int32_t>({37}), 38);
  EXPECT_EQ(x.read<int32_t>({255}), 256);
  EXPECT_EQ(x.read<int32_t>({36}), 0);
  Stats s = prog.stats();
  EXPECT_EQ(s.find(outer.name())->active_cells, 3);  // 0-31, 32-63, 224-255
  EXPECT_EQ(s.find(inner.name())->active_cells, 4);  // blocks of 4: {0..3}, {4..7}, {36..39}, {252..255}
  Visit v = visit_1d(prog, x, "v");
  EXPECT_EQ(v.count, 4 * s.find(inner.name())->active_cells);
}

TEST_P(Sparse, TwoDimensionalPointerBlocks) {
  Program prog(config());
  Field x = prog.field(f32, "x");
  SNode& blocks = prog.root().pointer(ij, {64, 64});
  blocks.dense(ij, {8, 8}).place(x);
  Kernel w = prog.kernel("w", [&] {
    for_range(0, 100, [&](Expr n) { x(n * 5, n * 3) = cast(f32, n); });
  });
  w();
  EXPECT_EQ(x.read<float>({50, 30}), 10.0f);
  EXPECT_EQ(x.read<float>({51, 30}), 0.0f);
  std::set<std::pair<int, int>> blocks_touched;
  for (int n = 0; n < 100; ++n) blocks_touched.insert({n * 5 / 8, n * 3 / 8});
  Stats st = prog.stats();
  EXPECT_EQ(st.find(blocks.name())->active_cells, static_cast<int64_t>(blocks_touched.size()));
  Field count = prog.field(i32, "count", {});
  Field sum = prog.field(f32, "sum", {});
  Kernel r = prog.kernel("r", [&] {
    for_each(x, [&](Expr i, Expr j) {
      atomic_add(count(), 1);
      atomic_add(sum(), x(i, j));
    });
  });
  r();
  EXPECT_EQ(count.read<int32_t>(), 64 * static_cast<int32_t>(blocks_touched.size()));
  EXPECT_EQ(sum.read<float>(), 4950.0f);
}

TEST_P(Sparse, BitmaskedUnderDense) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& bm = prog.root().dense(i, 4).bitmasked(i, 4);
  bm.place(x);
  Kernel w = prog.kernel("w", [&] {
    x(1) = 10;
    x(6) = 60;
    x(15) = 150;
  });
  w();
  Visit v = visit_1d(prog, x, "v");
  EXPECT_EQ(v.count, 3);
  EXPECT_EQ(v.sum, 1 + 6 + 15);
  EXPECT_EQ(prog.stats().find(bm.name())->active_cells, 3);
  EXPECT_EQ(x.read<int32_t>({6}), 60);
  EXPECT_EQ(x.read<int32_t>({7}), 0);
}

TEST_P(Sparse, BitmaskedUnderPointer) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& ptr = prog.root().pointer(i, 8);
  SNode& bm = ptr.bitmasked(i, 8);
  bm.place(x);
  Kernel w = prog.kernel("w", [&] { for_range(0, 64, [&](Expr n) { if_(n % 9 == 0, [&] { x(n) = n; }); }); });
  w();
  Visit v = visit_1d(prog, x, "v");
  EXPECT_EQ(v.count, 8);  // 0, 9, ..., 63
  EXPECT_EQ(v.sum, 9 * (0 + 1 + 2 + 3 + 4 + 5 + 6 + 7));
  EXPECT_EQ(prog.stats().find(ptr.name())->active_cells, 8);
}

TEST_P(Sparse, PointerUnderBitmasked) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& bm = prog.root().bitmasked(i, 6);
  SNode& ptr = bm.pointer(i, 5);
  ptr.dense(i, 3).place(x);  // non-power-of-two extents everywhere
  EXPECT_EQ(x.shape(), (Shape{90}));
  Kernel w = prog.kernel("w", [&] {
    x(0) = 1;
    x(44) = 2;
    x(89) = 3;
  });
  w();
  EXPECT_EQ(x.read<int32_t>({44}), 2);
  EXPECT_EQ(x.read<int32_t>({89}), 3);
  Visit v = visit_1d(prog, x, "v");
  EXPECT_EQ(v.count, 9);  // three pointer cells of 3
  EXPECT_EQ(v.sum, (0 + 1 + 2) + (42 + 43 + 44) + (87 + 88 + 89));
  EXPECT_EQ(prog.stats().find(bm.name())->active_cells, 3);
}

TEST_P(Sparse, DynamicUnderDenseAppendAndLength) {
  Program prog(config());
  Field pid = prog.field(i32, "pid");
  SNode& bucket = prog.root().dense(i, 16).dynamic(j, 1024, 32);
  bucket.place(pid);
  Field len = prog.field(i32, "len", {16});
  Field first = prog.field(i32, "first", {});
  Kernel fill = prog.kernel("fill", [&] {
    for_range(0, 500, [&](Expr n) {
      Expr at = append(bucket, {n % 16}, n);
      if_(n == 37, [&] { first() = at; });
    });
    for_range(0, 16, [&](Expr b) { len(b) = length(bucket, {b}); });
  });
  fill();
  std::vector<int32_t> lens = len.to_vector<int32_t>();
  for (int b = 0; b < 16; ++b) EXPECT_EQ(lens[static_cast<size_t>(b)], b < 500 % 16 ? 32 : 31) << b;
  // Parallel appends land in any order: append returns the index it wrote,
  // and list 5 holds each of its values (5 + 16 k) once.
  int32_t at = first.read<int32_t>();
  ASSERT_GE(at, 0);
  ASSERT_LT(at, 31);
  EXPECT_EQ(pid.read<int32_t>({5, at}), 37);
  std::set<int32_t> got, want;
  for (int k = 0; k < 31; ++k) {
    got.insert(pid.read<int32_t>({5, k}));
    want.insert(5 + 16 * k);
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(pid.read<int32_t>({5, 31}), 0);  // list 5 holds 31 values
  EXPECT_EQ(pid.read<int32_t>({5, 40}), 0);  // past the length: reads 0
}

TEST_P(Sparse, DynamicElementsSumInAStructFor) {
  Program prog(config());
  Field v = prog.field(i32, "v");
  SNode& list = prog.root().dense(i, 4).dynamic(j, 100, 8);
  list.place(v);
  Field total = prog.field(i64, "total", {});
  Field visited = prog.field(i32, "visited", {});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 4, [&](Expr b) { for_range(0, b * 10 + 3, [&](Expr n) { append(list, {b}, n); }); });
  });
  Kernel s = prog.kernel("s", [&] {
    for_each(v, [&](Expr b, Expr n) {
      atomic_add(total(), cast(i64, v(b, n)));
      atomic_add(visited(), 1);
    });
  });
  k();
  s();
  int64_t want = 0;
  int32_t count = 0;
  for (int b = 0; b < 4; ++b)
    for (int n = 0; n < b * 10 + 3; ++n) {
      want += n;
      ++count;
    }
  EXPECT_EQ(visited.read<int32_t>(), count);
  EXPECT_EQ(total.read<int64_t>(), want);
}

TEST_P(Sparse, WritingADynamicElementExtendsTheLength) {
  Program prog(config());
  Field v = prog.field(f32, "v");
  SNode& list = prog.root().dense(i, 2).dynamic(j, 64, 4);
  list.place(v);
  Field len = prog.field(i32, "len", {2});
  Kernel k = prog.kernel("k", [&] {
    v(1, 9) = 2.5f;
    for_range(0, 2, [&](Expr b) { len(b) = length(list, {b}); });
  });
  k();
  EXPECT_EQ(len.to_vector<int32_t>(), (std::vector<int32_t>{0, 10}));
  EXPECT_EQ(v.read<float>({1, 9}), 2.5f);
  EXPECT_EQ(v.read<float>({1, 3}), 0.0f);
}

TEST_P(Sparse, DynamicAppendPastTheMaximumIsReportedAndNothingIsCorrupted) {
  Program prog(config());
  Field v = prog.field(i32, "v");
  SNode& list = prog.root().dense(i, 2).dynamic(j, 16, 4);
  list.place(v);
  Field results = prog.field(i32, "results", {20});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 20, [&](Expr n) { results(n) = append(list, {0}, n + 100); });
  });
  try {
    k();
    prog.sync();  // an asynchronous backend reports at the next sync or host read
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr(list.name()));
    EXPECT_THAT(std::string(e.what()), HasSubstr("4 append(s) past the maximum length 16"));
  }
  // Parallel appends land in any order (as in Taichi): append n returned
  // its slot, or -1 for the four that found the list full.
  std::vector<int32_t> r = results.to_vector<int32_t>();
  EXPECT_EQ(std::count(r.begin(), r.end(), -1), 4);
  std::set<int32_t> slots;
  for (int n = 0; n < 20; ++n) {
    if (r[static_cast<size_t>(n)] == -1) continue;
    slots.insert(r[static_cast<size_t>(n)]);
    EXPECT_EQ(v.read<int32_t>({0, r[static_cast<size_t>(n)]}), 100 + n) << n;
  }
  EXPECT_EQ(slots.size(), 16u);  // slots 0..15, each once
  EXPECT_EQ(*slots.begin(), 0);
  EXPECT_EQ(*slots.rbegin(), 15);
  Field len = prog.field(i32, "len", {});
  Kernel l = prog.kernel("l", [&] { len() = length(list, {0}); });
  l();
  EXPECT_EQ(len.read<int32_t>(), 16);
  EXPECT_EQ(prog.stats().allocation_failures, 4);
}

TEST_P(Sparse, DeactivateThenReactivateReadsZero) {
  Program prog(config());
  Field p = prog.field(i32, "p"), b = prog.field(i32, "b"), d = prog.field(i32, "d");
  SNode& ptr = prog.root().pointer(i, 4);
  ptr.dense(i, 4).place(p);
  SNode& bm = prog.root().dense(i, 4).bitmasked(i, 4);
  bm.place(b);
  SNode& dyn = prog.root().dense(i, 2).dynamic(j, 32, 8);
  dyn.place(d);
  Kernel fill = prog.kernel("fill", [&] {
    for_range(0, 16, [&](Expr n) {
      p(n) = n + 1;
      b(n) = n + 1;
    });
    for_range(0, 10, [&](Expr n) { d(1, n) = n + 1; });
  });
  Kernel off = prog.kernel("off", [&] {
    deactivate(ptr, {1});   // cells 4..7
    deactivate(bm, {9});
    deactivate(dyn, {1});   // empties list 1
  });
  Kernel touch = prog.kernel("touch", [&] {
    activate(ptr, {1});
    activate(bm, {9});
    activate(dyn, {1, 2});  // length 3 again
  });
  fill();
  off();
  EXPECT_EQ(p.read<int32_t>({5}), 0);
  EXPECT_EQ(p.read<int32_t>({9}), 10);
  EXPECT_EQ(b.read<int32_t>({9}), 0);
  EXPECT_EQ(b.read<int32_t>({8}), 9);
  EXPECT_EQ(d.read<int32_t>({1, 4}), 0);
  touch();
  EXPECT_EQ(p.read<int32_t>({5}), 0);   // a fresh cell
  EXPECT_EQ(b.read<int32_t>({9}), 0);   // bitmasked too (Taichi keeps stale data here)
  EXPECT_EQ(d.read<int32_t>({1, 1}), 0);
  EXPECT_EQ(d.read<int32_t>({1, 4}), 0);
}

TEST_P(Sparse, IsActiveAndActivateFollowThePath) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& outer = prog.root().pointer(i, 4);
  SNode& inner = outer.pointer(i, 4);
  inner.place(x);
  Field r = prog.field(i32, "r", {6});
  Kernel k = prog.kernel("k", [&] {
    r(0) = cast(i32, is_active(inner, {6}));
    activate(inner, {6});            // activates outer cell 1 on the way
    r(1) = cast(i32, is_active(inner, {6}));
    r(2) = cast(i32, is_active(outer, {1}));
    r(3) = cast(i32, is_active(inner, {7}));
    deactivate(outer, {1});          // frees inner cells below it too
    r(4) = cast(i32, is_active(inner, {6}));
    r(5) = cast(i32, is_active(outer, {1}));
  });
  k();
  EXPECT_EQ(r.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 1, 0, 0, 0}));
  Stats s = prog.stats();
  EXPECT_EQ(s.find(outer.name())->pool_used, 0);
  EXPECT_EQ(s.find(inner.name())->pool_used, 0);  // nothing leaks (Taichi leaks grandchildren)
}

TEST_P(Sparse, StructForOverAnSNode) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& blocks = prog.root().pointer(ij, {8, 8});
  blocks.dense(ij, {4, 4}).place(x);
  Field seen = prog.field(i32, "seen", {8, 8});
  Kernel w = prog.kernel("w", [&] {
    x(0, 0) = 1;
    x(13, 30) = 1;
  });
  Kernel k = prog.kernel("k", [&] { for_each(blocks, [&](Indices I) { seen(I[0], I[1]) += 1; }); });
  Kernel per_axis = prog.kernel("per_axis", [&] { for_each(blocks, [&](Expr bi, Expr bj) { seen(bi, bj) += 10; }); });
  Kernel wrong = prog.kernel("wrong", [&] { for_each(blocks, [&](Expr bi) { seen(bi, bi) += 1; }); });
  w();
  k();
  per_axis();
  EXPECT_THROW(wrong(), Error);  // blocks has 2 axes
  std::vector<int32_t> s = seen.to_vector<int32_t>();
  EXPECT_EQ(s[0], 11);
  EXPECT_EQ(s[3 * 8 + 7], 11);
  EXPECT_EQ(std::count(s.begin(), s.end(), 0), 62);
}

TEST_P(Sparse, DeactivationIsVisibleToTheNextTaskOfTheSameKernel) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& blocks = prog.root().pointer(i, 8);
  blocks.dense(i, 2).place(x);
  Field count = prog.field(i32, "count", {});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 16, [&](Expr n) { x(n) = 1; });
    for_range(0, 8, [&](Expr b) { if_(b % 2 == 1, [&] { deactivate(blocks, {b}); }); });
    for_each(x, [&](Expr) { count() += 1; });
  });
  k();
  EXPECT_EQ(count.read<int32_t>(), 8);
  EXPECT_EQ(prog.stats().find(blocks.name())->active_cells, 4);
}

TEST_P(Sparse, HostWritesActivateAndHostReadsDoNot) {
  Program prog(config());
  Field x = prog.field(f32, "x");
  SNode& blocks = prog.root().pointer(i, 10);
  blocks.dense(i, 10).place(x);
  EXPECT_EQ(x.read<float>({55}), 0.0f);
  EXPECT_EQ(prog.stats().find(blocks.name())->active_cells, 0);
  x.write({55}, 3.5f);
  x.write({57}, 1.5f);
  EXPECT_EQ(x.read<float>({55}), 3.5f);
  EXPECT_EQ(prog.stats().find(blocks.name())->active_cells, 1);
  std::vector<float> all = x.to_vector<float>();
  EXPECT_EQ(all[55], 3.5f);
  EXPECT_EQ(all[57], 1.5f);
  EXPECT_EQ(all[0], 0.0f);
  EXPECT_EQ(prog.stats().find(blocks.name())->active_cells, 1);
}

TEST_P(Sparse, DeactivateAllFromTheHost) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& blocks = prog.root().pointer(i, 16);
  blocks.dense(i, 4).place(x);
  Kernel w = prog.kernel("w", [&] { for_range(0, 64, [&](Expr n) { x(n) = n; }); });
  w();
  EXPECT_EQ(prog.stats().find(blocks.name())->active_cells, 16);
  blocks.deactivate_all();
  EXPECT_EQ(prog.stats().find(blocks.name())->active_cells, 0);
  EXPECT_EQ(prog.stats().find(blocks.name())->pool_used, 0);
  EXPECT_EQ(x.read<int32_t>({33}), 0);
  w();
  EXPECT_EQ(x.read<int32_t>({33}), 33);
}

TEST_P(Sparse, ActivateDeactivateLoopsDoNotLeak) {
  Program prog(config());
  Field x = prog.field(f32, "x");
  SNode& outer = prog.root().pointer(i, 8);
  SNode& inner = outer.pointer(i, 8);
  inner.dense(i, 4).place(x);
  Kernel on = prog.kernel("on", {arg(i32, "round")}, [&](Args a) {
    for_range(0, 256, [&](Expr n) { if_((n + a[0]) % 3 == 0, [&] { x(n) = 1.0f; }); });
  });
  Kernel off = prog.kernel("off", [&] { for_range(0, 8, [&](Expr b) { deactivate(outer, {b}); }); });
  int64_t first_high = -1;
  for (int round = 0; round < 1000; ++round) {
    on(round);
    off();
    if (round == 0) first_high = prog.stats().find(inner.name())->pool_high_water;
  }
  Stats s = prog.stats();
  EXPECT_EQ(s.find(outer.name())->pool_used, 0);
  EXPECT_EQ(s.find(inner.name())->pool_used, 0);
  EXPECT_EQ(s.find(inner.name())->pool_high_water, first_high);  // usage stays flat
  EXPECT_GT(first_high, 0);
}

TEST_P(Sparse, PoolExhaustionIsReportedAndEarlierDataSurvives) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& blocks = prog.root().pointer(i, 100).capacity(10);
  blocks.dense(i, 4).place(x);
  Kernel w = prog.kernel("w", {arg(i32, "lo"), arg(i32, "hi")}, [&](Args a) {
    for_range(a[0], a[1], [&](Expr n) { x(n * 4) = n + 1; });
  });
  w(0, 8);  // 8 blocks: fits
  try {
    w(8, 20);  // 12 more: 2 fit, 10 fail
    prog.sync();  // an asynchronous backend reports at the next sync or host read
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr(blocks.name()));
    EXPECT_THAT(std::string(e.what()), HasSubstr("capacity 10"));
  }
  for (int n = 0; n < 8; ++n) EXPECT_EQ(x.read<int32_t>({n * 4}), n + 1);
  Stats s = prog.stats();
  EXPECT_EQ(s.find(blocks.name())->pool_used, 10);
  EXPECT_EQ(s.find(blocks.name())->active_cells, 10);
  EXPECT_EQ(s.allocation_failures, 10);
  prog.sync();  // reported once
}

// A sync reads the pools' failure counters only after kernels that may
// allocate, but a failure stays reported through launches that cannot.
TEST_P(Sparse, AnAllocationFailureIsReportedAfterLaterDenseLaunches) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  Field d = prog.field(i32, "d", {4});
  SNode& blocks = prog.root().pointer(i, 100).capacity(2);
  blocks.dense(i, 4).place(x);
  Kernel w = prog.kernel("w", [&] { for_range(0, 3, [&](Expr n) { x(n * 4) = n + 1; }); });
  Kernel dense = prog.kernel("dense", [&] { for_range(0, 4, [&](Expr n) { d(n) = n; }); });
  try {
    w();  // 3 blocks, room for 2
    dense();
    dense();
    prog.sync();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("capacity 2"));
  }
  dense();
  prog.sync();  // reported once
  EXPECT_EQ(d.read<int32_t>({3}), 3);
  EXPECT_EQ(prog.stats().find(blocks.name())->active_cells, 2);
}

TEST_P(Sparse, SeedListgenDemoCounts) {
  // The seed's first demo: pointer(i, 4) holding dense(i, 2) twice.
  Program prog(config());
  Field x = prog.field(i32, "x"), y = prog.field(i32, "y"), z = prog.field(i32, "z");
  SNode& S1 = prog.root().pointer(i, 4);
  SNode& S2 = S1.dense(i, 2);
  S2.place(x, y);
  SNode& S5 = S1.dense(i, 2);
  S5.place(z);
  Kernel all = prog.kernel("all", [&] { for_range(0, 8, [&](Expr n) { x(n) = 1; z(n) = 1; }); });
  Kernel loop = prog.kernel("loop", [&] {
    for_each(x, [&](Expr n) { y(n) = x(n) + 1; });
    for_each(z, [&](Expr n) { z(n) += 1; });
  });
  all();
  loop();
  Stats s = prog.stats();
  // The lists below S1 come from its pool: its own list (of the root's one
  // cell) is made only for a struct-for over S1 itself.
  EXPECT_EQ(s.find(S1.name())->list_length, 0);
  prog.kernel("over_S1", [&] { for_each(S1, [&](Expr) {}); })();
  EXPECT_EQ(prog.stats().find(S1.name())->list_length, 1);  // 1 S1pointer container
  EXPECT_EQ(s.find(S2.name())->list_length, 4);  // 4 S2dense containers
  EXPECT_EQ(s.find(S5.name())->list_length, 4);  // 4 S5dense containers
  EXPECT_EQ(s.find(S1.name())->active_cells, 4);
  EXPECT_EQ(s.find(S2.name())->active_cells, 8);
  EXPECT_EQ(s.find(S5.name())->active_cells, 8);
}

TEST_P(Sparse, SeedBitmaskedListgenDemo) {
  // The seed's second demo: dense(i, 4).bitmasked(i, 4), a struct-for over x.
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& S1 = prog.root().dense(i, 4);
  SNode& S2 = S1.bitmasked(i, 4);
  S2.place(x);
  std::vector<std::string> out;
  prog.set_print_sink([&](std::string_view t) { out.emplace_back(t); });
  Kernel w = prog.kernel("w", [&] { x(2) = 1; x(13) = 1; });
  Kernel func = prog.kernel("func", [&] { for_each(x, [&](Expr n) { print(n); }); });
  w();
  func();
  EXPECT_EQ(prog.stats().find(S1.name())->list_length, 1);
  EXPECT_EQ(prog.stats().find(S2.name())->list_length, 4);
  // Parallel iterations print in any order (as in Taichi): each line once.
  std::sort(out.begin(), out.end());
  EXPECT_EQ(out, (std::vector<std::string>{"13\n", "2\n"}));
}

TEST_P(Sparse, ListsAreNotRegeneratedWhenNothingChanged) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& blocks = prog.root().pointer(i, 16);
  SNode& cells = blocks.dense(i, 4);
  cells.place(x);
  Field sum = prog.field(i32, "sum", {});
  Kernel w = prog.kernel("w", {arg(i32, "n")}, [&](Args a) { x(a[0]) = 1; });
  Kernel r = prog.kernel("r", [&] { for_each(x, [&](Expr n) { sum() += x(n); }); });
  w(3);
  r();
  int64_t runs = prog.stats().find(cells.name())->listgen_runs;
  EXPECT_EQ(runs, 1);
  r();
  r();
  EXPECT_EQ(prog.stats().find(cells.name())->listgen_runs, 1);  // unchanged: reused
  EXPECT_EQ(sum.read<int32_t>(), 3);
  // The list of the cells comes from the blocks' pool, not from a list of
  // the blocks' containers: that one is never made.
  EXPECT_EQ(prog.stats().find(blocks.name())->listgen_runs, 0);
  w(40);  // activates a block: the lists below it are stale
  r();
  EXPECT_EQ(prog.stats().find(cells.name())->listgen_runs, 2);
  EXPECT_EQ(sum.read<int32_t>(), 5);
  EXPECT_EQ(prog.stats().find(blocks.name())->listgen_runs, 0);
  w(41);  // same block: still activates nothing new, but a write may have
  r();
  EXPECT_GE(prog.stats().find(cells.name())->listgen_runs, 2);
  EXPECT_EQ(sum.read<int32_t>(), 8);
}

TEST_P(Sparse, DenseListsAreGeneratedOnce) {
  Program prog(config());
  Field x = prog.field(f32, "x");
  SNode& outer = prog.root().dense(i, 8);
  SNode& inner = outer.dense(i, 8);
  inner.place(x);
  Kernel k = prog.kernel("k", [&] { for_each(x, [&](Expr n) { x(n) += 1.0f; }); });
  for (int n = 0; n < 5; ++n) k();
  EXPECT_EQ(prog.stats().find(inner.name())->listgen_runs, 1);
  EXPECT_EQ(x.read<float>({63}), 5.0f);
}

TEST_P(Sparse, SeveralTreesAndSeveralFieldsPerCell) {
  Program prog(config());
  Field a = prog.field(i32, "a"), b = prog.field(f64, "b");
  SNode& t1 = prog.root().pointer(i, 4);
  t1.dense(i, 4).place(a, b);
  Kernel k1 = prog.kernel("k1", [&] { a(5) = 7; b(5) = 0.25; });
  k1();
  Field c = prog.field(i32, "c");  // a new tree: the first is in use
  SNode& t2 = prog.root().bitmasked(i, 16);
  t2.place(c);
  Kernel k2 = prog.kernel("k2", [&] { c(a(5)) = 70; });
  k2();
  EXPECT_EQ(c.read<int32_t>({7}), 70);
  EXPECT_EQ(b.read<double>({5}), 0.25);
  EXPECT_EQ(a.read<int32_t>({4}), 0);
  EXPECT_EQ(prog.stats().find(t2.name())->active_cells, 1);
}

TEST_P(Sparse, CapacityFromTheMemoryBudget) {
  Config c = config();
  c.device_memory = 1 << 20;  // 1 MiB for the pools
  Program prog(c);
  Field x = prog.field(f32, "x");
  SNode& blocks = prog.root().pointer(ij, {1024, 1024});
  blocks.dense(ij, {8, 8}).place(x);
  x.write({0, 0}, 1.0f);
  Stats s = prog.stats();
  int64_t cap = s.find(blocks.name())->pool_capacity;
  EXPECT_GT(cap, 100);
  EXPECT_LT(cap * 64 * 4, 1 << 20);  // fits in the budget
}

TEST_P(Sparse, AtomicsOnSparseCellsActivate) {
  Program prog(config());
  Field h = prog.field(i32, "h");
  SNode& blocks = prog.root().pointer(i, 32);
  blocks.dense(i, 32).place(h);
  Kernel k = prog.kernel("k", [&] { for_range(0, 3000, [&](Expr n) { h((n * 7) % 1024) += 1; }); });
  k();
  int64_t total = 0;
  for (int32_t v : h.to_vector<int32_t>()) total += v;
  EXPECT_EQ(total, 3000);
  EXPECT_EQ(prog.stats().find(blocks.name())->active_cells, 32);
}

TEST_P(Sparse, NarrowAndSixtyFourBitFieldsInPools) {
  Program prog(config());
  Field a = prog.field(u8, "a"), b = prog.field(i64, "b"), c = prog.field(f16, "c");
  SNode& blocks = prog.root().pointer(i, 4);
  blocks.dense(i, 4).place(a, b, c);
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 300, [&](Expr) { a(9) += 1; });
    b(9) = Expr(int64_t{1} << 40);
    c(9) = 0.5f;
    atomic_max(b(2), Expr(int64_t{7}));
  });
  k();
  EXPECT_EQ(a.read<int>({9}), 300 - 256);
  EXPECT_EQ(b.read<int64_t>({9}), int64_t{1} << 40);
  EXPECT_EQ(c.read<float>({9}), 0.5f);
  EXPECT_EQ(b.read<int64_t>({2}), 7);
}

TEST_P(Sparse, InvalidTreesAreRejected) {
  Program prog(config());
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_THAT(message([&] { prog.root().dense(i, 4).dynamic(i, 16); }), HasSubstr("already splits"));
  EXPECT_THAT(message([&] { prog.root().dense(i, 4).dynamic(j, 16, 4).dense(k, 2); }),
              HasSubstr("parent of its fields' places"));
  EXPECT_THAT(message([&] { prog.root().pointer(i, 0); }), HasSubstr("shape of zero"));
  EXPECT_THAT(message([&] { prog.root().dynamic(i, 16, -1); }), HasSubstr("chunk_size"));
  EXPECT_THAT(message([&] { prog.root().dense(i, 4).capacity(3); }), HasSubstr("only pointer and dynamic"));
  EXPECT_THAT(message([&] { axes({0, 1, 2, 3, 4, 5, 6, 7, 0}); }), HasSubstr("1 to 8"));
  Field x = prog.field(i32, "x");
  SNode& p = prog.root().pointer(i, 4);
  p.place(x);
  EXPECT_THAT(message([&] { p.place(x); }), HasSubstr("already placed"));
}

TEST_P(Sparse, SNodeOperationMistakes) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& d = prog.root().dense(i, 4);
  d.place(x);
  auto message = [&](const char* name, std::function<void()> body) -> std::string {
    Kernel k = prog.kernel(name, body);
    try {
      k();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_THAT(message("k1", [&] { deactivate(d, {0}); }), HasSubstr("dense"));
  EXPECT_THAT(message("k2", [&] { append(d, {0}, 1); }), HasSubstr("needs a dynamic SNode"));
  EXPECT_THAT(message("k3", [&] { activate(d, {0, 1}); }), HasSubstr("takes 1 index"));
  EXPECT_THAT(message("k4", [&] { length(d, {0}); }), HasSubstr("kernel 'k4'"));
}

// Whole-field host copies (to_vector, from_vector, fill) of sparse fields
// agree with a plain model and with element reads on every sparse kind,
// for vector fields, offsets and fields sharing cells: the copies find the
// words of a row of elements at once (rt::FieldWalk), element reads walk
// the tree for each one.
TEST_P(Sparse, WholeFieldCopiesMatchAModelOnEverySparseLayout) {
  Program prog(config());
  Field p = prog.vector_field(2, f32, "p");  // 12 x 8 from (-5, 2): pointer blocks of 4 x 2
  Field b = prog.field(i32, "b");            // 4 x 3 x 6: bitmasked under dense
  Field d = prog.field(f64, "d"), h = prog.field(u8, "h");  // 3 lists of up to 10
  SNode& root = prog.root();  // (once laid out, prog.root() starts another tree)
  root.pointer(ij, {3, 4}).dense(ij, {4, 2}).place({p}, {-5, 2});
  root.dense(ijk, {2, 1, 3}).bitmasked(ijk, {2, 3, 2}).place(b);
  SNode& lists = root.dense(i, 3).dynamic(j, 10, 4);
  lists.place(d, h);
  // j split by two dense nodes below the pointer, and a field of no index.
  Field q = prog.field(i64, "q"), z = prog.field(f32, "z");
  root.pointer(i, 3).dense(ij, {2, 2}).dense(j, 3).place(q);  // 6 x 6
  root.place(z);

  // A few single elements, in a model that reads 0 everywhere else.
  std::vector<float> pm(12 * 8 * 2, 0.0f);
  for (auto [i, j] : {std::pair{-5, 2}, {6, 9}, {0, 5}, {1, 5}}) {
    const size_t n = static_cast<size_t>((i + 5) * 8 + (j - 2));
    p[0].write({i, j}, 1.5f * static_cast<float>(n));
    p[1].write({i, j}, -static_cast<float>(n));
    pm[2 * n] = 1.5f * static_cast<float>(n);
    pm[2 * n + 1] = -static_cast<float>(n);
  }
  std::vector<int32_t> bm(4 * 3 * 6, 0);
  for (auto [i, j, k] : {std::tuple{0, 0, 0}, {3, 2, 5}, {2, 1, 4}}) {
    b.write({i, j, k}, 100 + i * 18 + j * 6 + k);
    bm[static_cast<size_t>(i * 18 + j * 6 + k)] = 100 + i * 18 + j * 6 + k;
  }
  std::vector<double> dm(30, 0.0);
  d.write({1, 3}, 0.25);  // list 1 grows to 4 elements
  dm[13] = 0.25;
  EXPECT_EQ(p.to_vector<float>(), pm);
  EXPECT_EQ(b.to_vector<int32_t>(), bm);
  EXPECT_EQ(d.to_vector<double>(), dm);

  // Copies in activate every cell and leave the fields beside them alone.
  for (size_t n = 0; n < pm.size(); ++n) pm[n] = static_cast<float>(n) * 0.5f - 7.0f;
  for (size_t n = 0; n < bm.size(); ++n) bm[n] = static_cast<int32_t>(n * n) - 300;
  for (size_t n = 0; n < dm.size(); ++n) dm[n] = 1.0 / static_cast<double>(n + 1);
  p.from_vector(pm);
  b.from_vector(bm);
  d.from_vector(dm);
  h.fill(uint8_t{201});
  EXPECT_EQ(p.to_vector<float>(), pm);
  EXPECT_EQ(b.to_vector<int32_t>(), bm);
  EXPECT_EQ(d.to_vector<double>(), dm);
  for (int i = 0; i < 12; ++i)
    for (int j = 0; j < 8; ++j)
      ASSERT_EQ(p[1].read<float>({i - 5, j + 2}), pm[static_cast<size_t>((i * 8 + j) * 2 + 1)]) << i << "," << j;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 6; ++k) ASSERT_EQ(b.read<int32_t>({i, j, k}), bm[static_cast<size_t>(i * 18 + j * 6 + k)]);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 10; ++j) {
      ASSERT_EQ(d.read<double>({i, j}), dm[static_cast<size_t>(i * 10 + j)]);
      ASSERT_EQ(h.read<int32_t>({i, j}), 201);
    }
  EXPECT_EQ(prog.stats().at(lists.name()).active_cells, 30);
  // Copies into cells all active already store the values as they are.
  for (float& x : pm) x += 1.0f;
  for (double& x : dm) x *= -2.0;
  p.from_vector(pm);
  d.from_vector(dm);
  EXPECT_EQ(p.to_vector<float>(), pm);
  EXPECT_EQ(d.to_vector<double>(), dm);
  EXPECT_EQ(h.to_vector<int32_t>(), std::vector<int32_t>(30, 201));
  std::vector<int64_t> qm(36);
  for (size_t n = 0; n < qm.size(); ++n) qm[n] = (int64_t{1} << 40) + static_cast<int64_t>(n * 7);
  q.write({4, 1}, int64_t{5});
  EXPECT_EQ(q.to_vector<int64_t>()[4 * 6 + 1], 5);
  q.from_vector(qm);
  z.from_vector(std::vector<float>{2.5f});
  EXPECT_EQ(q.to_vector<int64_t>(), qm);
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>{2.5f});
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) ASSERT_EQ(q.read<int64_t>({i, j}), qm[static_cast<size_t>(i * 6 + j)]);

  // After deactivation everything reads 0; a fill activates every cell again.
  root.deactivate_all();
  EXPECT_EQ(prog.stats().at(lists.name()).active_cells, 0);
  EXPECT_EQ(p.to_vector<float>(), std::vector<float>(pm.size(), 0.0f));
  EXPECT_EQ(d.to_vector<double>(), std::vector<double>(dm.size(), 0.0));
  p.fill(-0.5f);
  b.fill(int32_t{-9});
  EXPECT_EQ(p.to_vector<float>(), std::vector<float>(pm.size(), -0.5f));
  EXPECT_EQ(b.to_vector<int64_t>(), std::vector<int64_t>(bm.size(), -9));
  EXPECT_EQ(p[0].read<float>({6, 9}), -0.5f);
}

// A host copy moves the elements of blocks whose pool entries follow each
// other (made in order) as one run, and must stop such a run at a block
// made out of order or an inactive one: blocks 0-3 activated in order,
// 7, 6, 5 in reverse, 4 and 8-9 left inactive, in 1-D (blocks of one run
// each) and in 2-D (a block's rows are not contiguous with its
// neighbour's); over more than a batch of power-of-two blocks; and
// power-of-two blocks of a vector field made partly in order.
TEST_P(Sparse, HostCopiesOfBlocksMadeInAndOutOfOrderMatchAModel) {
  Program prog(config());
  Field x = prog.field(f32, "x");   // 10 blocks of 8
  Field y = prog.field(i32, "y");   // 2 x 4 blocks of 2 x 4: 4 x 16
  prog.root().pointer(i, 10).dense(i, 8).place(x);
  prog.root().pointer(ij, {2, 4}).dense(ij, {2, 4}).place(y);
  std::vector<float> xm(80, 0.0f);
  for (int blk : {0, 1, 2, 3, 7, 6, 5}) {
    x.write({blk * 8 + 3}, 1.0f);  // activates the block, its pool entry the next one
    xm[static_cast<size_t>(blk * 8 + 3)] = 1.0f;
  }
  EXPECT_EQ(x.to_vector<float>(), xm);
  std::vector<float> xv(80);
  for (size_t n = 0; n < xv.size(); ++n) xv[n] = static_cast<float>(n) + 0.5f;
  x.from_vector(xv);  // activates 4, 8 and 9 too, after the others
  EXPECT_EQ(x.to_vector<float>(), xv);
  for (int n : {0, 7, 8, 31, 32, 39, 40, 47, 55, 56, 63, 64, 79})
    EXPECT_EQ(x.read<float>({n}), xv[static_cast<size_t>(n)]) << "element " << n;

  std::vector<int32_t> ym(64, 0);
  for (auto [bi, bj] : {std::pair{0, 0}, {0, 1}, {0, 2}, {1, 3}, {1, 1}}) {
    y.write({bi * 2 + 1, bj * 4 + 2}, bi * 10 + bj + 1);
    ym[static_cast<size_t>((bi * 2 + 1) * 16 + bj * 4 + 2)] = bi * 10 + bj + 1;
  }
  EXPECT_EQ(y.to_vector<int32_t>(), ym);
  std::vector<int32_t> yv(64);
  std::iota(yv.begin(), yv.end(), -20);
  y.from_vector(yv);
  EXPECT_EQ(y.to_vector<int32_t>(), yv);
  EXPECT_EQ(y.read<int32_t>({3, 15}), 63 - 20);

  // Power-of-two blocks (their slots read as an array along the row), more
  // than one batch of them (32), made in a scrambled order, a third left
  // inactive; then the rest made by a copy in.
  Field z = prog.field(f64, "z");  // 64 blocks of 2
  prog.root().pointer(i, 64).dense(i, 2).place(z);
  std::vector<double> zm(128, 0.0);
  for (int k = 0; k < 64; ++k) {
    const int blk = (k * 37) % 64;
    if (blk % 3 == 1) continue;
    z.write({blk * 2 + 1}, blk + 0.25);
    zm[static_cast<size_t>(blk * 2 + 1)] = blk + 0.25;
  }
  EXPECT_EQ(z.to_vector<double>(), zm);
  std::vector<double> kept(500, 7.0);  // a buffer kept by the caller: resized, inactive cells' 7s become 0
  z.to_vector(kept);
  EXPECT_EQ(kept, zm);
  std::vector<double> same(128, 7.0);  // of the field's size: written in place, inactive cells' 7s become 0
  z.to_vector(same);
  EXPECT_EQ(same, zm);
  std::vector<double> zv(128);
  for (size_t n = 0; n < zv.size(); ++n) zv[n] = -static_cast<double>(n);
  z.from_vector(zv);
  EXPECT_EQ(z.to_vector<double>(), zv);
  z.to_vector(kept);
  EXPECT_EQ(kept, zv);

  // Power-of-two blocks whose entries follow one another (made in order)
  // are one run, a vector field's components with them; a block made out
  // of order, or an inactive one, ends it: 0-3 and 5-6 in order, then 9,
  // 8 and 15, the rest inactive.
  Field v = prog.vector_field(2, i32, "v");  // 16 blocks of 4
  prog.root().pointer(i, 16).dense(i, 4).place({v});
  std::vector<int32_t> vm(64 * 2, 0);
  for (int blk : {0, 1, 2, 3, 5, 6, 9, 8, 15}) {
    const int e = blk * 4 + blk % 4;
    v[0].write({e}, blk + 1);
    v[1].write({e}, -blk - 1);
    vm[static_cast<size_t>(e * 2)] = blk + 1;
    vm[static_cast<size_t>(e * 2 + 1)] = -blk - 1;
  }
  EXPECT_EQ(v.to_vector<int32_t>(), vm);
  std::vector<int32_t> vkept(vm.size(), 3);  // written in place
  v.to_vector(vkept);
  EXPECT_EQ(vkept, vm);
  std::vector<int32_t> vv(vm.size());
  for (size_t n = 0; n < vv.size(); ++n) vv[n] = static_cast<int32_t>(n * 3) - 50;
  v.from_vector(vv);
  EXPECT_EQ(v.to_vector<int32_t>(), vv);
  EXPECT_EQ(v[1].read<int32_t>({37}), vv[37 * 2 + 1]);

  // Memory the caller holds: spans of exactly the field's values.
  std::array<double, 128> held{};
  z.to_span(std::span<double>(held));
  EXPECT_TRUE(std::equal(held.begin(), held.end(), zv.begin()));
  for (double& v : held) v = v * 2 + 1;
  z.from_span(std::span<const double>(held));
  std::vector<double> doubled(zv.size());
  for (size_t n = 0; n < zv.size(); ++n) doubled[n] = zv[n] * 2 + 1;
  EXPECT_EQ(z.to_vector<double>(), doubled);
  std::array<double, 100> small{};
  try {
    z.to_span(std::span<double>(small));
    ADD_FAILURE() << "a span of 100 values took a field of 128";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("to_span on field 'z': the span holds 100 values, the field 128"));
  }
  try {
    z.from_span(std::span<const double>(small));
    ADD_FAILURE() << "100 values were stored into a field of 128";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("from_span on field 'z': got 100 values, the field holds 128"));
  }
}

// A host write to a sparse field activates its cell, through Grove's writer
// kernel; one to a cell active already, where the tree's buffer is host
// memory (the interpreter, the CPU, Vulkan on unified memory), is a store
// with no launch: a loop writing elements one by one costs no kernel each,
// and a fill of a field whose cells are all active none at all.
// The values against a plain model either way, the writes ordered with the
// launches around them; a dynamic list grows through the writer only.
TEST_P(Sparse, HostWritesToActiveCellsAreStoresWhereTheTreeIsHostMemory) {
  Config c = config();
  c.profile = true;
  Program prog(c);
  Field x = prog.field(i32, "x");  // 8 blocks of 4
  SNode& blocks = prog.root().pointer(i, 8);
  blocks.dense(i, 4).place(x);
  Field l = prog.field(f32, "l");  // 2 lists of up to 8
  prog.root().dense(i, 2).dynamic(j, 8, 4).place(l);
  Kernel twice = prog.kernel("twice", [&] { for_each(x, [&](Expr n) { x(n) = x(n) * 2; }); });
  std::vector<int32_t> xm(32, 0);
  x.write({5}, 1);   // activates block 1
  x.write({21}, 2);  // and block 5
  for (int n : {4, 5, 6, 7, 20, 21, 22, 23}) {
    x.write({n}, 10 + n);
    xm[static_cast<size_t>(n)] = 10 + n;
  }
  EXPECT_EQ(x.to_vector<int32_t>(), xm);
  twice();
  for (int32_t& v : xm) v *= 2;
  x.write({6}, -3);  // after the launch, before the reads: in order
  xm[6] = -3;
  EXPECT_EQ(x.read<int32_t>({6}), -3);
  EXPECT_EQ(x.read<int32_t>({7}), 34);
  EXPECT_EQ(x.to_vector<int32_t>(), xm);
  x.write({0}, 7);  // block 0 inactive: activated
  xm[0] = 7;
  EXPECT_EQ(x.to_vector<int32_t>(), xm);
  EXPECT_EQ(prog.stats().at(blocks.name()).active_cells, 3);

  // A fill writes every element: the first activates the other blocks
  // (a launch of the filler), the second finds them all active.
  x.fill(5);
  EXPECT_EQ(x.to_vector<int32_t>(), std::vector<int32_t>(32, 5));
  EXPECT_EQ(prog.stats().at(blocks.name()).active_cells, 8);
  x.fill(-6);
  EXPECT_EQ(x.to_vector<int32_t>(), std::vector<int32_t>(32, -6));

  l.write({1, 0}, 0.5f);  // past the list's length (0): appended
  l.write({1, 1}, 1.5f);  // past it (1): appended
  l.write({1, 0}, 2.5f);  // within it: stored
  std::vector<float> lm(16, 0.0f);
  lm[8] = 2.5f;
  lm[9] = 1.5f;
  EXPECT_EQ(l.to_vector<float>(), lm);

  prog.sync();
  auto launches = [&](const std::string& kernel) {
    int64_t n = 0;
    for (const TaskProfile& t : prog.profile())
      if (t.kernel == kernel) n = std::max(n, t.count);
    return n;
  };
  const bool in_place = detail::field_in_host_memory(prog, x);
  if (GetParam() == Arch::Interp || GetParam() == Arch::Cpu) EXPECT_TRUE(in_place);
  EXPECT_EQ(launches("__write_x"), in_place ? 3 : 12);  // of 12 writes, 3 activate
  EXPECT_EQ(launches("__write_l"), in_place ? 2 : 3);   // of 3, 2 append
  EXPECT_EQ(launches("__fill_x"), in_place ? 1 : 2);    // of 2 fills, 1 activates
}

// A copy in (or a fill) activates the cells of the deepest pointer above
// the field one invocation each, in index order, before it writes the
// elements: no invocation loses a race for a block (on a parallel device
// the writers of one block's elements each took a candidate entry, all but
// one left spare), so the pool holds exactly the blocks' entries, and
// where the cells are taken in order (the interpreter) the entries follow
// the blocks' row-major order. In 1-D and 2-D.
TEST_P(Sparse, ACopyInActivatesEachBlockOnceInIndexOrder) {
  Program prog(config());
  Field x = prog.field(f32, "x");  // 64 blocks of 16
  Field y = prog.field(i32, "y");  // 4 x 8 blocks of 4 x 2: 16 x 16
  SNode& xb = prog.root().pointer(i, 64);
  xb.dense(i, 16).place(x);
  SNode& yb = prog.root().pointer(ij, {4, 8});
  yb.dense(ij, {4, 2}).place(y);
  std::vector<float> xv(1024);
  for (size_t n = 0; n < xv.size(); ++n) xv[n] = static_cast<float>(n) * 0.25f;
  std::vector<int32_t> yv(256);
  std::iota(yv.begin(), yv.end(), -7);
  x.from_vector(xv);
  y.from_vector(yv);
  EXPECT_EQ(x.to_vector<float>(), xv);
  EXPECT_EQ(y.to_vector<int32_t>(), yv);
  for (auto [blocks, count] : {std::pair{&xb, 64u}, {&yb, 32u}}) {
    const std::vector<uint32_t> slots = detail::root_pointer_slots(prog, *blocks);
    std::vector<uint32_t> in_order(count);
    std::iota(in_order.begin(), in_order.end(), 1u);  // entry k + 1 for block k, row-major
    std::vector<uint32_t> sorted = slots;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, in_order) << blocks->name() << ": an entry per block, none spare";
    if (GetParam() == Arch::Interp) EXPECT_EQ(slots, in_order) << blocks->name();
  }
  // A fill of a field whose blocks are inactive again does the same.
  xb.deactivate_all();
  x.fill(2.0f);
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(1024, 2.0f));
  EXPECT_EQ(prog.stats().at(xb.name()).pool_used, 64);
}

TEST_P(Sparse, AStructForOverBlocksWritesAFieldOfAnotherTreeOfTheSameShape) {
  // A map of the active blocks, in a dense field declared after the sparse
  // tree froze (a tree of its own) with the blocks' shape: the struct-for's
  // writes land in the other tree (this once raised std::out_of_range while
  // the list analysis looked for the loop's node above the field).
  Program prog(config());
  Field x = prog.field(f32, "x");
  SNode& blocks = prog.root().pointer(ij, 4);
  blocks.dense(ij, 8).place(x);
  Kernel seed = prog.kernel("seed", [&] {
    x(3, 3) = 1.0f;
    x(30, 9) = 1.0f;
  });
  seed();
  Field marks = prog.field(i32, "marks", {4, 4});
  Kernel mark = prog.kernel("mark", [&] { for_each(blocks, [&](Expr bi, Expr bj) { marks(bi, bj) = bi * 4 + bj + 1; }); });
  mark();
  std::vector<int32_t> want(16, 0);
  want[0] = 1;       // block (0, 0)
  want[3 * 4 + 1] = 14;  // block (3, 1)
  EXPECT_EQ(marks.to_vector<int32_t>(), want);
}

}  // namespace
