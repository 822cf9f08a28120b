// Taichi parity for layouts and loops: programs Taichi users write every
// day, with the values Taichi gives (computed here by hand or by a plain C++
// model), on every backend.
#include <numeric>
#include <set>
#include <vector>

#include "backend_fixture.h"

using namespace grove;
using grove::testing::error_of;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

class Parity : public grove::testing::BackendTest {};
GROVE_ALL_BACKENDS(Parity);

// ---- deactivate_all on a whole tree ---------------------------------------------------

TEST_P(Parity, DeactivateAllOnTheRootDeactivatesEverySparseNodeOfTheTree) {
  Program prog(config());
  Field a = prog.field(i32, "a"), d = prog.field(i32, "d"), c = prog.field(i32, "c");
  SNode& root = prog.root();
  SNode& ptr = root.pointer(i, 4);
  SNode& bits = ptr.bitmasked(i, 4);
  bits.place(a);
  SNode& lists = root.dense(i, 2).dynamic(j, 8, 4);
  lists.place(d);
  root.dense(i, 16).place(c);
  Field lengths = prog.field(i32, "lengths", {2});
  Kernel fill = prog.kernel("fill", [&] {
    for_range(0, 16, [&](Expr n) {
      a(n) = n + 1;
      c(n) = n + 100;
    });
    for_range(0, 10, [&](Expr n) { append(lists, {n % 2}, n); });
  });
  Kernel measure = prog.kernel("measure", [&] { for_range(0, 2, [&](Expr n) { lengths(n) = length(lists, {n}); }); });
  fill();
  measure();
  EXPECT_EQ(lengths.to_vector<int>(), (std::vector<int>{5, 5}));
  root.deactivate_all();
  measure();
  EXPECT_EQ(lengths.to_vector<int>(), (std::vector<int>{0, 0}));
  EXPECT_EQ(a.to_vector<int>(), std::vector<int>(16, 0));
  std::vector<int> dense(16);
  std::iota(dense.begin(), dense.end(), 100);
  EXPECT_EQ(c.to_vector<int>(), dense);  // dense data is not sparse: it stays, as in Taichi
  Stats s = prog.stats();
  EXPECT_EQ(s.at(ptr.name()).pool_used, 0);
  EXPECT_EQ(s.at(bits.name()).active_cells, 0);
  EXPECT_EQ(s.at(lists.name()).pool_used, 0);
  fill();  // and everything can be activated again
  measure();
  EXPECT_EQ(lengths.to_vector<int>(), (std::vector<int>{5, 5}));
  EXPECT_EQ(a.read<int>({15}), 16);
}

TEST_P(Parity, DeactivateAllOfADenseOnlyTreeChangesNothing) {
  Program prog(config());
  SNode& root = prog.root();
  Field x = prog.field(f32, "x");
  root.dense(i, 8).place(x);
  x.fill(2.5f);
  root.deactivate_all();
  prog.deactivate_all();  // every tree (Taichi's ti.deactivate_all_snodes())
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(8, 2.5f));
}

TEST_P(Parity, ProgramDeactivateAllReachesEveryTree) {
  Program prog(config());
  Field x = prog.field(i32, "x"), y = prog.field(i32, "y");
  prog.root().pointer(i, 8).place(x);
  x.write({3}, 1);  // freezes the first tree
  prog.root().bitmasked(i, 8).place(y);
  y.write({5}, 2);
  prog.deactivate_all();
  EXPECT_EQ(x.read<int>({3}), 0);
  EXPECT_EQ(y.read<int>({5}), 0);
}

// ---- sparse nodes directly under the root ---------------------------------------------

TEST_P(Parity, SparseNodesDirectlyUnderTheRootDeactivateAll) {
  Program prog(config());
  Field d = prog.field(i32, "d"), p = prog.field(i32, "p"), b = prog.field(i32, "b");
  SNode& list = prog.root().dynamic(i, 64, 8);
  list.place(d);
  Field len = prog.field(i32, "len", {});
  SNode& ptr = prog.root().pointer(i, 8);
  ptr.place(p);
  SNode& bits = prog.root().bitmasked(i, 8);
  bits.place(b);
  Kernel fill = prog.kernel("fill", [&] {
    for_range(0, 10, [&](Expr n) { append(list, {}, n * 2); });
    for_range(0, 8, [&](Expr n) {
      p(n) = n + 1;
      b(n) = n + 2;
    });
  });
  Kernel measure = prog.kernel("measure", [&] { len() = length(list, {}); });
  fill();
  measure();
  EXPECT_EQ(len.read<int>(), 10);
  list.deactivate_all();
  ptr.deactivate_all();
  bits.deactivate_all();
  measure();
  EXPECT_EQ(len.read<int>(), 0);
  EXPECT_EQ(p.to_vector<int>(), std::vector<int>(8, 0));
  EXPECT_EQ(b.to_vector<int>(), std::vector<int>(8, 0));
  EXPECT_EQ(prog.stats().at(list.name()).pool_used, 0);
}

// ---- struct-for over any field --------------------------------------------------------

TEST_P(Parity, StructForOverA0DFieldRunsOnce) {
  Program prog(config());
  Field total = prog.field(f32, "total", {});
  Field visits = prog.field(i32, "visits", {});
  total.write({}, 3.0f);
  Kernel k = prog.kernel("k", [&] {
    for_each(total, [&] {
      visits() += 1;
      total() = total() * 2.0f;
    });
  });
  k();
  k();
  EXPECT_EQ(visits.read<int>(), 2);
  EXPECT_EQ(total.read<float>(), 12.0f);
}

TEST_P(Parity, StructForOverFieldsOfSparseNodesUnderTheRoot) {
  Program prog(config());
  Field d = prog.field(i32, "d"), p = prog.field(i32, "p");
  SNode& list = prog.root().dynamic(i, 32, 4);
  list.place(d);
  prog.root().pointer(i, 16).place(p);
  Field sum = prog.field(i32, "sum", {2});
  Kernel fill = prog.kernel("fill", [&] {
    for_range(0, 7, [&](Expr n) { append(list, {}, n + 1); });
    for_range(0, 3, [&](Expr n) { p(n * 5) = 10 * n + 1; });
  });
  Kernel visit = prog.kernel("visit", [&] {
    for_each(d, [&](Expr n) { sum(0) += d(n) * (n + 1); });
    for_each(p, [&](Expr n) { sum(1) += p(n) + n; });
  });
  fill();
  visit();
  // d holds 1..7 in some order: sum over its elements of value * (index + 1).
  std::vector<int> values = d.to_vector<int>();
  int want = 0;
  for (int n = 0; n < 7; ++n) want += values[static_cast<size_t>(n)] * (n + 1);
  EXPECT_EQ(std::set<int>(values.begin(), values.begin() + 7), (std::set<int>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(sum.read<int>({0}), want);
  EXPECT_EQ(sum.read<int>({1}), (1 + 0) + (11 + 5) + (21 + 10));
}

// ---- the axes a field uses (Taichi's rule) --------------------------------------------

TEST_P(Parity, AFieldOnAxisKAloneIsOneDimensional) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  prog.root().dense(k, 100).place(x);
  EXPECT_EQ(x.shape(), (Shape{100}));
  Kernel fill = prog.kernel("fill", [&] { for_range(0, 100, [&](Expr n) { x(n) = n * 3; }); });
  fill();
  EXPECT_EQ(x.read<int>({42}), 126);
  std::vector<int> want(100);
  for (int n = 0; n < 100; ++n) want[static_cast<size_t>(n)] = n * 3;
  EXPECT_EQ(x.to_vector<int>(), want);
  Field sum = prog.field(i32, "sum", {});
  Kernel visit = prog.kernel("visit", [&] { for_each(x, [&](Expr n) { sum() += x(n) - n; }); });
  visit();
  EXPECT_EQ(sum.read<int>(), 2 * (99 * 100 / 2));
}

TEST_P(Parity, AxesIAndKGiveATwoDimensionalField) {
  Program prog(config());
  Field y = prog.field(i32, "y");
  SNode& rows = prog.root().dense(i, 10);
  rows.dense(k, 20).place(y);
  EXPECT_EQ(y.shape(), (Shape{10, 20}));
  EXPECT_EQ(rows.ndim(), 1);
  Kernel fill = prog.kernel("fill", [&] { for_each(y, [&](Expr a, Expr c) { y(a, c) = a * 100 + c; }); });
  fill();
  EXPECT_EQ(y.read<int>({7, 13}), 713);
  std::vector<int> all = y.to_vector<int>();
  for (int a = 0; a < 10; ++a)
    for (int c = 0; c < 20; ++c) EXPECT_EQ(all[static_cast<size_t>(a * 20 + c)], a * 100 + c);
  y.write({2, 19}, -1);
  EXPECT_EQ(y.read<int>({2, 19}), -1);
}

TEST_P(Parity, ADynamicOnAnyAxis) {
  // root.dense(j, 10).dynamic(i, 64): the field's indices are (i, j), the
  // axes in order; a list is named by j alone.
  Program prog(config());
  Field z = prog.field(i32, "z");
  SNode& lists = prog.root().dense(j, 10).dynamic(i, 64, 8);
  lists.place(z);
  EXPECT_EQ(z.shape(), (Shape{64, 10}));
  Field lengths = prog.field(i32, "lengths", {10});
  Field sum = prog.field(i32, "sum", {});
  Kernel fill = prog.kernel("fill", [&] {
    for_range(0, 10, [&](Expr b) {
      Var n = 0;
      while_([&] { return n < b; }, [&] {
        append(lists, {b}, b * 100 + n);
        n += 1;
      });
    });
  });
  Kernel measure = prog.kernel("measure", [&] {
    for_range(0, 10, [&](Expr b) { lengths(b) = length(lists, {b}); });
    for_each(z, [&](Expr n, Expr b) { sum() += z(n, b) - b * 100 - n; });  // every element at its own index
  });
  fill();
  measure();
  std::vector<int> want(10);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(lengths.to_vector<int>(), want);
  EXPECT_EQ(sum.read<int>(), 0);  // every element at its own index
  int total = 0;
  std::vector<int> all = z.to_vector<int>();  // (64, 10) row-major: element n of list b at n * 10 + b
  for (int b = 0; b < 10; ++b)
    for (int n = 0; n < b; ++n) total += all[static_cast<size_t>(n * 10 + b)] - b * 100;
  for (int b = 0; b < 10; ++b) EXPECT_EQ(all[static_cast<size_t>(b * 10 + b)], 0) << "past the length reads 0";
  EXPECT_EQ(total, 0 + 1 + 3 + 6 + 10 + 15 + 21 + 28 + 36);  // each list holds 0..b-1 (in some order)
}

TEST_P(Parity, SNodeOperationsUseTheSameIndices) {
  Program prog(config());
  Field v = prog.field(i32, "v");
  SNode& blocks = prog.root().pointer(k, 8);
  blocks.dense(j, 4).place(v);  // indices (j, k): axis 1, then axis 2
  EXPECT_EQ(v.shape(), (Shape{4, 8}));
  EXPECT_EQ(blocks.ndim(), 1);
  Field flags = prog.field(i32, "flags", {8});
  Kernel k1 = prog.kernel("k1", [&] {
    activate(blocks, {3});
    v(2, 5) = 7;  // block 5
    for_range(0, 8, [&](Expr n) { flags(n) = cast(i32, is_active(blocks, {n})); });
  });
  k1();
  EXPECT_EQ(flags.to_vector<int>(), (std::vector<int>{0, 0, 0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(v.read<int>({2, 5}), 7);
  EXPECT_EQ(prog.stats().at(blocks.name()).active_cells, 2);
}

// ---- continue_ in parallel loops --------------------------------------------------------

TEST_P(Parity, ContinueEndsAnIterationOfAParallelLoop) {
  Program prog(config());
  Field x = prog.field(i32, "x", {30});
  Field count = prog.field(i32, "count", {});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 30, [&](Expr n) {
      if_(n % 3 == 0, [&] { continue_(); });
      x(n) = 1;
    });
    for_each(x, [&](Expr n) {
      if_(x(n) == 0, [&] { continue_(); });
      count() += n;
    });
  });
  k();
  int want = 0;
  for (int n = 0; n < 30; ++n) {
    EXPECT_EQ(x.read<int>({n}), n % 3 == 0 ? 0 : 1) << n;
    if (n % 3 != 0) want += n;
  }
  EXPECT_EQ(count.read<int>(), want);
  Kernel b = prog.kernel("b", [&] { for_range(0, 4, [&](Expr) { break_(); }); });
  EXPECT_THAT(error_of([&] { b(); }), AllOf(HasSubstr("break_()"), HasSubstr("continue_()"), HasSubstr("Taichi")));
}

TEST_P(Parity, ContinueInAParallelLoopThatSums) {
  Program prog(config());
  Field total = prog.field(i32, "total", {});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 100000, [&](Expr n) {
      if_(n % 2 == 1, [&] { continue_(); });
      total() += 1;
    });
  });
  k();
  EXPECT_EQ(total.read<int>(), 50000);
}

// ---- vectors and matrices of any size --------------------------------------------------

TEST_P(Parity, VectorAndMatrixFieldsUpTo64Components) {
  Program prog(config());
  Field v = prog.vector_field(20, f32, "v", {4});
  Field m = prog.matrix_field(8, 8, i32, "m", {2});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 4, [&](Expr n) {
      std::vector<Expr> c;
      for (int d = 0; d < 20; ++d) c.push_back(cast(f32, n * 20 + d));
      v(n) = Vec(c);
    });
    for_range(0, 2, [&](Expr n) {
      for (int r = 0; r < 8; ++r)
        for (int col = 0; col < 8; ++col) m(n)(r, col) = n * 1000 + r * 10 + col;
    });
  });
  k();
  std::vector<float> vs = v.to_vector<float>();
  ASSERT_EQ(vs.size(), 80u);
  for (int e = 0; e < 80; ++e) EXPECT_EQ(vs[static_cast<size_t>(e)], static_cast<float>(e));
  EXPECT_EQ(m[8 * 7 + 3].read<int>({1}), 1073);
  Field norm = prog.field(f32, "norm", {4});
  Kernel n2 = prog.kernel("n2", [&] { for_range(0, 4, [&](Expr n) { norm(n) = norm_sqr(v(n).vec()); }); });
  n2();
  float want = 0;
  for (int d = 0; d < 20; ++d) want += static_cast<float>((20 + d) * (20 + d));
  EXPECT_FLOAT_EQ(norm.read<float>({1}), want);
  EXPECT_THAT(error_of([&] { prog.vector_field(65, f32, "too_long", {4}); }),
              AllOf(HasSubstr("'too_long'"), HasSubstr("64")));
  EXPECT_THAT(error_of([&] { prog.matrix_field(9, 8, f32, "too_big", {4}); }), HasSubstr("'too_big'"));
  Field big = prog.matrix_field(11, 2, f32, "big", {1});  // component names stay distinct past 10 rows
  EXPECT_EQ(big.components(), 22);
}

// ---- a struct element in a dynamic list ---------------------------------------------------

TEST_P(Parity, AppendAStructElement) {
  Program prog(config());
  Field id = prog.field(i32, "id"), weight = prog.field(f32, "weight");
  Field pos = prog.vector_field(3, f32, "pos");
  SNode& particles = prog.root().dense(i, 4).dynamic(j, 64, 8);
  particles.place(id, weight);
  SNode& points = prog.root().dynamic(i, 16, 4);
  points.place(pos);
  Field got = prog.field(i32, "got", {12});
  Field count = prog.field(i32, "count", {4});
  Field check = prog.field(f32, "check", {});
  Kernel fill = prog.kernel("fill", [&] {
    for_range(0, 12, [&](Expr n) { got(n) = append(particles, {n % 4}, {n, cast(f32, n) * 0.5f}); });
    for_range(0, 5, [&](Expr n) { append(points, {}, Vec{cast(f32, n), 1.0f, 2.0f}); });
  });
  Kernel visit = prog.kernel("visit", [&] {
    for_range(0, 4, [&](Expr b) { count(b) = length(particles, {b}); });
    for_each(id, [&](Expr b, Expr n) { check() += weight(b, n) - cast(f32, id(b, n)) * 0.5f; });
    for_each(pos, [&](Expr n) { check() += pos(n)[1] + pos(n)[2] - 3.0f; });
  });
  fill();
  visit();
  EXPECT_EQ(count.to_vector<int>(), (std::vector<int>{3, 3, 3, 3}));
  EXPECT_EQ(check.read<float>(), 0.0f);  // each element's fields were written together
  std::vector<int> indices = got.to_vector<int>();
  for (int b = 0; b < 4; ++b) {
    std::set<int> in_list;
    for (int n = b; n < 12; n += 4) in_list.insert(indices[static_cast<size_t>(n)]);
    EXPECT_EQ(in_list, (std::set<int>{0, 1, 2})) << "list " << b;
  }
  Kernel wrong = prog.kernel("wrong", [&] { append(particles, {0}, 1); });
  EXPECT_THAT(error_of([&] { wrong(); }), AllOf(HasSubstr("'id'"), HasSubstr("'weight'"), HasSubstr("1 value")));
}

// ---- field offsets ------------------------------------------------------------------

TEST_P(Parity, FieldOffsets) {
  Program prog(debug_config());
  Field x = prog.field(i32, "x", {64, 64}, {-32, -32});
  EXPECT_EQ(x.shape(), (Shape{64, 64}));
  Kernel fill = prog.kernel("fill", [&] {
    for_range(-32, 32, [&](Expr a) { for_range(-32, 32, [&](Expr b) { x(a, b) = a * 1000 + b; }); });
  });
  fill();
  EXPECT_EQ(x.read<int>({-32, -32}), -32032);
  EXPECT_EQ(x.read<int>({31, -5}), 30995);
  std::vector<int> all = x.to_vector<int>();  // row-major from the first index
  EXPECT_EQ(all[0], -32032);
  EXPECT_EQ(all[64 * 63 + 63], 31031);
  Field sum = prog.field(i64, "sum", {});
  Kernel visit = prog.kernel("visit", [&] {
    for_each(x, [&](Expr a, Expr b) { sum() += cast(i64, x(a, b) - a * 1000 - b) + 1; });
  });
  visit();
  EXPECT_EQ(sum.read<int64_t>(), 64 * 64);  // indices from the offset
  EXPECT_THAT(error_of([&] { x.read<int>({32, 0}); }), AllOf(HasSubstr("offset (-32, -32)"), HasSubstr("axis 0")));
  Kernel oob = prog.kernel("oob", {arg(i32, "a")}, [&](Args args) { x(args[0], 0) = 1; });
  EXPECT_THAT(error_of([&] { oob(32); }), AllOf(HasSubstr("kernel 'oob'"), HasSubstr("offset (-32, -32)")));
  oob(-32);
  EXPECT_EQ(x.read<int>({-32, 0}), 1);
}

TEST_P(Parity, OffsetsOnASparsePlace) {
  Program prog(config());
  Field y = prog.field(f32, "y");
  SNode& blocks = prog.root().pointer(i, 8);
  blocks.dense(i, 8).place({y}, {-10});
  Kernel k = prog.kernel("k", [&] { y(-10) = 1.0f; y(53) = 2.0f; });
  k();
  EXPECT_EQ(y.read<float>({-10}), 1.0f);
  EXPECT_EQ(y.read<float>({53}), 2.0f);
  EXPECT_EQ(prog.stats().at(blocks.name()).active_cells, 2);
  Field where = prog.field(i32, "where", {2});
  Kernel find = prog.kernel("find", [&] {
    for_each(y, [&](Expr n) { if_(y(n) > 0.0f, [&] { where(cast(i32, y(n)) - 1) = n; }); });
  });
  find();
  EXPECT_EQ(where.to_vector<int>(), (std::vector<int>{-10, 53}));
  Field z = prog.field(f32, "z");
  EXPECT_THAT(error_of([&] { prog.root().dense(i, 4).place({z}, {1, 2}); }), AllOf(HasSubstr("'z'"), HasSubstr("offset")));
}

}  // namespace

namespace {

// ---- every SNode kind under every parent kind, every operation --------------------------

// Runs `f`; a grove::Error is an answer (returned as its message), any other
// exception a bug (a test failure).
template <typename F>
std::string value_or_error(F&& f) {
  try {
    f();
    return "";
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a grove::Error: " << typeid(e).name() << ": " << e.what();
    return "internal";
  }
}

TEST_P(Parity, EveryKindUnderEveryParentAnswersEveryOperation) {
  const SNodeKind parents[] = {SNodeKind::root, SNodeKind::dense, SNodeKind::pointer, SNodeKind::bitmasked};
  const SNodeKind kids[] = {SNodeKind::dense, SNodeKind::bitmasked, SNodeKind::pointer, SNodeKind::dynamic};
  for (SNodeKind pk : parents) {
    for (SNodeKind ck : kids) {
      SCOPED_TRACE(std::string(snode_kind_name(ck)) + " under " + std::string(snode_kind_name(pk)));
      Program prog(config());
      Field x = prog.field(i32, "x");
      SNode& root = prog.root();
      SNode* parent = &root;
      switch (pk) {
        case SNodeKind::dense: parent = &root.dense(i, 4); break;
        case SNodeKind::pointer: parent = &root.pointer(i, 4); break;
        case SNodeKind::bitmasked: parent = &root.bitmasked(i, 4); break;
        default: break;
      }
      const bool top = pk == SNodeKind::root;
      SNode* child = nullptr;
      switch (ck) {
        case SNodeKind::dense: child = &parent->dense(j, 4); break;
        case SNodeKind::bitmasked: child = &parent->bitmasked(j, 4); break;
        case SNodeKind::pointer: child = &parent->pointer(j, 4); break;
        default: child = &parent->dynamic(j, 8, 2); break;
      }
      child->place(x);
      const bool dynamic = ck == SNodeKind::dynamic, sparse_child = ck != SNodeKind::dense;
      // Indices: (j) under the root, (i, j) below a node on axis i.
      auto at = [&](int a, int b) { return top ? Indices{Expr(b)} : Indices{Expr(a), Expr(b)}; };
      auto host = [&](int a, int b) { return top ? std::vector<int64_t>{b} : std::vector<int64_t>{a, b}; };
      auto read = [&](int a, int b) {
        std::vector<int64_t> h = host(a, b);
        return top ? x.read<int>({h[0]}) : x.read<int>({h[0], h[1]});
      };
      Field out = prog.field(i32, "out", {4});
      Kernel write = prog.kernel("write", [&] { x(at(1, 2)) = 7; });
      EXPECT_EQ(value_or_error([&] { write(); }), "");
      Kernel rd = prog.kernel("rd", [&] { out(0) = x(at(1, 2)); });
      EXPECT_EQ(value_or_error([&] { rd(); }), "");
      EXPECT_EQ(out.read<int>({0}), 7);
      EXPECT_EQ(read(1, 2), 7);
      EXPECT_EQ(value_or_error([&] {
                  if (top) x.write({3}, 9);
                  else x.write({3, 3}, 9);
                }),
                "");
      EXPECT_EQ(read(3, 3), 9);
      // A struct-for visits exactly the active cells the host walk counts,
      // and sums what to_vector reads.
      Kernel visit = prog.kernel("visit", [&] {
        for_each(x, [&](Indices I) {
          out(1) += 1;
          out(2) += x(I);
        });
      });
      EXPECT_EQ(value_or_error([&] { visit(); }), "");
      std::vector<int> all = x.to_vector<int>();
      EXPECT_EQ(out.read<int>({1}), prog.stats().at(child->name()).active_cells);
      EXPECT_EQ(out.read<int>({2}), std::accumulate(all.begin(), all.end(), 0));
      EXPECT_EQ(out.read<int>({2}), 16);
      // SNode operations on the child: a value, or an error naming it.
      Kernel act = prog.kernel("act", [&] {
        activate(*child, at(2, 1));
        out(3) = cast(i32, is_active(*child, at(2, 1)));
      });
      EXPECT_EQ(value_or_error([&] { act(); }), "");
      EXPECT_EQ(out.read<int>({3}), 1);
      // A dynamic node's list is named without its own axis: list 1 (the
      // root's one list at the top, which also holds x[3]).
      auto list = [&] { return top ? Indices{} : Indices{Expr(1)}; };
      Kernel app = prog.kernel("app", [&] { out(0) = append(*child, dynamic ? list() : at(1, 2), 5); });
      std::string m = value_or_error([&] { app(); });
      if (dynamic) {
        EXPECT_EQ(m, "");
        EXPECT_EQ(out.read<int>({0}), top ? 4 : 3);  // after the elements written at index 2 (and 3)
      } else {
        EXPECT_THAT(m, AllOf(HasSubstr("append"), HasSubstr(child->name())));
      }
      Kernel len = prog.kernel("len", [&] { out(0) = length(*child, dynamic ? list() : at(1, 2)); });
      m = value_or_error([&] { len(); });
      if (dynamic) {
        EXPECT_EQ(m, "");
        EXPECT_EQ(out.read<int>({0}), top ? 5 : 4);
      } else {
        EXPECT_THAT(m, AllOf(HasSubstr("length"), HasSubstr(child->name())));
      }
      Kernel deact = prog.kernel("deact", [&] { deactivate(*child, dynamic ? list() : at(1, 2)); });
      m = value_or_error([&] { deact(); });
      if (sparse_child) {
        EXPECT_EQ(m, "");
        EXPECT_EQ(read(1, 2), 0);
      } else {
        EXPECT_THAT(m, AllOf(HasSubstr("deactivate"), HasSubstr(child->name())));
      }
      EXPECT_EQ(value_or_error([&] { child->deactivate_all(); }), "");
      if (sparse_child) {
        EXPECT_EQ(read(3, 3), 0);
      }
      EXPECT_EQ(value_or_error([&] { parent->deactivate_all(); }), "");
      EXPECT_EQ(value_or_error([&] { root.deactivate_all(); }), "");
      if (pk != SNodeKind::dense && pk != SNodeKind::root) {
        EXPECT_EQ(prog.stats().at(parent->name()).active_cells, 0);
      }
      x.to_vector<int>();
    }
  }
}

}  // namespace
