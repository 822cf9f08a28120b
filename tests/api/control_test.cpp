// Control flow in kernels: if/else, while, break, continue, nested loops.
#include "backend_fixture.h"

using namespace grove;
using grove::testing::error_of;
using ::testing::HasSubstr;

namespace {

class Control : public grove::testing::BackendTest {};
GROVE_ALL_BACKENDS(Control);

TEST_P(Control, IfElseChain) {
  Program prog(config());
  Field r = prog.field(i32, "r", {10});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 10, [&](Expr n) {
      if_(n < 3, [&] { r(n) = 1; })
          .elif_(n < 6, [&] { r(n) = 2; })
          .else_([&] { r(n) = 3; });
    });
  });
  k();
  EXPECT_EQ(r.to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 1, 2, 2, 2, 3, 3, 3, 3}));
}

TEST_P(Control, WhileComputesCollatzLengths) {
  Program prog(config());
  Field steps = prog.field(i32, "steps", {20});
  Kernel k = prog.kernel("collatz", [&] {
    for_range(1, 20, [&](Expr n) {
      Var v = n;
      Var count = 0;
      while_([&] { return v != 1; }, [&] {
        if_(v % 2 == 0, [&] { v = v / 2; }).else_([&] { v = v * 3 + 1; });
        count += 1;
      });
      steps(n) = count;
    });
  });
  k();
  auto collatz = [](int v) {
    int c = 0;
    while (v != 1) {
      v = v % 2 == 0 ? v / 2 : 3 * v + 1;
      ++c;
    }
    return c;
  };
  for (int n = 1; n < 20; ++n) EXPECT_EQ(steps.read<int32_t>({n}), collatz(n)) << n;
}

TEST_P(Control, BreakLeavesTheInnermostLoop) {
  Program prog(config());
  Field first = prog.field(i32, "first", {8});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 8, [&](Expr row) {
      first(row) = -1;
      for_range(0, 100, [&](Expr c) {
        if_(c * row > 20, [&] {
          first(row) = c;
          break_();
        });
      });
    });
  });
  k();
  std::vector<int32_t> want;
  for (int row = 0; row < 8; ++row) want.push_back(row == 0 ? -1 : 20 / row + 1);
  EXPECT_EQ(first.to_vector<int32_t>(), want);
}

TEST_P(Control, ContinueSkipsTheRestOfTheIteration) {
  Program prog(config());
  Field sum = prog.field(i32, "sum", {});
  Kernel k = prog.kernel("k", [&] {
    Var s = 0;
    Var n = 0;
    loop_([&] {
      n += 1;
      if_(n > 20, [&] { break_(); });
      if_(n % 3 == 0, [&] { continue_(); });
      s += n;
    });
    sum() = s;
  });
  k();
  int want = 0;
  for (int n = 1; n <= 20; ++n)
    if (n % 3 != 0) want += n;
  EXPECT_EQ(sum.read<int32_t>(), want);
}

TEST_P(Control, NestedSerialLoopsInsideAStructFor) {
  Program prog(config());
  Field x = prog.field(i32, "x", {5});
  Kernel k = prog.kernel("k", [&] {
    for_each(x, [&](Expr i) {
      Var acc = 0;
      for_range(0, i + 1, [&](Expr a) { for_range(0, a, [&](Expr) { acc += 1; }); });
      x(i) = acc;
    });
  });
  k();
  EXPECT_EQ(x.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 3, 6, 10}));
}

// Updates at a shape's own point (rows longer than the CPU's 4096-point
// piece, and a 3-axis shape) need no atomics, and demote_atomics makes them
// plain loads and stores (tests/ir/demote_atomics_test.cpp): the values
// are those of a C++ loop, however the iterations are spread.
TEST_P(Control, UpdatesAtAShapesOwnPointAddUp) {
  Program prog(config());
  Field x = prog.field(i32, "x", {6, 5000});
  Field v = prog.field(f32, "v", {3, 4, 5});
  Kernel k = prog.kernel("k", [&] {
    for_range({6, 5000}, [&](Expr i, Expr j) {
      x(i, j) += i * 7 + j;
      x(i, j) += 1;
    });
    for_range({{1, 3}, 4, 5}, [&](Expr i, Expr j, Expr l) { v(i, j, l) += cast(f32, i * 100 + j * 10 + l); });
  });
  k();
  k();
  std::vector<int32_t> want(6 * 5000);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 5000; ++j) want[static_cast<size_t>(i * 5000 + j)] = 2 * (i * 7 + j + 1);
  EXPECT_EQ(x.to_vector<int32_t>(), want);
  std::vector<float> vw(3 * 4 * 5, 0.0f);
  for (int i = 1; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 5; ++l) vw[static_cast<size_t>((i * 4 + j) * 5 + l)] = 2.0f * static_cast<float>(i * 100 + j * 10 + l);
  EXPECT_EQ(v.to_vector<float>(), vw);
}

// for_range over a shape (Taichi's ndrange) visits every point once, the
// last axis fastest, with begins, a last axis that is no multiple of the
// CPU's row piece, bounds from arguments, an empty axis, and nested inside
// another loop; a C++ loop over the same shape is the model.
TEST_P(Control, RangeOverAShapeVisitsEveryPointOnce) {
  Program prog(config());
  Field hits = prog.field(i32, "hits", {6, 300});
  Field cube = prog.field(i64, "cube", {3, 4, 5});
  Field count = prog.field(i32, "count", {});
  Kernel k = prog.kernel("k", {arg(i32, "lo"), arg(i32, "hi")}, [&](Args a) {
    for_range({{1, 6}, {a[0], a[1]}}, [&](Expr i, Expr j) {
      if_(j == 7, [&] { continue_(); });
      atomic_add(hits(i, j), i * 1000 + j);
    });
    for_range({3, 4, 5}, [&](Indices I) { cube(I) = cast(i64, I[0] * 100 + I[1] * 10 + I[2]); });
    for_range({{0, 3}, {5, 2}}, [&](Expr, Expr) { atomic_add(count(), 1); });  // no points
    for_range(0, 2, [&](Expr r) {
      for_range({2, 3}, [&](Expr i, Expr j) { atomic_add(count(), r * 100 + i * 10 + j + 1); });
    });
  });
  k(3, 290);
  std::vector<int32_t> want(6 * 300, 0);
  for (int i = 1; i < 6; ++i)
    for (int j = 3; j < 290; ++j)
      if (j != 7) want[static_cast<size_t>(i * 300 + j)] += i * 1000 + j;
  EXPECT_EQ(hits.to_vector<int32_t>(), want);
  std::vector<int64_t> cubes;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 5; ++l) cubes.push_back(i * 100 + j * 10 + l);
  EXPECT_EQ(cube.to_vector<int64_t>(), cubes);
  int32_t total = 0;
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) total += r * 100 + i * 10 + j + 1;
  EXPECT_EQ(count.read<int32_t>(), total);
  // As in a top-level for_range, a point cannot stop the others.
  EXPECT_THAT(error_of([&] {
                prog.kernel("b", [&] { for_range({2, 2}, [&](Expr, Expr) { break_(); }); })();
              }),
              HasSubstr("break_() directly inside a parallel loop"));
  EXPECT_THAT(error_of([&] {
                prog.kernel("c", [&] { for_range({2, 2}, [&](Expr) {}); })();
              }),
              HasSubstr("for_range over 2 axes with a body taking 1 indices"));
}

// A loop counts in i32 whatever its bounds' type: 64-bit literals and
// arguments give an i32 index, and a constant bound past i32 is refused by
// name rather than cut to 32 bits (it was: 2^40 ran as 0).
TEST_P(Control, LoopIndicesAreI32AndConstantBoundsMustFit) {
  Program prog(config());
  Field out = prog.field(i64, "out", {8});
  std::vector<DataType> types;
  Kernel k = prog.kernel("k", {arg(i32, "n"), arg(i64, "m")}, [&](Args a) {
    for_range(int64_t{0}, int64_t{2}, [&](Expr i) { types.push_back(i.type()); out(i) = cast(i64, i) + 1; });
    for_range(int64_t{2}, a[0], [&](Expr i) { types.push_back(i.type()); out(i) = cast(i64, i) * 10; });
    for_range(0, cast(i32, a[1]), [&](Expr i) { types.push_back(i.type()); if_(i == 7, [&] { out(i) = i; }); });
    for_range({{int64_t{0}, int64_t{1}}, {int64_t{0}, a[0]}}, [&](Expr i, Expr j) {
      types.push_back(i.type());
      types.push_back(j.type());
    });
  });
  k(5, int64_t{8});
  EXPECT_EQ(types, (std::vector<DataType>{i32, i32, i32, i32, i32}));
  EXPECT_EQ(out.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 20, 30, 40, 0, 0, 7}));
  EXPECT_THAT(error_of([&] {
                prog.kernel("big", [&] { for_range(int64_t{1} << 40, (int64_t{1} << 40) + 1, [&](Expr) {}); })();
              }),
              HasSubstr("for_range bound 1099511627776 (i64) is out of the range of the loop's index, which is i32"));
  EXPECT_THAT(error_of([&] { prog.kernel("huge", [&] { for_range({65536, 65536, 65536, 2}, [&](Expr, Expr, Expr, Expr) {}); })(); }),
              HasSubstr("more than 2^31 - 1 iterations"));
  // A bound known only at run time whose type holds values past i32 would
  // wrap (2^32 + 5 ran 5 iterations): the conversion is written by the user.
  for (DataType t : {i64, u64, u32}) {
    EXPECT_THAT(error_of([&] {
                  prog.kernel("wide_" + std::string(type_name(t)), {arg(t, "n")},
                              [&](Args a) { for_range(0, a[0], [&](Expr) {}); })(1);
                }),
                AllOf(HasSubstr("kernel 'wide_" + std::string(type_name(t)) + "'"), HasSubstr("for_range bound of type " + std::string(type_name(t))),
                      HasSubstr("cast(i32, bound)")));
  }
}

TEST_P(Control, RangeBoundsFromArguments) {
  Program prog(config());
  Field x = prog.field(i32, "x", {10});
  Kernel k = prog.kernel("k", {arg(i32, "lo"), arg(i32, "hi")}, [&](Args a) {
    for_range(a[0], a[1], [&](Expr n) { x(n) += 1; });
  });
  k(2, 5);
  k(4, 10);
  k(7, 3);  // empty
  EXPECT_EQ(x.to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 1, 1, 2, 1, 1, 1, 1, 1}));
}

TEST_P(Control, ConditionOfAnIntegerType) {
  Program prog(config());
  Field x = prog.field(i32, "x", {4});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 4, [&](Expr n) { if_(n & 1, [&] { x(n) = 1; }).else_([&] { x(n) = 2; }); });
  });
  k();
  EXPECT_EQ(x.to_vector<int32_t>(), (std::vector<int32_t>{2, 1, 2, 1}));
}

TEST_P(Control, SequentialTopLevelLoopsSeeEachOthersWrites) {
  Program prog(config());
  Field a = prog.field(i32, "a", {16});
  Field b = prog.field(i32, "b", {16});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 16, [&](Expr n) { a(n) = n * 2; });
    for_range(0, 16, [&](Expr n) { b(n) = a(15 - n) + 1; });
  });
  k();
  EXPECT_EQ(b.read<int32_t>({0}), 31);
  EXPECT_EQ(b.read<int32_t>({15}), 1);
}

}  // namespace
