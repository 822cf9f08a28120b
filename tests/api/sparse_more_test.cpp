// More sparse SNode cases: the remaining parent/child pairs, struct-fors over
// SNodes, reuse of freed cells, host access and random patterns checked
// against a reference.
#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <set>

#include "backend_fixture.h"
#include "ir/snode.h"
#include "program/program_impl.h"

using namespace grove;
using ::testing::HasSubstr;

namespace {

class SparseMore : public grove::testing::BackendTest {};
GROVE_ALL_BACKENDS(SparseMore);

int32_t count_visits(Program& prog, const Field& f, const std::string& tag) {
  Field count = prog.field(i32, tag + "_count", {});
  Kernel k = prog.kernel(tag, [&] { for_each(f, [&](Indices) { count() += 1; }); });
  k();
  return count.read<int32_t>();
}

// A scatter's atomic adds to a vector and a scalar sharing cells (a
// particle-to-grid transfer's grid_v and grid_m), from every iteration of
// a parallel loop into a few cells: on the CPU the components of one cell
// share a compare-and-swap where they are aligned, and go one by one where
// not (cells of 3 words: every other one). The sums are exact integers.
TEST_P(SparseMore, ScatteredVectorAddsIntoSharedCellsAreExact) {
  Program prog(config());
  Field gv = prog.vector_field(3, f32, "gv"), gm = prog.field(f32, "gm");
  prog.root().pointer(i, 4).dense(i, 4).place(gv, gm);
  Field dv = prog.vector_field(3, f32, "dv", {7});
  constexpr int kN = 20000;
  Kernel k = prog.kernel("scatter", [&] {
    for_range(0, kN, [&](Expr q) {
      const Expr c = q % 13;
      gv(c) += Vec{Expr(1.0f), Expr(2.0f), cast(f32, q % 2)};
      gm(c) += 1.0f;
      dv(q % 7) += Vec{Expr(1.0f), cast(f32, q % 3), Expr(3.0f)};
    });
  });
  k();
  std::vector<float> want_g(16 * 3, 0.0f), want_m(16, 0.0f), want_d(7 * 3, 0.0f);
  for (int q = 0; q < kN; ++q) {
    const size_t c = static_cast<size_t>(q % 13), d = static_cast<size_t>(q % 7);
    want_g[3 * c] += 1.0f;
    want_g[3 * c + 1] += 2.0f;
    want_g[3 * c + 2] += static_cast<float>(q % 2);
    want_m[c] += 1.0f;
    want_d[3 * d] += 1.0f;
    want_d[3 * d + 1] += static_cast<float>(q % 3);
    want_d[3 * d + 2] += 3.0f;
  }
  EXPECT_EQ(gv.to_vector<float>(), want_g);
  EXPECT_EQ(gm.to_vector<float>(), want_m);
  EXPECT_EQ(dv.to_vector<float>(), want_d);
}

TEST_P(SparseMore, PointerUnderDense) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& ptr = prog.root().dense(i, 4).pointer(i, 4);
  ptr.place(x);
  Kernel w = prog.kernel("w", [&] { x(5) = 5; x(15) = 15; });
  w();
  EXPECT_EQ(x.read<int32_t>({5}), 5);
  EXPECT_EQ(x.read<int32_t>({6}), 0);
  EXPECT_EQ(prog.stats().find(ptr.name())->active_cells, 2);
  EXPECT_EQ(count_visits(prog, x, "v"), 2);
}

TEST_P(SparseMore, BitmaskedUnderBitmasked) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& outer = prog.root().bitmasked(i, 8);
  SNode& inner = outer.bitmasked(i, 8);
  inner.place(x);
  Kernel w = prog.kernel("w", [&] { for_range(0, 64, [&](Expr n) { if_(n % 10 == 3, [&] { x(n) = n; }); }); });
  w();
  EXPECT_EQ(count_visits(prog, x, "v"), 7);  // 3, 13, ..., 63
  EXPECT_EQ(prog.stats().find(outer.name())->active_cells, 7);
  EXPECT_EQ(x.read<int32_t>({43}), 43);
}

TEST_P(SparseMore, DynamicUnderPointer) {
  Program prog(config());
  Field v = prog.field(i32, "v");
  SNode& ptr = prog.root().pointer(i, 8);
  SNode& list = ptr.dynamic(j, 64, 16);
  list.place(v);
  Field len = prog.field(i32, "len", {8});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 40, [&](Expr n) { append(list, {(n % 2) * 5}, n); });  // lists 0 and 5
    for_range(0, 8, [&](Expr b) { len(b) = length(list, {b}); });
  });
  k();
  EXPECT_EQ(len.to_vector<int32_t>(), (std::vector<int32_t>{20, 0, 0, 0, 0, 20, 0, 0}));
  EXPECT_EQ(prog.stats().find(ptr.name())->active_cells, 2);  // length() activated nothing
  EXPECT_EQ(count_visits(prog, v, "v"), 40);
}

TEST_P(SparseMore, DynamicUnderBitmasked) {
  Program prog(config());
  Field v = prog.field(f32, "v");
  SNode& bm = prog.root().bitmasked(i, 4);
  SNode& list = bm.dynamic(j, 32, 8);
  list.place(v);
  Kernel k = prog.kernel("k", [&] { for_range(0, 10, [&](Expr n) { append(list, {3}, cast(f32, n) * 0.5f); }); });
  k();
  // Parallel appends land in any order (as in Taichi): every value once.
  std::vector<float> got;
  for (int n = 0; n < 10; ++n) got.push_back(v.read<float>({3, n}));
  std::sort(got.begin(), got.end());
  for (int n = 0; n < 10; ++n) EXPECT_EQ(got[static_cast<size_t>(n)], static_cast<float>(n) * 0.5f) << n;
  EXPECT_EQ(v.read<float>({2, 0}), 0.0f);
  EXPECT_EQ(prog.stats().find(bm.name())->active_cells, 1);
  EXPECT_EQ(prog.stats().find(list.name())->pool_used, 2);  // 10 elements in chunks of 8
}

TEST_P(SparseMore, TwoDimensionalBitmaskedWithOddExtents) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& bm = prog.root().dense(ij, {3, 5}).bitmasked(ij, {7, 3});
  bm.place(x);
  ASSERT_EQ(x.shape(), (Shape{21, 15}));
  // 40 writes to 15 cells (n and n + 15 meet): atomic adds, so that two
  // threads activating the same cell is tested without a data race.
  std::map<std::pair<int, int>, int> want;
  for (int n = 0; n < 40; ++n) ++want[{(n * 7) % 21, (n * 4) % 15}];
  Kernel w = prog.kernel("w", [&] {
    for_range(0, 40, [&](Expr n) { x((n * 7) % 21, (n * 4) % 15) += 1; });
  });
  w();
  EXPECT_EQ(count_visits(prog, x, "v"), static_cast<int32_t>(want.size()));
  std::vector<int32_t> all = x.to_vector<int32_t>();
  for (int a = 0; a < 21; ++a)
    for (int b = 0; b < 15; ++b) {
      const auto it = want.find({a, b});
      EXPECT_EQ(all[static_cast<size_t>(a * 15 + b)], it == want.end() ? 0 : it->second) << a << "," << b;
    }
}

// A pointer that splits only axis i of its 2-D child: a struct-for over the
// child finds each cell's i from the pool entry's coordinates (one axis
// recorded) and its j from the child alone.
TEST_P(SparseMore, StructForBelowAPointerOverFewerAxes) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& blocks = prog.root().pointer(i, 6);
  blocks.dense(ij, {4, 8}).place(x);
  ASSERT_EQ(x.shape(), (Shape{24, 8}));
  Field cells = prog.field(i32, "cells", {}), index = prog.field(i64, "index", {});
  Field values = prog.field(i32, "values", {});
  Kernel w = prog.kernel("w", [&] { x(5, 7) = 3; x(22, 0) = 4; x(13, 2) = 5; });
  Kernel visit = prog.kernel("visit", [&] {
    for_each(x, [&](Expr i, Expr j) {
      atomic_add(cells(), 1);
      atomic_add(index(), cast(i64, i * 100 + j));
      atomic_add(values(), x(i, j));
    });
  });
  w();
  visit();
  // Blocks 1 (rows 4..7), 3 (rows 12..15) and 5 (rows 20..23) are active.
  int64_t want_index = 0;
  for (int block : {1, 3, 5})
    for (int r = 4 * block; r < 4 * block + 4; ++r)
      for (int c = 0; c < 8; ++c) want_index += r * 100 + c;
  EXPECT_EQ(cells.read<int32_t>(), 3 * 32);
  EXPECT_EQ(index.read<int64_t>(), want_index);
  EXPECT_EQ(values.read<int32_t>(), 12);
}

TEST_P(SparseMore, ThreeDimensionalPointer) {
  Program prog(config());
  Field x = prog.field(f32, "x");
  SNode& blocks = prog.root().pointer(ijk, {4, 4, 4});
  blocks.dense(ijk, {2, 3, 2}).place(x);
  ASSERT_EQ(x.shape(), (Shape{8, 12, 8}));
  Kernel w = prog.kernel("w", [&] { x(7, 11, 7) = 1.5f; x(0, 0, 0) = 2.5f; x(1, 2, 1) = 3.5f; });
  w();
  EXPECT_EQ(x.read<float>({7, 11, 7}), 1.5f);
  EXPECT_EQ(x.read<float>({1, 2, 1}), 3.5f);
  EXPECT_EQ(prog.stats().find(blocks.name())->active_cells, 2);
  EXPECT_EQ(count_visits(prog, x, "v"), 2 * 12);
}

// A struct-for finds a block's cells from the coordinates its pool entry
// keeps: one word where every axis's fits side by side (the inner 2-D
// pointer below: 16 + 16 bits exactly), a word per axis where they do not
// (the inner 3-D pointer: 3 x 12 bits). Each visited cell writes its own
// indices; every cell of each written block must hold them.
TEST_P(SparseMore, StructForsFindCellsOfPointersWhoseCoordinatesFillAWordOrMore) {
  Program prog(config());
  Field xi = prog.field(i32, "xi"), xj = prog.field(i32, "xj"), xk = prog.field(i32, "xk");
  SNode& outer3 = prog.root().pointer(ijk, {64, 64, 64});
  outer3.capacity(4);
  SNode& inner3 = outer3.pointer(ijk, {64, 64, 64});
  inner3.capacity(8);
  inner3.dense(ijk, {2, 2, 2}).place(xi, xj, xk);
  Field yi = prog.field(i32, "yi"), yj = prog.field(i32, "yj");
  SNode& outer2 = prog.root().pointer(ij, {256, 256});
  outer2.capacity(4);
  SNode& inner2 = outer2.pointer(ij, {256, 256});
  inner2.capacity(8);
  inner2.dense(ij, {2, 2}).place(yi, yj);
  const std::vector<std::array<int, 3>> points3 = {{8191, 5, 4096}, {1, 8190, 8191}, {6000, 6001, 7}};
  const std::vector<std::array<int, 2>> points2 = {{131071, 131070}, {0, 131069}, {80001, 3}};
  Kernel w = prog.kernel("w", [&] {
    for (const auto& p : points3) xi(p[0], p[1], p[2]) = -1;
    for (const auto& p : points2) yi(p[0], p[1]) = -1;
  });
  Kernel visit = prog.kernel("visit", [&] {
    for_each(xi, [&](Expr i, Expr j, Expr k) {
      xi(i, j, k) = i;
      xj(i, j, k) = j;
      xk(i, j, k) = k;
    });
    for_each(yi, [&](Expr i, Expr j) {
      yi(i, j) = i;
      yj(i, j) = j;
    });
  });
  w();
  visit();
  EXPECT_EQ(count_visits(prog, xi, "v3"), 3 * 8);
  EXPECT_EQ(count_visits(prog, yi, "v2"), 3 * 4);
  for (const auto& p : points3)
    for (int c = 0; c < 8; ++c) {
      const int i = p[0] / 2 * 2 + c / 4, j = p[1] / 2 * 2 + c / 2 % 2, k = p[2] / 2 * 2 + c % 2;
      EXPECT_EQ(xi.read<int32_t>({i, j, k}), i) << i << " " << j << " " << k;
      EXPECT_EQ(xj.read<int32_t>({i, j, k}), j) << i << " " << j << " " << k;
      EXPECT_EQ(xk.read<int32_t>({i, j, k}), k) << i << " " << j << " " << k;
    }
  for (const auto& p : points2)
    for (int c = 0; c < 4; ++c) {
      const int i = p[0] / 2 * 2 + c / 2, j = p[1] / 2 * 2 + c % 2;
      EXPECT_EQ(yi.read<int32_t>({i, j}), i) << i << " " << j;
      EXPECT_EQ(yj.read<int32_t>({i, j}), j) << i << " " << j;
    }
}

// A 3-D MPM scatter's shape: a struct-for over the cells of pointer blocks,
// each cell adding to many f64 grid values, some under ifs. On Vulkan an
// f64 atomic add is a compare-and-swap loop; lavapipe mis-compiled the
// code once 80 of them were in one task (the loop-limit check returned
// after every loop, and Mesa nests everything after a return one level
// deeper): adds after the 79th were lost silently, or the loop-limit
// error was raised though no loop ran long. Checked against a plain model.
// Writes under ifs into many blocks from one statement group (a live
// cell's eight neighbours, as sparse_life counts them, and writes into a
// second tree of two pointer levels, some in an else): exactly the blocks
// a write that runs names become active, with the values of a plain model.
// Vulkan's lowering activates such a group's cells in one loop ahead of
// the writes (LowerAccessOptions::group_activations); the others, at each.
TEST_P(SparseMore, WritesOfAStatementGroupActivateExactlyTheBlocksTheyReach) {
  constexpr int kN = 64;
  constexpr std::array<std::pair<int, int>, 8> kNeighbours = {
      {{-1, -1}, {-1, 0}, {-1, 1}, {0, -1}, {0, 1}, {1, -1}, {1, 0}, {1, 1}}};
  Program prog(config());
  Field alive = prog.field(i32, "alive", {kN, kN});
  Field cnt = prog.field(i32, "cnt"), mark = prog.field(i32, "mark"), far = prog.field(i32, "far");
  prog.root().pointer(ij, {16, 16}).dense(ij, {4, 4}).place(cnt, mark);
  prog.root().pointer(ij, {4, 4}).pointer(ij, {4, 4}).dense(ij, {4, 4}).place(far);
  std::vector<int32_t> live(kN * kN, 0);
  std::mt19937 rng(17);
  for (int32_t& c : live) c = rng() % 10 == 0 ? 1 : 0;
  live[0] = live[kN - 1] = live[kN * kN - 1] = 1;  // corners: neighbours off the grid
  alive.from_vector(live);
  Kernel k = prog.kernel("group", [&] {
    for_each(alive, [&](Expr i, Expr j) {
      if_(alive(i, j) == 1, [&] {
        for (const auto& [di, dj] : kNeighbours) {
          Expr ni = i + di, nj = j + dj;
          if_(ni >= 0 && ni < kN && nj >= 0 && nj < kN, [&] { cnt(ni, nj) += 1; });
        }
        mark(i, j) = 7;
        far(i, (j * 5) % kN) += 1;
        far(kN - 1 - i, j) += 100;
      }).else_([&] { if_(i % 7 == 0 && j % 11 == 0, [&] { far(i, j) += 10000; }); });
    });
  });
  k();
  std::vector<int32_t> want_cnt(kN * kN, 0), want_mark(kN * kN, 0), want_far(kN * kN, 0);
  std::set<std::pair<int, int>> blocks, far_blocks;  // active blocks of 4x4 cells
  auto at = [](int i, int j) { return static_cast<size_t>(i * kN + j); };
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j) {
      if (live[at(i, j)] == 1) {
        for (const auto& [di, dj] : kNeighbours) {
          const int ni = i + di, nj = j + dj;
          if (ni < 0 || ni >= kN || nj < 0 || nj >= kN) continue;
          ++want_cnt[at(ni, nj)];
          blocks.insert({ni / 4, nj / 4});
        }
        want_mark[at(i, j)] = 7;
        blocks.insert({i / 4, j / 4});
        want_far[at(i, j * 5 % kN)] += 1;
        far_blocks.insert({i / 4, j * 5 % kN / 4});
        want_far[at(kN - 1 - i, j)] += 100;
        far_blocks.insert({(kN - 1 - i) / 4, j / 4});
      } else if (i % 7 == 0 && j % 11 == 0) {
        want_far[at(i, j)] += 10000;
        far_blocks.insert({i / 4, j / 4});
      }
    }
  EXPECT_EQ(cnt.to_vector<int32_t>(), want_cnt);
  EXPECT_EQ(mark.to_vector<int32_t>(), want_mark);
  EXPECT_EQ(far.to_vector<int32_t>(), want_far);
  EXPECT_EQ(count_visits(prog, cnt, "c"), static_cast<int32_t>(16 * blocks.size()));
  EXPECT_EQ(count_visits(prog, far, "f"), static_cast<int32_t>(16 * far_blocks.size()));
}

TEST_P(SparseMore, ManyFloat64AtomicAddsPerCellOfAStructFor) {
  constexpr int kAdds = 120, kGrid = 64;
  Program prog(config());
  Field m = prog.field(f64, "m");
  prog.root().pointer(ijk, {4, 4, 4}).dense(ijk, {4, 4, 4}).place(m);
  Field grid = prog.field(f64, "grid", {kGrid});
  const std::vector<std::array<int, 3>> blocks{{0, 0, 0}, {3, 1, 2}};
  for (const auto& b : blocks) m.write({b[0] * 4, b[1] * 4, b[2] * 4}, 1.0);
  Kernel scatter = prog.kernel("scatter", [&] {
    for_each(m, [&](Expr i, Expr j, Expr k) {
      for (int q = 0; q < kAdds; ++q) {
        auto add = [&] { atomic_add(grid((i + j * 3 + k * 7 + q) % kGrid), cast(f64, q) * 0.5 + 1.0); };
        if (q % 2 == 0) add();
        else if_((i + j + k + q) % 3 != 0, add);
      }
    });
  });
  scatter();
  std::vector<double> want(kGrid, 0.0);
  for (const auto& b : blocks)
    for (int i = b[0] * 4; i < b[0] * 4 + 4; ++i)
      for (int j = b[1] * 4; j < b[1] * 4 + 4; ++j)
        for (int k = b[2] * 4; k < b[2] * 4 + 4; ++k)
          for (int q = 0; q < kAdds; ++q)
            if (q % 2 == 0 || (i + j + k + q) % 3 != 0) want[static_cast<size_t>((i + j * 3 + k * 7 + q) % kGrid)] += q * 0.5 + 1.0;
  // Every addend is a multiple of 0.5 and every sum far below 2^52: exact in any order.
  for (int n = 0; n < kGrid; ++n) EXPECT_EQ(grid.read<double>({n}), want[static_cast<size_t>(n)]) << n;
}

TEST_P(SparseMore, VectorFieldUnderPointer) {
  Program prog(config());
  Field v = prog.vector_field(3, f32, "v");
  SNode& blocks = prog.root().pointer(i, 8);
  blocks.dense(i, 4).place(v);
  Field len = prog.field(f32, "len", {32});
  Kernel k = prog.kernel("k", [&] {
    v(9) = Vec{3.0f, 4.0f, 12.0f};
    for_each(v[0], [&](Expr n) { len(n) = norm(v(n).vec()); });
  });
  k();
  EXPECT_EQ(len.read<float>({9}), 13.0f);
  EXPECT_EQ(len.read<float>({8}), 0.0f);
  EXPECT_EQ(v[2].read<float>({9}), 12.0f);
}

TEST_P(SparseMore, StructForOverBitmaskedAndDynamicSNodes) {
  Program prog(config());
  Field x = prog.field(i32, "x"), v = prog.field(i32, "v");
  SNode& bm = prog.root().dense(i, 2).bitmasked(i, 8);
  bm.place(x);
  SNode& list = prog.root().dense(i, 3).dynamic(j, 16, 4);
  list.place(v);
  Field bsum = prog.field(i32, "bsum", {}), dsum = prog.field(i32, "dsum", {});
  Kernel w = prog.kernel("w", [&] {
    activate(bm, {3});
    activate(bm, {12});
    for_range(0, 5, [&](Expr n) { append(list, {2}, n); });
  });
  Kernel k = prog.kernel("k", [&] {
    for_each(bm, [&](Indices I) { bsum() += I[0]; });
    for_each(list, [&](Indices I) { dsum() += I[0] * 100 + I[1]; });
  });
  w();
  k();
  EXPECT_EQ(bsum.read<int32_t>(), 15);
  EXPECT_EQ(dsum.read<int32_t>(), 5 * 200 + (0 + 1 + 2 + 3 + 4));
}

TEST_P(SparseMore, AppendFromOneThreadGivesConsecutiveIndices) {
  Program prog(config());
  Field v = prog.field(i32, "v");
  SNode& list = prog.root().dense(i, 1).dynamic(j, 100, 10);
  list.place(v);
  Field idx = prog.field(i32, "idx", {25});
  Kernel k = prog.kernel("k", [&] {
    Var n = 0;
    while_([&] { return n < 25; }, [&] {
      idx(n) = append(list, {0}, n * n);
      n += 1;
    });
  });
  k();
  std::vector<int32_t> got = idx.to_vector<int32_t>();
  for (int n = 0; n < 25; ++n) {
    EXPECT_EQ(got[static_cast<size_t>(n)], n);
    EXPECT_EQ(v.read<int32_t>({0, n}), n * n);
  }
}

TEST_P(SparseMore, IsActiveOnDynamicElements) {
  Program prog(config());
  Field v = prog.field(i32, "v");
  SNode& list = prog.root().dense(i, 2).dynamic(j, 8, 2);
  list.place(v);
  Field r = prog.field(i32, "r", {4});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 3, [&](Expr n) { append(list, {1}, n); });
    r(0) = cast(i32, is_active(list, {1, 2}));
    r(1) = cast(i32, is_active(list, {1, 3}));
    r(2) = cast(i32, is_active(list, {0, 0}));
    activate(list, {0, 4});
    r(3) = length(list, {0});
  });
  k();
  EXPECT_EQ(r.to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 0, 5}));
}

TEST_P(SparseMore, DeactivatingAPointerFreesBitmaskedChildrenToo) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& ptr = prog.root().pointer(i, 4);
  SNode& bm = ptr.bitmasked(i, 4);
  SNode& inner = bm.pointer(i, 2);
  inner.place(x);
  Kernel w = prog.kernel("w", [&] { for_range(0, 32, [&](Expr n) { x(n) = n + 1; }); });
  Kernel off = prog.kernel("off", [&] { deactivate(ptr, {2}); });
  w();
  EXPECT_EQ(prog.stats().find(inner.name())->pool_used, 32);  // one element per inner cell
  off();
  Stats s = prog.stats();
  EXPECT_EQ(s.find(ptr.name())->pool_used, 3);
  EXPECT_EQ(s.find(inner.name())->pool_used, 24);  // the 8 inner cells below cell 2 are freed
  for (int n = 16; n < 24; ++n) EXPECT_EQ(x.read<int32_t>({n}), 0);
  EXPECT_EQ(x.read<int32_t>({24}), 25);
  w();
  EXPECT_EQ(x.read<int32_t>({17}), 18);
  EXPECT_EQ(prog.stats().find(inner.name())->pool_used, 32);
}

// A struct-for after a deactivation in the same kernel. Listgen below a
// pointer lists its pool's entries in use, and the entries below a
// deactivated cell of an outer pointer are freed only by gc, so the kernel
// collects before it lists. x[8o, 8o + 8) lies in outer cell o, x[2m, 2m + 2)
// in inner cell m.
TEST_P(SparseMore, StructForAfterDeactivatingAnOuterCellInTheSameKernel) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  Field drop = prog.field(i32, "drop", {8});
  Field sums = prog.field(i64, "sums", {2});
  SNode& outer = prog.root().pointer(i, 8);
  outer.pointer(i, 4).dense(i, 2).place(x);
  Kernel prune_then_sum = prog.kernel("prune_then_sum", [&] {
    for_range(0, 8, [&](Expr o) { if_(drop(o) != 0, [&] { deactivate(outer, {o}); }); });
    sums(0) = cast(i64, 0);
    sums(1) = cast(i64, 0);
    for_each(x, [&](Expr n) {
      sums(0) += cast(i64, 1);
      sums(1) += cast(i64, n);
    });
  });
  std::set<int> blocks;  // active inner cells
  auto write = [&](std::vector<int> at) {
    for (int n : at) {
      x.write<int32_t>({n}, 1);
      blocks.insert(n / 2);
    }
  };
  auto check = [&](std::vector<int32_t> dropped, const char* what) {
    drop.from_vector(dropped);
    for (int o = 0; o < 8; ++o)
      if (dropped[static_cast<size_t>(o)] != 0) std::erase_if(blocks, [&](int m) { return m / 4 == o; });
    int64_t count = 0, index_sum = 0;
    for (int m : blocks) count += 2, index_sum += 4 * m + 1;
    prune_then_sum();
    EXPECT_EQ(sums.to_vector<int64_t>(), (std::vector<int64_t>{count, index_sum})) << what;
  };
  write({0, 3, 9, 17, 18, 40, 63});
  check({0, 1, 1, 0, 0, 0, 0, 0}, "outer cells 1 and 2 dropped");
  check({0, 0, 0, 0, 0, 0, 0, 0}, "nothing dropped");
  write({9, 41, 47});
  check({0, 0, 0, 0, 0, 1, 0, 0}, "outer cell 5 dropped, 1 back");
  EXPECT_EQ(prog.stats().find(outer.name())->pool_used, 3);  // outer cells 0, 1 and 7
}

TEST_P(SparseMore, DeactivateAllOnBitmaskedAndDynamic) {
  Program prog(config());
  Field x = prog.field(i32, "x"), v = prog.field(i32, "v");
  SNode& bm = prog.root().dense(i, 4).bitmasked(i, 4);
  bm.place(x);
  SNode& list = prog.root().dense(i, 4).dynamic(j, 16, 4);
  list.place(v);
  Kernel w = prog.kernel("w", [&] {
    for_range(0, 16, [&](Expr n) { x(n) = 1; append(list, {n % 4}, n); });
  });
  w();
  bm.deactivate_all();
  list.deactivate_all();
  Stats s = prog.stats();
  EXPECT_EQ(s.find(bm.name())->active_cells, 0);
  EXPECT_EQ(s.find(list.name())->active_cells, 0);
  EXPECT_EQ(s.find(list.name())->pool_used, 0);
  EXPECT_EQ(x.read<int32_t>({3}), 0);
  EXPECT_EQ(count_visits(prog, v, "v"), 0);
}

// Containers of more cells than one parallel iteration may take (a CPU
// iteration walks a run of up to 512 cells): 1073 cells under the root, and
// bitmasked blocks of 1000 cells, both split into runs with a short last
// one, and 16 x 32 blocks of exactly 512. Every active cell is visited once,
// with its own indices; the expected values are worked out here.
TEST_P(SparseMore, StructForsOverContainersOfManyCellsVisitEachCellOnce) {
  Program prog(config());
  Field a = prog.field(i32, "a"), b = prog.field(i32, "b"), c = prog.field(i32, "c");
  prog.root().dense(ij, {37, 29}).place(a);
  SNode& masks = prog.root().pointer(i, 6).bitmasked(i, 1000);
  masks.place(b);
  prog.root().pointer(ij, {3, 3}).dense(ij, {16, 32}).place(c);
  Field seen = prog.field(i32, "seen", {6000});
  Kernel fill = prog.kernel("fill", [&] {
    for_range(0, 6000, [&](Expr n) { if_(n % 7 == 3 && n / 1000 != 2, [&] { b(n) = n; }); });
    for_range(0, 9, [&](Expr n) { if_(n % 4 == 0, [&] { c(n / 3 * 16, n % 3 * 32) = 1; }); });
  });
  Field a_bad = prog.field(i32, "a_bad", {}), b_sum = prog.field(i64, "b_sum", {});
  Field c_cells = prog.field(i32, "c_cells", {}), c_index = prog.field(i64, "c_index", {});
  Kernel visit = prog.kernel("visit", [&] {
    for_each(a, [&](Expr i, Expr j) { a(i, j) += i * 100 + j; });
    for_each(b, [&](Expr n) {
      atomic_add(seen(n), 1);
      atomic_add(b_sum(), cast(i64, b(n) * 3 - n * 2));  // b(n) is n
    });
    for_each(c, [&](Expr i, Expr j) {
      atomic_add(c_cells(), 1);
      atomic_add(c_index(), cast(i64, i * 1000 + j));
    });
  });
  Kernel check = prog.kernel("check", [&] {
    for_range(0, 37, [&](Expr i) {
      for_range(0, 29, [&](Expr j) { if_(a(i, j) != i * 100 + j, [&] { atomic_add(a_bad(), 1); }); });
    });
  });
  fill();
  visit();
  check();
  EXPECT_EQ(a_bad.read<int32_t>(), 0);
  // b: exactly the written cells are active (blocks 0, 1, 3, 4 and 5 hold
  // them; block 2 was never written).
  std::vector<int32_t> want_seen(6000, 0);
  int64_t want_sum = 0;
  for (int n = 0; n < 6000; ++n)
    if (n % 7 == 3 && n / 1000 != 2) want_seen[static_cast<size_t>(n)] = 1, want_sum += n;
  EXPECT_EQ(seen.to_vector<int32_t>(), want_seen);
  EXPECT_EQ(b_sum.read<int64_t>(), want_sum);
  // c: blocks (0,0), (1,1), (2,2) of 16 x 32 cells each.
  int64_t want_index = 0;
  for (int blk : {0, 4, 8})
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 32; ++j) want_index += (blk / 3 * 16 + i) * 1000 + (blk % 3 * 32 + j);
  EXPECT_EQ(c_cells.read<int32_t>(), 3 * 512);
  EXPECT_EQ(c_index.read<int64_t>(), want_index);
}

TEST_P(SparseMore, StructForBodyActivatesOtherBlocks) {
  Program prog(config());
  Field a = prog.field(i32, "a"), b = prog.field(i32, "b");
  SNode& blocks = prog.root().pointer(i, 16);
  blocks.dense(i, 4).place(a, b);
  Kernel seed = prog.kernel("seed", [&] { a(20) = 1; });
  // Spreads to the neighbours, which may be in blocks that are not active yet.
  // Two cells can mark the same neighbour at once, so the marks are atomic.
  Kernel spread = prog.kernel("spread", [&] {
    for_each(a, [&](Expr n) {
      if_(a(n) == 1, [&] {
        if_(n > 0, [&] { atomic_max(b(n - 1), 1); });
        if_(n < 63, [&] { atomic_max(b(n + 1), 1); });
      });
    });
  });
  Kernel swap = prog.kernel("swap", [&] { for_each(b, [&](Expr n) { a(n) = max(a(n), b(n)); b(n) = 0; }); });
  seed();
  for (int s = 0; s < 6; ++s) {
    spread();
    swap();
  }
  for (int n = 0; n < 64; ++n) EXPECT_EQ(a.read<int32_t>({n}), n >= 14 && n <= 26 ? 1 : 0) << n;
  EXPECT_EQ(prog.stats().find(blocks.name())->active_cells, 4);  // blocks 3..6
}

TEST_P(SparseMore, FreedCellsAreReused) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& blocks = prog.root().pointer(i, 64).capacity(8);
  blocks.dense(i, 4).place(x);
  Kernel on = prog.kernel("on", {arg(i32, "first")}, [&](Args a) {
    for_range(0, 8, [&](Expr n) { x((a[0] + n) * 4) = n + 1; });
  });
  Kernel off = prog.kernel("off", {arg(i32, "first")}, [&](Args a) {
    for_range(0, 8, [&](Expr n) { deactivate(blocks, {a[0] + n}); });
  });
  for (int round = 0; round < 20; ++round) {  // 160 activations through 8 cells
    on(round * 3 % 56);
    EXPECT_EQ(x.read<int32_t>({(round * 3 % 56 + 7) * 4}), 8);
    off(round * 3 % 56);
  }
  Stats s = prog.stats();
  EXPECT_EQ(s.find(blocks.name())->pool_used, 0);
  EXPECT_EQ(s.find(blocks.name())->pool_high_water, 8);
  EXPECT_EQ(s.allocation_failures, 0);
}

// One kernel's allocations take the entries gc returned first and then the
// ones never used, with nothing lost between the two, up to the capacity.
TEST_P(SparseMore, OneKernelAllocatesFreedEntriesThenUnusedOnes) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& blocks = prog.root().pointer(i, 64).capacity(12);
  blocks.dense(i, 4).place(x);
  Kernel on = prog.kernel("on", {arg(i32, "first"), arg(i32, "count")}, [&](Args a) {
    for_range(0, a[1], [&](Expr n) { x((a[0] + n) * 4) = a[0] + n + 100; });
  });
  Kernel off = prog.kernel("off", {arg(i32, "first"), arg(i32, "count")}, [&](Args a) {
    for_range(0, a[1], [&](Expr n) { deactivate(blocks, {a[0] + n}); });
  });
  on(0, 6);   // entries 0..5
  off(0, 4);  // 4 of them returned by gc
  on(10, 10);  // those 4, then entries 6..11: all 12 in use
  Stats s = prog.stats();
  EXPECT_EQ(s.find(blocks.name())->pool_used, 12);
  EXPECT_EQ(s.find(blocks.name())->pool_high_water, 12);
  EXPECT_EQ(s.find(blocks.name())->active_cells, 12);
  EXPECT_EQ(s.allocation_failures, 0);
  for (int b = 0; b < 64; ++b) {
    const bool active = (b >= 4 && b < 6) || (b >= 10 && b < 20);
    EXPECT_EQ(x.read<int32_t>({b * 4}), active ? b + 100 : 0) << "block " << b;
  }
  // The pool is full now: one more block fails, is reported, and changes nothing.
  try {
    on(30, 1);
    prog.sync();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("ran out of pool memory"));
  }
  EXPECT_EQ(x.read<int32_t>({30 * 4}), 0);
  EXPECT_EQ(x.read<int32_t>({19 * 4}), 119);
  blocks.deactivate_all();
  on(40, 12);  // everything free again: 12 entries, no more
  s = prog.stats();
  EXPECT_EQ(s.find(blocks.name())->pool_used, 12);
  EXPECT_EQ(s.find(blocks.name())->pool_high_water, 12);
  EXPECT_EQ(x.read<int32_t>({51 * 4}), 151);
}

TEST_P(SparseMore, DynamicChunkPoolExhaustion) {
  Program prog(config());
  Field v = prog.field(i32, "v");
  SNode& list = prog.root().dense(i, 4).dynamic(j, 64, 8).capacity(3);
  list.place(v);
  Kernel k = prog.kernel("k", [&] { for_range(0, 30, [&](Expr n) { append(list, {0}, n + 1); }); });
  EXPECT_THROW({ k(); prog.sync(); }, Error);
  // At most three chunks of 8 exist. How many got published depends on how
  // the appends raced: a thread that finds a chunk slot empty takes a
  // candidate chunk before it publishes, and a loser's candidate waits on the
  // spare list, so simultaneous activations can exhaust a pool this tight
  // (DESIGN.md: pools need headroom, which default capacities include).
  // Every stored value is one of those appended, each at most once.
  std::set<int32_t> seen;
  int stored = 0;
  for (int n = 0; n < 32; ++n) {
    int32_t value = v.read<int32_t>({0, n});
    if (value == 0) continue;
    ++stored;
    EXPECT_TRUE(value >= 1 && value <= 30) << value;
    EXPECT_TRUE(seen.insert(value).second) << value;
  }
  int64_t chunks = prog.stats().find(list.name())->pool_used;
  EXPECT_GE(chunks, 1);
  EXPECT_LE(chunks, 3);
  EXPECT_GE(stored, 1);
  EXPECT_LE(stored, 8 * chunks);
  if (GetParam() == Arch::Interp) {
    EXPECT_EQ(stored, 24);  // one append at a time: no race
  }
}

TEST_P(SparseMore, HostWriteToADynamicElementExtendsTheList) {
  Program prog(config());
  Field v = prog.field(i32, "v");
  SNode& list = prog.root().dense(i, 2).dynamic(j, 32, 8);
  list.place(v);
  v.write({1, 12}, 7);
  EXPECT_EQ(v.read<int32_t>({1, 12}), 7);
  EXPECT_EQ(count_visits(prog, v, "v"), 13);  // elements 0..12 of list 1
}

TEST_P(SparseMore, RandomPatternMatchesAReference) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& outer = prog.root().pointer(ij, {8, 8});
  SNode& inner = outer.bitmasked(ij, {4, 4});
  inner.dense(ij, {2, 2}).place(x);
  std::mt19937 rng(7);
  std::map<std::pair<int, int>, int> ref;
  Kernel w = prog.kernel("w", {arg(i32, "i"), arg(i32, "j"), arg(i32, "v")},
                         [&](Args a) { x(a[0], a[1]) = a[2]; });
  Kernel off = prog.kernel("off", {arg(i32, "i"), arg(i32, "j")}, [&](Args a) { deactivate(inner, {a[0], a[1]}); });
  for (int n = 0; n < 150; ++n) {
    int a = static_cast<int>(rng() % 64), b = static_cast<int>(rng() % 64);
    if (n % 5 == 4) {
      off(a / 2, b / 2);
      for (int da = 0; da < 2; ++da)
        for (int db = 0; db < 2; ++db) ref.erase({a / 2 * 2 + da, b / 2 * 2 + db});
    } else {
      w(a, b, n + 1);
      ref[{a, b}] = n + 1;
    }
  }
  std::vector<int32_t> all = x.to_vector<int32_t>();
  for (int a = 0; a < 64; ++a)
    for (int b = 0; b < 64; ++b) {
      auto it = ref.find({a, b});
      ASSERT_EQ(all[static_cast<size_t>(a * 64 + b)], it == ref.end() ? 0 : it->second) << a << "," << b;
    }
  std::set<std::pair<int, int>> cells;
  for (auto& [k, v] : ref) cells.insert({k.first / 2, k.second / 2});
  EXPECT_LE(static_cast<size_t>(prog.stats().find(inner.name())->active_cells), ref.size() + 200);
  EXPECT_GE(static_cast<size_t>(prog.stats().find(inner.name())->active_cells), cells.size());
}

// Listgen finds a pointer's children through the in-use bits of its pool.
// Rounds of activations and deactivations in one parallel loop (gc clears
// the bits of the entries it frees, and reuses them), each round followed
// by struct-fors over both children of the pointer, checked against a set
// of active cells. Up to 1600 entries: 50 bit words, more than one run.
TEST_P(SparseMore, StructForsFollowRoundsOfActivationAndDeactivation) {
  Program prog(config());
  Field x = prog.field(i32, "x"), y = prog.field(i32, "y");
  constexpr int n = 40;
  SNode& ptr = prog.root().pointer(ij, {n, n});
  ptr.dense(ij, {2, 2}).place(x);
  ptr.dense(ij, {2, 2}).place(y);
  constexpr int kOps = 96;
  Field op = prog.field(i32, "op", {kOps});  // cell * 2 + 1 activates, cell * 2 deactivates, -1 nothing
  Field sums = prog.field(i64, "sums", {4});
  Kernel apply = prog.kernel("apply", [&] {
    for_range(0, kOps, [&](Expr k) {
      Expr o = op(k);
      if_(o >= 0, [&] {
        Expr c = o / 2;
        if_(o % 2 == 1, [&] { x(c / n * 2, c % n * 2) = 1; }).else_([&] { deactivate(ptr, {c / n, c % n}); });
      });
    });
  });
  Kernel visit = prog.kernel("visit", [&] {
    for (int k = 0; k < 4; ++k) sums(k) = cast(i64, 0);
    for_each(x, [&](Expr i, Expr j) { sums(0) += cast(i64, 1); sums(1) += cast(i64, i * 1000 + j); });
    for_each(y, [&](Expr i, Expr j) { sums(2) += cast(i64, 1); sums(3) += cast(i64, i * 1000 + j); });
  });
  std::mt19937 rng(11);
  std::set<int> active;
  for (int round = 0; round < 12; ++round) {
    std::vector<int32_t> ops(kOps, -1);
    std::set<int> touched;  // one operation per cell and round
    for (int k = 0; k < kOps; ++k) {
      int c = static_cast<int>(rng() % (n * n));
      if (round % 4 == 3 && !active.empty()) c = *std::next(active.begin(), static_cast<long>(rng() % active.size()));
      if (!touched.insert(c).second) continue;
      bool on = round % 4 != 3 && rng() % 3 != 0;
      ops[static_cast<size_t>(k)] = c * 2 + (on ? 1 : 0);
      if (on) active.insert(c); else active.erase(c);
    }
    op.from_vector(ops);
    apply();
    visit();
    int64_t count = 0, index_sum = 0;
    for (int c : active)
      for (int di = 0; di < 2; ++di)
        for (int dj = 0; dj < 2; ++dj, ++count) index_sum += (c / n * 2 + di) * 1000 + (c % n * 2 + dj);
    std::vector<int64_t> got = sums.to_vector<int64_t>();
    ASSERT_EQ(got, (std::vector<int64_t>{count, index_sum, count, index_sum})) << "round " << round;
  }
}

TEST_P(SparseMore, DebugModeChecksSparseIndices) {
  Program prog(debug_config());
  Field x = prog.field(i32, "x");
  prog.root().pointer(i, 4).dense(i, 4).place(x);
  Kernel k = prog.kernel("k", {arg(i32, "n")}, [&](Args a) { x(a[0]) = 1; });
  k(3);
  try {
    k(16);
    prog.sync();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("kernel 'k': field 'x' has shape (16); index (16) is out of bounds"));
  }
  EXPECT_EQ(x.read<int32_t>({3}), 1);
}

TEST_P(SparseMore, SiblingPointersHaveTheirOwnPools) {
  Program prog(config());
  Field a = prog.field(i32, "a"), b = prog.field(i32, "b");
  SNode& pa = prog.root().pointer(i, 8);
  pa.dense(i, 2).place(a);
  SNode& pb = prog.root().pointer(i, 8);
  pb.dense(i, 2).place(b);
  Kernel k = prog.kernel("k", [&] { for_range(0, 16, [&](Expr n) { a(n) = n; if_(n < 4, [&] { b(n) = -n; }); }); });
  k();
  Stats s = prog.stats();
  EXPECT_EQ(s.find(pa.name())->pool_used, 8);
  EXPECT_EQ(s.find(pb.name())->pool_used, 2);
  EXPECT_EQ(b.read<int32_t>({3}), -3);
  EXPECT_EQ(a.read<int32_t>({15}), 15);
}

TEST_P(SparseMore, WritingTheVisitedCellKeepsTheLists) {
  Program prog(config());
  Field x = prog.field(f32, "x"), y = prog.field(f32, "y");
  SNode& blocks = prog.root().pointer(ij, {16, 16});
  SNode& cells = blocks.dense(ij, {4, 4});
  cells.place(x, y);
  Kernel seed = prog.kernel("seed", [&] { x(5, 5) = 1.0f; x(60, 2) = 2.0f; });
  // Writes only the cell each iteration visits: nothing can activate.
  Kernel step = prog.kernel("step", [&] {
    for_each(x, [&](Expr i, Expr j) { y(i, j) = x(i, j) * 2.0f; x(i, j) += 1.0f; });
  });
  seed();
  for (int n = 0; n < 4; ++n) step();
  EXPECT_EQ(prog.stats().find(cells.name())->listgen_runs, 1);
  EXPECT_EQ(x.read<float>({5, 5}), 5.0f);
  EXPECT_EQ(y.read<float>({60, 2}), 2.0f * 5.0f);
  EXPECT_EQ(y.read<float>({5, 6}), 6.0f);  // x there went 0, 1, 2, 3 before the last step
  EXPECT_EQ(prog.stats().find(blocks.name())->active_cells, 2);
  // A write to a neighbour may activate: that kernel regenerates the lists.
  Kernel spread = prog.kernel("spread", [&] {
    for_each(x, [&](Expr i, Expr j) { if_(i < 63, [&] { y(i + 1, j) = 1.0f; }); });
  });
  spread();
  step();
  EXPECT_EQ(prog.stats().find(cells.name())->listgen_runs, 2);
}

// The Laplacian of issue 34: x and y in blocks of their own under one
// pointer, a struct-for over x writing y at its own cell. y's cell there
// lies in the same (active) pointer cell through dense nodes only, so the
// write activates nothing and the lists are made once, not every launch.
TEST_P(SparseMore, WritingASiblingFieldAtTheVisitedCellKeepsTheLists) {
  Program prog(config());
  Field x = prog.field(f32, "x"), y = prog.field(f32, "y"), z = prog.field(f32, "z");
  SNode& blocks = prog.root().pointer(ijk, 4);
  SNode& xs = blocks.dense(ijk, 4);
  xs.place(x);
  blocks.dense(ijk, 4).place(y);
  blocks.dense(ijk, 2).pointer(ijk, 2).place(z);  // the same index space, but a pointer between
  Kernel seed = prog.kernel("seed", [&] {
    for_range(0, 3, [&](Expr n) { x(n * 5, 1, 2) = cast(f32, n + 1); });
  });
  Kernel lap = prog.kernel("lap", [&] {
    for_each(x, [&](Expr i, Expr j, Expr k) {
      y(i, j, k) = x(i + 1, j, k) + x(i - 1, j, k) + x(i, j + 1, k) + x(i, j - 1, k) + x(i, j, k + 1) +
                   x(i, j, k - 1) - 6.0f * x(i, j, k);
    });
  });
  seed();
  for (int n = 0; n < 32; ++n) lap();
  EXPECT_EQ(prog.stats().at(xs.name()).listgen_runs, 1);
  EXPECT_EQ(prog.stats().at(blocks.name()).active_cells, 3);  // (0,1,2), (5,1,2), (10,1,2): three blocks
  EXPECT_EQ(y.read<float>({5, 1, 2}), -12.0f);
  EXPECT_EQ(y.read<float>({4, 1, 2}), 2.0f);  // in the block of (5, 1, 2), beside it
  // A write through a sparse node below the shared one may activate.
  Kernel into_z = prog.kernel("into_z", [&] { for_each(x, [&](Expr i, Expr j, Expr k) { z(i, j, k) = 1.0f; }); });
  into_z();
  lap();
  EXPECT_EQ(prog.stats().at(xs.name()).listgen_runs, 2);
}

// A struct-for reading its neighbours (a stencil), in and across the edges
// of its blocks, some of whose neighbours are inactive (reads of 0): p and q
// share the visited dense node, where a target may find a neighbour in the
// loop's own block without reading its slot (LowerAccessOptions::near_reads;
// lavapipe does); r lies in blocks of its own. Against a plain model, with
// and without an offset on the fields.
TEST_P(SparseMore, StencilReadsInAndAcrossBlockEdgesMatchAModel) {
  constexpr int kN = 24, kB = 4;
  for (const std::vector<int64_t>& offset : {std::vector<int64_t>{0, 0}, std::vector<int64_t>{-5, 3}}) {
    SCOPED_TRACE("offset " + std::to_string(offset[0]) + ", " + std::to_string(offset[1]));
    Program prog(config());
    Field p = prog.field(i32, "p"), q = prog.field(i32, "q"), r = prog.field(i32, "r");
    SNode& blocks = prog.root().pointer(ij, kN / kB);
    blocks.dense(ij, kB).place({p, q}, offset);
    blocks.dense(ij, kB).place({r}, offset);
    const int lo0 = static_cast<int>(offset[0]), lo1 = static_cast<int>(offset[1]);
    auto active = [](int i, int j) { return (i / kB + 2 * (j / kB)) % 3 != 0; };  // by block
    auto value = [](int i, int j) { return (i * 7 + j * 3) % 11 + 1; };
    Kernel seed = prog.kernel("seed", [&] {
      for_range({kN, kN}, [&](Expr i, Expr j) {
        if_(((i / kB) + 2 * (j / kB)) % 3 != 0, [&] {
          p(i + lo0, j + lo1) = (i * 7 + j * 3) % 11 + 1;
          r(i + lo0, j + lo1) = (i * 7 + j * 3) % 11 + 1;
        });
      });
    });
    auto at = [&](const Field& f, const Expr& i, const Expr& j) {
      return Expr(f(max(min(i, Expr(lo0 + kN - 1)), Expr(lo0)), max(min(j, Expr(lo1 + kN - 1)), Expr(lo1))));
    };
    Kernel stencil = prog.kernel("stencil", [&] {
      for_each(p, [&](Expr i, Expr j) {
        q(i, j) = at(p, i - 1, j) + 2 * at(p, i + 1, j) + 4 * at(p, i, j - 1) + 8 * at(p, i, j + 1) +
                  16 * at(p, i + 1, j + 1) + 32 * at(p, i - 2, j) + 64 * at(r, i, j + 1);
      });
    });
    seed();
    stencil();
    auto model_at = [&](int i, int j) {
      i = std::clamp(i, 0, kN - 1), j = std::clamp(j, 0, kN - 1);
      return active(i, j) ? value(i, j) : 0;
    };
    const std::vector<int32_t> got = q.to_vector<int32_t>();
    ASSERT_EQ(got.size(), static_cast<size_t>(kN * kN));
    for (int i = 0; i < kN; ++i)
      for (int j = 0; j < kN; ++j) {
        const int want = !active(i, j) ? 0
                                       : model_at(i - 1, j) + 2 * model_at(i + 1, j) + 4 * model_at(i, j - 1) +
                                             8 * model_at(i, j + 1) + 16 * model_at(i + 1, j + 1) +
                                             32 * model_at(i - 2, j) + 64 * model_at(i, j + 1);
        ASSERT_EQ(got[static_cast<size_t>(i * kN + j)], want) << "cell (" << i << ", " << j << ")";
      }
  }
}

// Reads at constant offsets from a struct-for's cell (p(i + 1, j - 3)),
// along one and two axes, in and across the edges of its blocks, some of
// them inactive (reads of 0), some past the grid's edges (a lookup wraps
// there: each level takes its digits of the index as an unsigned number),
// with and without an offset on the fields; q, in a dense block beside p's
// under the same pointer, is read and written at the loop's indices.
// Against a plain model. The CPU looks the neighbouring blocks up once per
// run of cells (LowerAccessOptions::NearReads::at_offsets), and finds q's
// cell from the loop's (SparseRuntime::cell_beside).
TEST_P(SparseMore, StencilReadsAtConstantOffsetsMatchAModel) {
  constexpr int kN = 24;
  for (const int kB : {4, 3})  // (blocks of a side not a power of two: every read walks)
  for (const std::vector<int64_t>& offset : {std::vector<int64_t>{0, 0}, std::vector<int64_t>{-5, 3}}) {
    SCOPED_TRACE("blocks of " + std::to_string(kB) + ", offset " + std::to_string(offset[0]) + ", " +
                 std::to_string(offset[1]));
    const int kBlocks = kN / kB;
    Program prog(config());
    Field p = prog.field(i32, "p"), q = prog.field(i32, "q");
    SNode& blocks = prog.root().pointer(ij, kBlocks);
    blocks.dense(ij, kB).place({p}, offset);
    blocks.dense(ij, kB).place({q}, offset);
    const int lo0 = static_cast<int>(offset[0]), lo1 = static_cast<int>(offset[1]);
    // By block, at physical indices (the logical less the offset).
    auto active = [kB](int i, int j) { return (i / kB + 2 * (j / kB)) % 3 != 0; };
    auto value = [](int i, int j) { return (i * 7 + j * 3) % 11 + 1; };
    Kernel seed = prog.kernel("seed", [&] {
      for_range({kN, kN}, [&](Expr i, Expr j) {
        if_(((i / kB) + 2 * (j / kB)) % 3 != 0, [&] {
          p(i + lo0, j + lo1) = (i * 7 + j * 3) % 11 + 1;
          q(i + lo0, j + lo1) = i - j;
        });
      });
    });
    // (offset along i, along j, weight)
    const std::vector<std::array<int, 3>> reads = {{-1, 0, 1},  {1, 0, 2},  {0, -1, 4},  {0, 1, 8},   {1, 1, 16},
                                                   {-3, 2, 32}, {4, 0, 64}, {0, -5, 128}, {2, -3, 256}, {-2, -2, 512}};
    Kernel stencil = prog.kernel("stencil", [&] {
      for_each(p, [&](Expr i, Expr j) {
        Expr sum = q(i, j) * 10000;
        for (const auto& [di, dj, w] : reads) sum = sum + w * p(i + di, j + dj);
        q(i, j) = sum;
      });
    });
    seed();
    stencil();
    // A lookup's wrap: the block (index / side) modulo the blocks, the
    // place in it index modulo side, both of the index as a u32.
    auto wrap = [kB, kBlocks](int v) {
      const auto u = static_cast<uint32_t>(v), side = static_cast<uint32_t>(kB);
      return static_cast<int>((u / side) % static_cast<uint32_t>(kBlocks) * side + u % side);
    };
    auto model_at = [&](int i, int j) {
      i = wrap(i), j = wrap(j);
      return active(i, j) ? value(i, j) : 0;
    };
    const std::vector<int32_t> got = q.to_vector<int32_t>();
    ASSERT_EQ(got.size(), static_cast<size_t>(kN * kN));
    for (int i = 0; i < kN; ++i)
      for (int j = 0; j < kN; ++j) {
        int want = 0;
        if (active(i, j)) {
          want = (i - j) * 10000;
          for (const auto& [di, dj, w] : reads) want += w * model_at(i + di, j + dj);
        }
        ASSERT_EQ(got[static_cast<size_t>(i * kN + j)], want) << "cell (" << i << ", " << j << ")";
      }
  }
}

// A read of a field placed in the loop's own blocks with another offset,
// whose indices reach the loop's cell (s(i + 1, j) where s is offset by
// (1, 0)), next to a neighbour's read (p(i + 1, j)): the first moves along
// no axis, and on the CPU both take the neighbouring blocks a run looks up
// (it once made an `if` without a condition). Against a plain model,
// including the wrap of p's index past the grid.
TEST_P(SparseMore, AReadAtTheLoopsCellThroughAnotherOffsetBesideANeighboursRead) {
  constexpr int kN = 16, kB = 4, kBlocks = kN / kB;
  Program prog(config());
  Field p = prog.field(i32, "p"), s = prog.field(i32, "s"), q = prog.field(i32, "q");
  SNode& blocks = prog.root().pointer(ij, kBlocks);
  SNode& cells = blocks.dense(ij, kB);
  cells.place({p}, {0, 0});
  cells.place({s}, {1, 0});
  blocks.dense(ij, kB).place(q);
  Kernel seed = prog.kernel("seed", [&] {
    for_range({kN, kN}, [&](Expr i, Expr j) {
      p(i, j) = i * kN + j;
      s(i + 1, j) = 1000 + i * kN + j;
    });
  });
  Kernel read = prog.kernel("read", [&] { for_each(p, [&](Expr i, Expr j) { q(i, j) = s(i + 1, j) + p(i + 1, j); }); });
  seed();
  read();
  auto wrap = [](int v) { return (v / kB) % kBlocks * kB + v % kB; };  // (indices here are not negative)
  const std::vector<int32_t> got = q.to_vector<int32_t>();
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j)
      ASSERT_EQ(got[static_cast<size_t>(i * kN + j)], 1000 + i * kN + j + wrap(i + 1) * kN + j)
          << "cell (" << i << ", " << j << ")";
}

// A struct-for over a pointer visits exactly its active cells: a pointer
// under a dense level (every container's cells share one pool), after some
// of its cells were deactivated earlier in the same kernel (gc runs before
// the loop) and after others were made again in later rounds (freed pool
// entries taken again). Against a model of the active blocks. The loop
// walks the pool's in-use bits (SparseRuntime::for_pool_entries), not
// every slot.
TEST_P(SparseMore, AStructForOverAPointerVisitsExactlyItsActiveCells) {
  constexpr int kOuter = 3, kInner = 5, kSide = kOuter * kInner;  // blocks per axis
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& blocks = prog.root().dense(ij, kOuter).pointer(ij, kInner);
  blocks.dense(ij, 2).place(x);
  Field seen = prog.field(i32, "seen", {kSide, kSide});
  Kernel fill = prog.kernel("fill", {arg(i32, "round")}, [&](Args a) {
    for_range({kSide, kSide}, [&](Expr bi, Expr bj) {
      if_((bi * 7 + bj * 3 + a[0]) % 4 == 0, [&] { x(bi * 2 + 1, bj * 2) = bi + bj; });
    });
  });
  Kernel visit = prog.kernel("visit", {arg(i32, "round")}, [&](Args a) {
    for_each(blocks, [&](Expr bi, Expr bj) { if_((bi + bj + a[0]) % 3 == 0, [&] { deactivate(blocks, {bi, bj}); }); });
    for_each(blocks, [&](Expr bi, Expr bj) { seen(bi, bj) += 1 + x(bi * 2 + 1, bj * 2) * 100; });
  });
  std::vector<int32_t> want(kSide * kSide, 0);
  std::vector<bool> active(kSide * kSide, false);
  for (int round = 0; round < 3; ++round) {
    fill(round);
    visit(round);
    for (int bi = 0; bi < kSide; ++bi)
      for (int bj = 0; bj < kSide; ++bj) {
        const size_t b = static_cast<size_t>(bi * kSide + bj);
        if ((bi * 7 + bj * 3 + round) % 4 == 0) active[b] = true;
        if ((bi + bj + round) % 3 == 0) active[b] = false;
        if (active[b]) want[b] += 1 + (bi + bj) * 100;
      }
    ASSERT_EQ(seen.to_vector<int32_t>(), want) << "round " << round;
    EXPECT_EQ(prog.stats().at(blocks.name()).active_cells, std::count(active.begin(), active.end(), true));
  }
}

TEST_P(SparseMore, PrintInsideASparseStructFor) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  prog.root().pointer(i, 8).place(x);
  std::string out;
  prog.set_print_sink([&](std::string_view t) { out += t; });
  Kernel w = prog.kernel("w", [&] { x(6) = 60; });
  Kernel p = prog.kernel("p", [&] { for_each(x, [&](Expr n) { print("x[", n, "] = ", x(n)); }); });
  w();
  p();
  prog.sync();
  EXPECT_EQ(out, "x[6] = 60\n");
}

// Spares, one at a time and on every backend: the pool's words are set here
// as if losers of races had left 32 entries in the spare bitmap (16 in each
// of its two words, the hint at the second), with the allocation order used
// up. 32 new blocks then take exactly those entries, the last 16 after the
// look wraps round to the first word; one more block finds the pool full;
// and once everything is freed, gc has returned the spares and all 48
// entries activate from the order again (docs/memory.md, "Spares").
TEST_P(SparseMore, NewBlocksTakeTheSparesLosersLeftWhenTheOrderIsUsedUp) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& blocks = prog.root().pointer(i, 64);
  blocks.dense(i, 4).place(x);
  blocks.capacity(48);
  Kernel write = prog.kernel("write", {arg(i32, "first"), arg(i32, "last")}, [&](Args a) {
    // One invocation per block, so that no two race (on a GPU or lavapipe
    // they would, and losers would leave spares of their own).
    for_range(a[0], a[1], [&](Expr b) { x(b * 4) = b + 1; });
  });
  Kernel clear = prog.kernel("clear", [&] { for_range(0, 64, [&](Expr b) { deactivate(blocks, {b}); }); });
  write(0, 16);  // entries 0..15 from the order
  prog.sync();
  detail::ProgramImpl* p = prog.impl();
  const ir::SNodeDecl& s = p->forest().snode(blocks.id());
  const int inst = p->trees.own_instance(s.tree);
  auto word = [&](int64_t at) { return p->context->read_word(inst, at); };
  auto set = [&](int64_t at, uint32_t v) { p->context->write_words(inst, at, 1, &v); };
  ASSERT_EQ(word(s.state_offset + ir::kTickets), 16u);
  // Tickets 16..47 went to losers, who left entries 16..47 as spares.
  set(s.state_offset + ir::kTickets, 48);
  set(s.spare_offset, 0xffff0000u);      // entries 16..31
  set(s.spare_offset + 1, 0x0000ffffu);  // entries 32..47
  set(s.state_offset + ir::kSpareCount, 32);
  set(s.state_offset + ir::kSpareHint, 1);
  EXPECT_EQ(prog.stats().at(blocks.name()).pool_used, 16);
  write(16, 48);
  prog.sync();
  std::set<uint32_t> entries;
  for (int b = 0; b < 64; ++b) {
    const uint32_t v = word(p->forest().tree(s.tree).root_offset + s.component_offset + b);
    if (v != 0) entries.insert(v - 1);
  }
  std::set<uint32_t> all;
  for (uint32_t e = 0; e < 48; ++e) all.insert(e);
  EXPECT_EQ(entries, all) << "each block an entry of its own, the spares among them";
  EXPECT_EQ(word(s.spare_offset), 0u);
  EXPECT_EQ(word(s.spare_offset + 1), 0u);
  EXPECT_EQ(word(s.state_offset + ir::kSpareCount), 0u);
  SNodeStats st = prog.stats().at(blocks.name());
  EXPECT_EQ(st.pool_used, 48);
  EXPECT_EQ(st.active_cells, 48);  // blocks
  std::vector<int32_t> got = x.to_vector<int32_t>();
  for (int c = 0; c < 256; ++c)
    ASSERT_EQ(got[static_cast<size_t>(c)], c % 4 == 0 && c < 192 ? c / 4 + 1 : 0) << "cell " << c;
  EXPECT_THAT(grove::testing::error_of([&] { write(48, 49); prog.sync(); }), ::testing::HasSubstr("ran out of pool memory"));
  clear();
  prog.sync();
  EXPECT_EQ(prog.stats().at(blocks.name()).pool_used, 0);
  write(0, 48);
  prog.sync();
  st = prog.stats().at(blocks.name());
  EXPECT_EQ(st.pool_used, 48);
  EXPECT_EQ(st.active_cells, 48);  // blocks
  got = x.to_vector<int32_t>();
  for (int c = 0; c < 256; ++c)
    ASSERT_EQ(got[static_cast<size_t>(c)], c % 4 == 0 && c < 192 ? c / 4 + 1 : 0) << "cell " << c;
}

}  // namespace
