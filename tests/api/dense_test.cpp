// Dense fields: layout, indexing, struct-for and host access.
#include <numeric>

#include "backend_fixture.h"

using namespace grove;

namespace {

class Dense : public grove::testing::BackendTest {};
GROVE_ALL_BACKENDS(Dense);

TEST_P(Dense, RangeForWritesEveryElement) {
  Program prog(config());
  Field x = prog.field(i32, "x", {100});
  Kernel k = prog.kernel("fill", [&] { for_range(0, 100, [&](Expr n) { x(n) = n * n; }); });
  k();
  std::vector<int32_t> v = x.to_vector<int32_t>();
  for (int n = 0; n < 100; ++n) EXPECT_EQ(v[static_cast<size_t>(n)], n * n);
}

TEST_P(Dense, TwoDimensionalFieldWithArgument) {
  Program prog(config());
  Field img = prog.field(f32, {64, 32});
  Kernel paint = prog.kernel("paint", {arg(f32, "value")}, [&](Args a) {
    for_range(0, 64, [&](Expr i) {
      for_range(0, 32, [&](Expr j) { img(i, j) = a[0] + cast(f32, i * 100 + j); });
    });
  });
  paint(0.5f);
  EXPECT_FLOAT_EQ(img.read<float>({3, 7}), 307.5f);
  EXPECT_FLOAT_EQ(img.read<float>({63, 31}), 6331.5f);
  paint(2.0f);
  EXPECT_FLOAT_EQ(img.read<float>({0, 0}), 2.0f);
}

TEST_P(Dense, NestedDenseMapsGlobalIndices) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  prog.root().dense(ij, {4, 4}).dense(ij, {8, 8}).place(x);
  EXPECT_EQ(x.shape(), (Shape{32, 32}));
  Kernel k = prog.kernel("k", [&] {
    for_each(x, [&](Expr i, Expr j) { x(i, j) = i * 1000 + j; });
  });
  k();
  for (int64_t i : {0, 7, 8, 31})
    for (int64_t j : {0, 9, 30}) EXPECT_EQ(x.read<int32_t>({i, j}), i * 1000 + j);
  // A whole copy is row-major although the words are blocked (8 x 8
  // blocks: a row's elements are not one run of memory), and a field
  // of one block is (one copy of the words, into a new vector or a kept one).
  std::vector<int32_t> want;
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 32; ++j) want.push_back(i * 1000 + j);
  EXPECT_EQ(x.to_vector<int32_t>(), want);
  Field y = prog.field(i32, "y", {32, 32});
  Kernel copy = prog.kernel("copy", [&] { for_each(y, [&](Expr i, Expr j) { y(i, j) = x(i, j); }); });
  copy();
  EXPECT_EQ(y.to_vector<int32_t>(), want);
  std::vector<int32_t> kept(5, -1);
  y.to_vector(kept);
  EXPECT_EQ(kept, want);
  std::vector<int64_t> wide = y.to_vector<int64_t>();  // another type: converted, not copied
  EXPECT_EQ(wide, std::vector<int64_t>(want.begin(), want.end()));
}

TEST_P(Dense, NonPowerOfTwoExtentsVisitEveryCellOnce) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  Field count = prog.field(i32, "count", {});
  Field sum = prog.field(i64, "sum", {});
  prog.root().dense(ij, {7, 3}).dense(ij, {3, 5}).place(x);
  ASSERT_EQ(x.shape(), (Shape{21, 15}));
  Kernel k = prog.kernel("visit", [&] {
    for_each(x, [&](Expr i, Expr j) {
      atomic_add(count(), 1);
      atomic_add(sum(), cast(i64, i * 15 + j));
      x(i, j) += 1;
    });
  });
  k();
  EXPECT_EQ(count.read<int32_t>(), 21 * 15);
  EXPECT_EQ(sum.read<int64_t>(), int64_t{21 * 15} * (21 * 15 - 1) / 2);
  for (int32_t v : x.to_vector<int32_t>()) ASSERT_EQ(v, 1);
}

TEST_P(Dense, SeveralFieldsPerCellStayIndependent) {
  Program prog(config());
  Field a = prog.field(f32, "a"), b = prog.field(i32, "b"), c = prog.field(f64, "c");
  prog.root().dense(i, 10).place(a, b, c);
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 10, [&](Expr n) {
      a(n) = cast(f32, n) * 0.5f;
      b(n) = -n;
      c(n) = cast(f64, n) * Expr::constant(f64, 0.1);
    });
  });
  k();
  for (int n = 0; n < 10; ++n) {
    EXPECT_FLOAT_EQ(a.read<float>({n}), n * 0.5f);
    EXPECT_EQ(b.read<int32_t>({n}), -n);
    EXPECT_DOUBLE_EQ(c.read<double>({n}), n * 0.1);
  }
}

TEST_P(Dense, ZeroDimensionalField) {
  Program prog(config());
  Field total = prog.field(f32, "total", {});
  EXPECT_EQ(total.ndim(), 0);
  Kernel k = prog.kernel("k", [&] { for_range(0, 10, [&](Expr n) { total() += cast(f32, n); }); });
  total.write({}, 1.0f);
  k();
  EXPECT_FLOAT_EQ(total.read<float>(), 46.0f);
}

TEST_P(Dense, ThreeAndEightAxes) {
  Program prog(config());
  Field x3 = prog.field(i32, "x3", {3, 4, 5});
  Field x8 = prog.field(i32, "x8", {2, 1, 3, 1, 2, 1, 1, 2});
  Kernel k = prog.kernel("k", [&] {
    for_each(x3, [&](Indices I) { x3(I) = I[0] * 100 + I[1] * 10 + I[2]; });
    for_each(x8, [&](Indices I) {
      Expr v = I[0];
      for (size_t a = 1; a < I.size(); ++a) v = v * 10 + I[a];
      x8(I) = v;
    });
  });
  k();
  EXPECT_EQ(x3.read<int32_t>({2, 3, 4}), 234);
  EXPECT_EQ(x3.read<int32_t>({1, 0, 2}), 102);
  EXPECT_EQ(x8.read<int32_t>({1, 0, 2, 0, 1, 0, 0, 1}), 10201001);
  std::vector<int32_t> all = x8.to_vector<int32_t>();
  ASSERT_EQ(all.size(), 24u);
  EXPECT_EQ(all[1], 1);  // row-major: last axis fastest
}

TEST_P(Dense, HostVectorRoundTripAndFill) {
  Program prog(config());
  Field x = prog.field(f32, "x", {4, 6});
  std::vector<float> in(24);
  std::iota(in.begin(), in.end(), 1.0f);
  x.from_vector(in);
  EXPECT_EQ(x.to_vector<float>(), in);
  EXPECT_FLOAT_EQ(x.read<float>({1, 0}), 7.0f);
  x.fill(2.5f);
  for (float v : x.to_vector<float>()) EXPECT_FLOAT_EQ(v, 2.5f);
  std::vector<double> as_double = x.to_vector<double>();
  EXPECT_DOUBLE_EQ(as_double[3], 2.5);
}

// Host writes of a whole field (from_vector, fill) leave the fields that
// share its cells alone, down to the bytes of narrow types packed in a word.
TEST_P(Dense, HostWritesOfAWholeFieldLeaveItsNeighboursAlone) {
  Program prog(config());
  Field a = prog.field(f32, "a"), b = prog.field(i32, "b"), c = prog.field(f64, "c");
  Field n8 = prog.field(u8, "n8"), m8 = prog.field(i8, "m8");
  prog.root().dense(ij, {5, 7}).place(a, n8, b, m8, c);
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 5, [&](Expr i) {
      for_range(0, 7, [&](Expr j) {
        a(i, j) = cast(f32, i * 10 + j);
        b(i, j) = -1;
        c(i, j) = Expr::constant(f64, 0.5);
        n8(i, j) = i * 7 + j + 100;
        m8(i, j) = -(i * 7 + j);
      });
    });
  });
  k();
  std::vector<int32_t> bs(35);
  std::iota(bs.begin(), bs.end(), 1000);
  b.from_vector(bs);
  c.fill(-2.25);
  std::vector<uint8_t> ns(35);
  for (int e = 0; e < 35; ++e) ns[static_cast<size_t>(e)] = static_cast<uint8_t>(200 + e);
  n8.from_vector(ns);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 7; ++j) {
      const int e = i * 7 + j;
      EXPECT_EQ(a.read<float>({i, j}), static_cast<float>(i * 10 + j)) << i << "," << j;
      EXPECT_EQ(b.read<int32_t>({i, j}), 1000 + e);
      EXPECT_EQ(c.read<double>({i, j}), -2.25);
      EXPECT_EQ(n8.read<uint32_t>({i, j}), static_cast<uint32_t>(200 + e));
      EXPECT_EQ(m8.read<int32_t>({i, j}), -e);
    }
}

TEST_P(Dense, VectorFieldsAreScalarised) {
  Program prog(config());
  Field v = prog.vector_field(3, f32, "v", {8});
  Field len = prog.field(f32, "len", {8});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 8, [&](Expr n) {
      Expr f = cast(f32, n);
      v(n) = Vec{f, f * 2.0f, Expr(2.0f)};
      Vec w = v(n).vec();
      len(n) = dot(w, w);
      v(n) += Vec{1.0f, 1.0f, 1.0f};
    });
  });
  k();
  EXPECT_FLOAT_EQ(len.read<float>({3}), 9.0f + 36.0f + 4.0f);
  std::vector<float> all = v.to_vector<float>();
  ASSERT_EQ(all.size(), 24u);
  EXPECT_FLOAT_EQ(all[3 * 3 + 0], 4.0f);
  EXPECT_FLOAT_EQ(all[3 * 3 + 1], 7.0f);
  EXPECT_FLOAT_EQ(all[3 * 3 + 2], 3.0f);
  EXPECT_FLOAT_EQ(v[1].read<float>({2}), 5.0f);
}

// Host copies of vector and matrix fields move every component at once
// where they lie side by side in each cell (FieldWalk::interleaved): the
// values land where kernels read them, of 32- and 64-bit types, converted
// or not, in two dimensions and under a pointer, and a fill reaches every
// component. The kernel sums each element's components with weights, the
// test the same on the host.
TEST_P(Dense, HostCopiesOfVectorAndMatrixFieldsMoveEveryComponent) {
  Program prog(config());
  Field v = prog.vector_field(3, f64, "v", {5, 7});
  Field w = prog.vector_field(2, i32, "w", {6});
  Field m = prog.matrix_field(2, 2, f32, "m", {4});
  Field s = prog.vector_field(3, f32, "s");
  prog.root().pointer(i, 4).dense(i, 8).place(s);
  Field vsum = prog.field(f64, "vsum", {5, 7}), wsum = prog.field(i32, "wsum", {6});
  Field msum = prog.field(f32, "msum", {4}), ssum = prog.field(f32, "ssum", {32});
  Kernel k = prog.kernel("k", [&] {
    for_range({5, 7}, [&](Expr a, Expr b) {
      vsum(a, b) = v(a, b)[0] + v(a, b)[1] * Expr::constant(f64, 10.0) + v(a, b)[2] * Expr::constant(f64, 100.0);
    });
    for_range(0, 6, [&](Expr n) { wsum(n) = w(n)[0] + w(n)[1] * 1000; });
    for_range(0, 4, [&](Expr n) { msum(n) = m(n)(0, 0) + m(n)(0, 1) * 2.0f + m(n)(1, 0) * 4.0f + m(n)(1, 1) * 8.0f; });
    for_each(s, [&](Expr n) { ssum(n) = s(n)[0] + s(n)[1] * 10.0f + s(n)[2] * 100.0f; });
  });
  std::vector<double> vin(5 * 7 * 3);
  for (size_t e = 0; e < vin.size(); ++e) vin[e] = 0.5 * static_cast<double>(e) - 3.0;
  v.from_vector(vin);
  std::vector<int64_t> win(6 * 2);  // converted to i32 on the way in
  for (size_t e = 0; e < win.size(); ++e) win[e] = static_cast<int64_t>(e) * 3 - 5;
  w.from_vector(win);
  m.fill(1.5f);
  std::vector<float> sin(32 * 3);
  for (size_t e = 0; e < sin.size(); ++e) sin[e] = static_cast<float>(e % 7) - 2.0f;
  s.from_vector(sin);
  k();
  for (int e = 0; e < 35; ++e) {
    const double* x = &vin[static_cast<size_t>(e) * 3];
    EXPECT_DOUBLE_EQ(vsum.read<double>({e / 7, e % 7}), x[0] + x[1] * 10.0 + x[2] * 100.0) << "v element " << e;
  }
  for (int e = 0; e < 6; ++e)
    EXPECT_EQ(wsum.read<int32_t>({e}), win[static_cast<size_t>(2 * e)] + win[static_cast<size_t>(2 * e + 1)] * 1000);
  for (int e = 0; e < 4; ++e) EXPECT_FLOAT_EQ(msum.read<float>({e}), 1.5f * 15.0f);
  for (int e = 0; e < 32; ++e) {
    const float* x = &sin[static_cast<size_t>(e) * 3];
    EXPECT_FLOAT_EQ(ssum.read<float>({e}), x[0] + x[1] * 10.0f + x[2] * 100.0f) << "s element " << e;
  }
  EXPECT_EQ(v.to_vector<double>(), vin);
  EXPECT_EQ(w.to_vector<int64_t>(), win);
  EXPECT_EQ(m.to_vector<float>(), std::vector<float>(16, 1.5f));
  EXPECT_EQ(s.to_vector<float>(), sin);
  const std::vector<double> s_as_f64 = s.to_vector<double>();  // converted on the way out
  for (size_t e = 0; e < sin.size(); ++e) EXPECT_EQ(s_as_f64[e], static_cast<double>(sin[e])) << e;
}

// What an MPM port writes (issue 31): a scalar with a vector (1.5 - fx),
// element updates by *=, /= and -= (a vector's too), checked against the
// same arithmetic on the host. All values are exact in f32.
TEST_P(Dense, ScalarsWithVectorsAndElementUpdates) {
  Program prog(config());
  Field v = prog.vector_field(2, f32, "v", {8});
  Field j = prog.field(f32, "j", {8});
  Field c = prog.field(i32, "c", {8});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 8, [&](Expr n) {
      const Expr f = cast(f32, n);
      const Vec fx{f * 0.25f, f * 0.5f};
      const Vec w = 1.5f - fx;             // {1.5 - n/4, 1.5 - n/2}
      v(n) = (w + 0.5f) * 2.0f - 1.0f;     // {3 - n/2, 3 - n}
      v(n) -= Vec{1.0f, 2.0f};             // {2 - n/2, 1 - n}
      j(n) = f + 1.0f;
      j(n) *= 3.0f;                        // 3n + 3
      j(n) /= 2.0f;                        // 1.5n + 1.5
      c(n) = n * 7 + 1;
      c(n) /= 2;                           // integer division
      c(n) *= -3;
      c(n) -= 4;
      v(n)[0] = v(n)[0] + (8.0f / Vec{f + 1.0f, 2.0f})[1] - (fx - 1.0f)[0];  // + 4 - (n/4 - 1)
    });
  });
  k();
  for (int n = 0; n < 8; ++n) {
    EXPECT_EQ(v[0].read<float>({n}), (2.0f - n * 0.5f) + 4.0f - (n * 0.25f - 1.0f)) << n;
    EXPECT_EQ(v[1].read<float>({n}), 1.0f - static_cast<float>(n)) << n;
    EXPECT_EQ(j.read<float>({n}), (static_cast<float>(n) + 1.0f) * 3.0f / 2.0f) << n;
    EXPECT_EQ(c.read<int32_t>({n}), (n * 7 + 1) / 2 * -3 - 4) << n;
  }
}

// The issue's `x(p) += dt * v(p)`: at the parallel loop's own index it is
// a load and a store, not an atomic (Taichi's rule; ir::demote_atomics),
// and the values are the same.
TEST_P(Dense, UpdatesAtTheLoopsOwnIndexAreNotAtomics) {
  Program prog(config());
  Field x = prog.vector_field(2, f32, "x", {64});
  Field v = prog.vector_field(2, f32, "v", {64});
  for (int p = 0; p < 64; ++p) {
    x[0].write({p}, static_cast<float>(p));
    v[1].write({p}, 2.0f);
  }
  Kernel k = prog.kernel("advect", [&] { for_range(0, 64, [&](Expr p) { x(p) += 0.5f * v(p).vec(); }); });
  k();
  EXPECT_EQ(k.ir("demote_atomics").find("field_atomic"), std::string::npos) << k.ir("demote_atomics");
  for (int p = 0; p < 64; ++p) {
    EXPECT_EQ(x[0].read<float>({p}), static_cast<float>(p));
    EXPECT_EQ(x[1].read<float>({p}), 1.0f);
  }
}

// The same over a shape of constant extents, however the backend lays it
// out (rows cut into pieces on a CPU, a thread a point, a grid on a GPU):
// the point's indices come from the loop's own index (quotients and
// remainders by constants, computed unsigned), so the update is a load
// and a store. (With an extent from an argument the divisions are by a
// value the pass cannot know is not 0: the updates stay atomic.)
TEST_P(Dense, UpdatesAtAShapesOwnPointAreNotAtomics) {
  Program prog(config());
  Field x = prog.field(f32, "x", {3, 5000});
  Field y = prog.field(i32, "y", {2, 3, 4100});
  Kernel k2 = prog.kernel("k2", {arg(i32, "unused")}, [&](Args) {
    for_range({{0, 3}, {1, 4999}}, [&](Expr i, Expr j) { x(i, j) += cast(f32, i * 10000 + j); });
  });
  Kernel k3 = prog.kernel("k3", [&] {
    for_range({2, 3, 4100}, [&](Expr i, Expr j, Expr l) { y(i, j, l) += i * 100000 + j * 10000 + l; });
  });
  k2(4999);
  k2(4999);
  k3();
  for (Kernel* k : {&k2, &k3}) {
    EXPECT_EQ(k->ir("demote_atomics").find("field_atomic"), std::string::npos) << k->ir("demote_atomics");
  }
  const std::vector<float> xs = x.to_vector<float>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5000; ++j)
      ASSERT_EQ(xs[static_cast<size_t>(i * 5000 + j)], j == 0 || j == 4999 ? 0.0f : 2.0f * static_cast<float>(i * 10000 + j))
          << i << ", " << j;
  const std::vector<int32_t> ys = y.to_vector<int32_t>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int l = 0; l < 4100; ++l)
        ASSERT_EQ(ys[static_cast<size_t>((i * 3 + j) * 4100 + l)], i * 100000 + j * 10000 + l) << i << j << l;
}

TEST_P(Dense, MatrixFieldComponents) {
  Program prog(config());
  Field m = prog.matrix_field(2, 3, i32, "m", {4});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 4, [&](Expr n) {
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 3; ++c) m(n)(r, c) = n * 100 + r * 10 + c;
    });
  });
  k();
  EXPECT_EQ(m.components(), 6);
  EXPECT_EQ(m[1 * 3 + 2].read<int32_t>({3}), 312);
  EXPECT_EQ(m.to_vector<int32_t>()[6 + 4], 111);
}

TEST_P(Dense, SixtyFourBitValuesNextToThirtyTwoBit) {
  Program prog(config());
  Field a = prog.field(i32, "a"), big = prog.field(i64, "big"), d = prog.field(f64, "d");
  prog.root().dense(i, 5).place(a, big, d);
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 5, [&](Expr n) {
      a(n) = n;
      big(n) = cast(i64, n) * Expr(int64_t{1} << 40) + 7;
      d(n) = cast(f64, n) + Expr::constant(f64, 1e-12);
    });
  });
  k();
  EXPECT_EQ(big.read<int64_t>({4}), (int64_t{4} << 40) + 7);
  EXPECT_EQ(a.read<int32_t>({4}), 4);
  EXPECT_DOUBLE_EQ(d.read<double>({2}), 2.0 + 1e-12);
}

TEST_P(Dense, StructForWithGroupedIndicesReadsNeighbours) {
  Program prog(config());
  Field src = prog.field(f32, "src", {16, 16});
  Field dst = prog.field(f32, "dst", {16, 16});
  std::vector<float> in(256);
  for (size_t n = 0; n < in.size(); ++n) in[n] = static_cast<float>(n % 7);
  src.from_vector(in);
  Kernel blur = prog.kernel("blur", [&] {
    for_each(dst, [&](Indices I) {
      Expr i = I[0], j = I[1];
      Var acc = 0.0f;
      if_(i > 0 && i < 15 && j > 0 && j < 15, [&] {
        acc = src(i - 1, j) + src(i + 1, j) + src(i, j - 1) + src(i, j + 1);
      });
      dst(I) = acc;
    });
  });
  blur();
  auto at = [&](int i, int j) { return in[static_cast<size_t>(i * 16 + j)]; };
  EXPECT_FLOAT_EQ(dst.read<float>({5, 9}), at(4, 9) + at(6, 9) + at(5, 8) + at(5, 10));
  EXPECT_FLOAT_EQ(dst.read<float>({0, 9}), 0.0f);
}

}  // namespace
