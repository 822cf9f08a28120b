// Tree types and their instances (the RFC "AOT for all SNodes"'s SNodeTree):
// one type laid out once, several instances, kernels taking a tree as an
// argument compiled once for all of them, and every instance independent of
// the others. Expected values come from plain C++ models in the tests.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "backend_fixture.h"
#include "program/program_impl.h"

using namespace grove;
using grove::testing::error_of;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

class TreeTypes : public grove::testing::BackendTest {};
GROVE_ALL_BACKENDS(TreeTypes);

// A 16 x 16 grid of f32 in 4 x 4 pointer blocks of 4 x 4 dense cells.
struct Grid {
  TreeType type;
  SNode* blocks = nullptr;
  SNode* cells = nullptr;
};

Grid make_grid(Program& prog, const char* name = "grid", int64_t capacity = 0) {
  Grid g;
  g.type = prog.tree_type(name, [&](TreeTypeBuilder& t) {
    Field x = t.field(f32, "x");
    g.blocks = &t.root().pointer(ij, 4);
    if (capacity > 0) g.blocks->capacity(capacity);
    g.cells = &g.blocks->dense(ij, 4);
    g.cells->place(x);
  });
  return g;
}

// The active pointer blocks of a set of written cells.
int64_t blocks_of(const std::map<std::pair<int, int>, float>& cells) {
  std::map<std::pair<int, int>, bool> blocks;
  for (const auto& [ij, v] : cells) blocks[{ij.first / 4, ij.second / 4}] = true;
  return static_cast<int64_t>(blocks.size());
}

std::vector<float> dense_image(const std::map<std::pair<int, int>, float>& cells) {
  std::vector<float> out(256, 0.0f);
  for (const auto& [ij, v] : cells) out[static_cast<size_t>(ij.first * 16 + ij.second)] = v;
  return out;
}

// ---- every kind of task, on two and more instances ---------------------------------

TEST_P(TreeTypes, ARangeForRunsOnEachInstanceWithOneCompilation) {
  Program prog(config());
  Grid g = make_grid(prog);
  Tree a = prog.instantiate(g.type, "a"), b = prog.instantiate(g.type, "b"), c = prog.instantiate(g.type, "c");
  Kernel diagonal = prog.kernel("diagonal", {arg(g.type, "tr"), arg(f32, "base")}, [](Args args) {
    Field x = args.tree("tr").field("x");
    for_range(0, 16, [&](Expr n) { x(n, n) = args["base"] + cast(f32, n); });
  });
  diagonal(a, 1.0f);
  diagonal(b, 100.0f);
  EXPECT_EQ(diagonal.compile_count(), 1);
  std::map<std::pair<int, int>, float> ma, mb;
  for (int n = 0; n < 16; ++n) {
    ma[{n, n}] = 1.0f + static_cast<float>(n);
    mb[{n, n}] = 100.0f + static_cast<float>(n);
  }
  EXPECT_EQ(a.field("x").to_vector<float>(), dense_image(ma));
  EXPECT_EQ(b.field("x").to_vector<float>(), dense_image(mb));
  EXPECT_EQ(c.field("x").to_vector<float>(), std::vector<float>(256, 0.0f));  // never launched on
  EXPECT_EQ(a.stats().at(g.blocks->name()).active_cells, blocks_of(ma));
  EXPECT_EQ(c.stats().at(g.blocks->name()).active_cells, 0);
  // A host write activates in its instance only.
  b.field("x").write({0, 15}, 7.0f);
  mb[{0, 15}] = 7.0f;
  EXPECT_EQ(b.stats().at(g.blocks->name()).active_cells, blocks_of(mb));
  EXPECT_EQ(a.stats().at(g.blocks->name()).active_cells, blocks_of(ma));
  EXPECT_FLOAT_EQ(b.field("x").read<float>({0, 15}), 7.0f);
  EXPECT_FLOAT_EQ(a.field("x").read<float>({0, 15}), 0.0f);
}

TEST_P(TreeTypes, AStructForVisitsTheActiveCellsOfTheInstanceItIsGiven) {
  Program prog(config());
  Grid g = make_grid(prog);
  Tree a = prog.instantiate(g.type, "a"), b = prog.instantiate(g.type, "b");
  Kernel twice = prog.kernel("twice", {arg(g.type, "tr")}, [](Args args) {
    Field x = args.tree("tr").field("x");
    for_each(x, [&](Expr p, Expr q) { x(p, q) = x(p, q) * 2.0f + 1.0f; });
  });
  std::map<std::pair<int, int>, float> ma{{{0, 0}, 1.0f}, {{1, 2}, 2.0f}}, mb{{{15, 15}, 3.0f}, {{8, 3}, 4.0f}};
  for (const auto& [ij, v] : ma) a.field("x").write({ij.first, ij.second}, v);
  for (const auto& [ij, v] : mb) b.field("x").write({ij.first, ij.second}, v);
  // The model: every cell of an active block is visited (inactive cells of
  // an active dense block read 0 and become 1).
  auto step = [](std::map<std::pair<int, int>, float>& m) {
    std::map<std::pair<int, int>, float> next;
    std::map<std::pair<int, int>, bool> blocks;
    for (const auto& [ij, v] : m) blocks[{ij.first / 4, ij.second / 4}] = true;
    for (const auto& [blk, on] : blocks)
      for (int p = 0; p < 4; ++p)
        for (int q = 0; q < 4; ++q) {
          const std::pair<int, int> cell{blk.first * 4 + p, blk.second * 4 + q};
          auto it = m.find(cell);
          next[cell] = (it == m.end() ? 0.0f : it->second) * 2.0f + 1.0f;
        }
    m = next;
  };
  twice(a);
  step(ma);
  twice(a);
  step(ma);
  twice(b);
  step(mb);
  EXPECT_EQ(twice.compile_count(), 1);
  EXPECT_EQ(a.field("x").to_vector<float>(), dense_image(ma));
  EXPECT_EQ(b.field("x").to_vector<float>(), dense_image(mb));
  // Each instance keeps its own lists: a's was made once and reused by the
  // second launch (nothing changed a's activity); b's was made for b.
  EXPECT_EQ(a.stats().at(g.cells->name()).listgen_runs, 1);
  EXPECT_EQ(b.stats().at(g.cells->name()).listgen_runs, 1);
  EXPECT_EQ(a.stats().at(g.cells->name()).list_length, 1);  // block (0, 0) of a
  EXPECT_EQ(b.stats().at(g.cells->name()).list_length, 2);  // blocks (3, 3) and (2, 0) of b
}

// Whole-field copies of an instance's sparse field (Grove's own kernel,
// which takes the instance, activates every cell first) stay in that
// instance: the other keeps its one written block.
TEST_P(TreeTypes, WholeFieldCopiesActivateOnlyTheirInstance) {
  Program prog(config());
  Grid g = make_grid(prog);
  Tree a = prog.instantiate(g.type, "a"), b = prog.instantiate(g.type, "b");
  b.field("x").write({5, 6}, 2.0f);
  std::vector<float> values(256);
  for (size_t n = 0; n < values.size(); ++n) values[n] = static_cast<float>(n) - 100.0f;
  a.field("x").from_vector(values);
  EXPECT_EQ(a.field("x").to_vector<float>(), values);
  EXPECT_EQ(b.field("x").to_vector<float>(), dense_image({{{5, 6}, 2.0f}}));
  EXPECT_EQ(a.stats().at(g.blocks->name()).active_cells, 16);
  EXPECT_EQ(b.stats().at(g.blocks->name()).active_cells, 1);
  b.field("x").fill(0.5f);
  EXPECT_EQ(b.field("x").to_vector<float>(), std::vector<float>(256, 0.5f));
  EXPECT_EQ(a.field("x").read<float>({15, 15}), 155.0f);
}

TEST_P(TreeTypes, DeactivationAndGarbageCollectionStayInTheirInstance) {
  Program prog(config());
  Grid g = make_grid(prog, "grid", 4);  // at most 4 blocks at once per instance
  Tree a = prog.instantiate(g.type, "a"), b = prog.instantiate(g.type, "b");
  // One cell per block, so that no two invocations race for a block (a
  // pool sized exactly to its data has no room for racing candidates,
  // docs/memory.md).
  Kernel fill = prog.kernel("fill", {arg(g.type, "tr"), arg(i32, "row")}, [](Args args) {
    Field x = args.tree("tr").field("x");
    for_range(0, 4, [&](Expr n) { x(args["row"], n * 4 + 3) = 1.0f; });
  });
  Kernel clear = prog.kernel("clear", {arg(g.type, "tr")}, [&](Args args) {
    SNodeRef blocks = args.tree("tr")[*g.blocks];
    for_each(blocks, [&](Expr p, Expr q) { deactivate(blocks, {p, q}); });
  });
  fill(a, 0);  // blocks (0, 0..3) of a
  fill(b, 4);  // blocks (1, 0..3) of b
  EXPECT_EQ(a.stats().at(g.blocks->name()).pool_used, 4);
  EXPECT_EQ(b.stats().at(g.blocks->name()).pool_used, 4);
  clear(a);  // frees a's blocks (the gc task runs on a's pool)
  EXPECT_EQ(a.stats().at(g.blocks->name()).pool_used, 0);
  EXPECT_EQ(b.stats().at(g.blocks->name()).pool_used, 4);
  EXPECT_EQ(a.field("x").to_vector<float>(), std::vector<float>(256, 0.0f));
  // a's freed entries serve a's next blocks; a full pool then needs all 4.
  fill(a, 8);
  EXPECT_EQ(a.stats().at(g.blocks->name()).pool_used, 4);
  std::vector<float> rows(256, 0.0f);
  for (int n = 0; n < 4; ++n) rows[static_cast<size_t>(4 * 16 + n * 4 + 3)] = 1.0f;
  EXPECT_EQ(b.field("x").to_vector<float>(), rows);
  // Tree::deactivate_all clears one instance.
  b.deactivate_all();
  EXPECT_EQ(b.stats().at(g.blocks->name()).pool_used, 0);
  EXPECT_EQ(b.field("x").to_vector<float>(), std::vector<float>(256, 0.0f));
  EXPECT_EQ(a.stats().at(g.blocks->name()).pool_used, 4);
  EXPECT_FLOAT_EQ(a.field("x").read<float>({8, 15}), 1.0f);
  EXPECT_FLOAT_EQ(a.field("x").read<float>({8, 14}), 0.0f);
}

TEST_P(TreeTypes, PoolErrorsNameTheInstanceAndLeaveTheOthersAlone) {
  Program prog(config());
  SNode* lists = nullptr;
  TreeType bag = prog.tree_type("bag", [&](TreeTypeBuilder& t) {
    Field v = t.field(i32, "v");
    lists = &t.root().dynamic(i, 64, 4);
    lists->capacity(2).place(v);  // 2 chunks of 4: 8 elements at most
  });
  Tree a = prog.instantiate(bag, "a"), b = prog.instantiate(bag, "b");
  Kernel push = prog.kernel("push", {arg(bag, "tr"), arg(i32, "count")}, [&](Args args) {
    // One after the other (a serial task): the order of the elements, and
    // which of them find room, are known.
    SNodeRef l = args.tree("tr")[*lists];
    Var n(i32, 0);
    while_([&] { return n < args["count"]; }, [&] {
      append(l, {}, n);
      n += 1;
    });
  });
  Field length_of = prog.field(i32, "length_of", {});
  Kernel measure = prog.kernel("measure", {arg(bag, "tr")}, [&](Args args) {
    length_of() = length(args.tree("tr")[*lists], {});
  });
  EXPECT_THAT(error_of([&] {
                push(a, 10);
                prog.sync();
              }),
              AllOf(HasSubstr(lists->name()), HasSubstr("tree 'a'"), HasSubstr("ran out of pool memory")));
  push(b, 3);
  prog.sync();  // b has room: no error, and none left over from a
  measure(b);
  EXPECT_EQ(length_of.read<int>(), 3);
  std::vector<int> in_b(64, 0);
  for (int n = 0; n < 3; ++n) in_b[static_cast<size_t>(n)] = n;
  EXPECT_EQ(b.field("v").to_vector<int>(), in_b);
  measure(a);
  EXPECT_EQ(length_of.read<int>(), 8);  // a kept the 8 elements it had room for
  std::vector<int> in_a(64, 0);
  for (int n = 0; n < 8; ++n) in_a[static_cast<size_t>(n)] = n;
  EXPECT_EQ(a.field("v").to_vector<int>(), in_a);
  EXPECT_EQ(a.stats().at(lists->name()).pool_used, 2);
  EXPECT_EQ(b.stats().at(lists->name()).pool_used, 1);
}

TEST_P(TreeTypes, OneKernelTakesTwoInstancesAndOwnFields) {
  Program prog(config());
  Grid g = make_grid(prog);
  Field total = prog.field(f32, "total", {});  // of the program's own tree
  Tree a = prog.instantiate(g.type, "a"), b = prog.instantiate(g.type, "b");
  Kernel copy = prog.kernel("copy", {arg(g.type, "src"), arg(f32, "scale"), arg(g.type, "dst")}, [&](Args args) {
    Field src = args.tree("src").field("x"), dst = args.tree("dst").field("x");
    for_each(src, [&](Expr p, Expr q) {
      dst(p, q) = src(p, q) * args["scale"];
      total() += src(p, q);
    });
  });
  a.field("x").write({2, 3}, 5.0f);
  a.field("x").write({13, 1}, 6.0f);
  copy(a, 2.0f, b);
  EXPECT_FLOAT_EQ(b.field("x").read<float>({2, 3}), 10.0f);
  EXPECT_FLOAT_EQ(b.field("x").read<float>({13, 1}), 12.0f);
  EXPECT_FLOAT_EQ(total.read<float>(), 11.0f);
  EXPECT_EQ(b.stats().at(g.blocks->name()).active_cells, 2);
  copy(b, 0.5f, a);  // the other way round, same compilation
  EXPECT_FLOAT_EQ(a.field("x").read<float>({2, 3}), 5.0f);
  EXPECT_FLOAT_EQ(total.read<float>(), 11.0f + 22.0f);
  EXPECT_EQ(copy.compile_count(), 1);
}

TEST_P(TreeTypes, HostAccessWorksPerInstance) {
  Program prog(config());
  TreeType particles = prog.tree_type("particles", [](TreeTypeBuilder& t) {
    Field pos = t.vector_field(2, f32, "pos");
    Field id = t.field(i32, "id");
    t.root().dense(i, 8).place(pos, id);
  });
  Tree a = prog.instantiate(particles), b = prog.instantiate(particles);
  EXPECT_EQ(a.name(), "particles#0");
  EXPECT_EQ(b.name(), "particles#1");
  EXPECT_EQ(a.type().name(), "particles");
  std::vector<int> ids{1, 2, 3, 4, 5, 6, 7, 8};
  a.field("id").from_vector(ids);
  b.field("id").fill(9);
  b.field("pos")[1].write({3}, 2.5f);
  EXPECT_EQ(a.field("id").to_vector<int>(), ids);
  EXPECT_EQ(b.field("id").to_vector<int>(), std::vector<int>(8, 9));
  EXPECT_FLOAT_EQ(b.field("pos").to_vector<float>()[7], 2.5f);
  EXPECT_EQ(a.field("pos").to_vector<float>(), std::vector<float>(16, 0.0f));
  EXPECT_EQ(a.field("pos").shape(), (Shape{8}));
  EXPECT_EQ(particles.field("id").name(), "particles.id");
}

TEST_P(TreeTypes, CapacitiesAreFixedWhenTheTypeIsMadeNotByInstantiation) {
  Config c = config();
  c.device_memory = int64_t{8} << 20;
  Program prog(c);
  Grid g = make_grid(prog, "grid", 3);
  SNode* blocks = nullptr;
  auto declare = [&](TreeTypeBuilder& t) {
    Field x = t.field(f32, "x");
    blocks = &t.root().pointer(i, 1 << 20);  // capacity from Config::device_memory
    blocks->dense(i, 4).place(x);
  };
  TreeType early = prog.tree_type("early", declare);
  SNode* early_blocks = blocks;
  Tree first = prog.instantiate(early, "first");
  // A tree of the program's own takes its share of the budget; a type made
  // after it, and an instance made after it, are sized as before.
  Field big = prog.field(f32, "big");
  prog.root().pointer(i, 1 << 20).dense(i, 4).place(big);
  big.write({0}, 1.0f);
  TreeType late = prog.tree_type("late", declare);
  Tree second = prog.instantiate(early, "second"), third = prog.instantiate(late, "third");
  const int64_t cap = first.stats().at(early_blocks->name()).pool_capacity;
  EXPECT_GT(cap, 0);
  EXPECT_EQ(second.stats().at(early_blocks->name()).pool_capacity, cap);
  EXPECT_EQ(third.stats().at(blocks->name()).pool_capacity, cap);
  EXPECT_EQ(prog.instantiate(g.type).stats().at(g.blocks->name()).pool_capacity, 3);
}

// ---- bad input -------------------------------------------------------------------------

TEST_P(TreeTypes, ALaunchWithTheWrongTreeNamesTheKernelTheParameterAndBothTypes) {
  Program prog(config());
  Grid g = make_grid(prog);
  Grid h = make_grid(prog, "other");
  Tree a = prog.instantiate(g.type, "a"), o = prog.instantiate(h.type, "o");
  Kernel k = prog.kernel("k", {arg(g.type, "tr"), arg(i32, "n")}, [](Args args) {
    args.tree("tr").field("x")(args["n"], 0) = 1.0f;
  });
  EXPECT_THAT(error_of([&] { k(o, 1); }),
              AllOf(HasSubstr("kernel 'k'"), HasSubstr("'tr'"), HasSubstr("type 'grid'"), HasSubstr("type 'other'")));
  EXPECT_THAT(error_of([&] { k(3, 1); }), AllOf(HasSubstr("kernel 'k'"), HasSubstr("'tr'"), HasSubstr("pass a Tree")));
  EXPECT_THAT(error_of([&] { k(a, a); }), AllOf(HasSubstr("kernel 'k'"), HasSubstr("'n'"), HasSubstr("tree")));
  EXPECT_THAT(error_of([&] { k(1); }), AllOf(HasSubstr("kernel 'k'"), HasSubstr("tr: tree of type 'grid'")));
  EXPECT_THAT(error_of([&] { k(Tree(), 1); }), AllOf(HasSubstr("kernel 'k'"), HasSubstr("'tr'"), HasSubstr("empty")));
  Tree gone = prog.instantiate(g.type, "gone");
  gone.destroy();
  EXPECT_THAT(error_of([&] { k(gone, 1); }), AllOf(HasSubstr("kernel 'k'"), HasSubstr("'gone' was destroyed")));
  EXPECT_THAT(error_of([&] { gone.field("x").read<float>({0, 0}); }), HasSubstr("destroyed"));
  {
    Program other(config());
    Grid og = make_grid(other);
    Tree foreign = other.instantiate(og.type, "foreign");
    EXPECT_THAT(error_of([&] { k(foreign, 1); }),
                AllOf(HasSubstr("kernel 'k'"), HasSubstr("'tr'"), HasSubstr("'foreign'"), HasSubstr("pass a tree of this Program")));
    Tree dead;
    {
      Program short_lived(config());
      dead = short_lived.instantiate(make_grid(short_lived).type);
    }
    EXPECT_THAT(error_of([&] { k(dead, 1); }), AllOf(HasSubstr("kernel 'k'"), HasSubstr("Program that was destroyed")));
  }
  k(a, 2);  // and the right tree works after all of that
  EXPECT_FLOAT_EQ(a.field("x").read<float>({2, 0}), 1.0f);
}

// Instances made and destroyed in turn reuse the device's buffers: 2,000
// cycles leave as many as one did (every instance ever made kept about
// 0.5 KiB of bookkeeping before, and a device buffer slot). A handle of a
// destroyed instance stays refused once another instance has its buffer,
// and that instance starts empty.
TEST_P(TreeTypes, DestroyedInstancesLeaveNothingBehind) {
  Program prog(config());
  Grid g = make_grid(prog);
  Kernel k = prog.kernel("k", {arg(g.type, "tr"), arg(i32, "n")}, [](Args args) {
    args.tree("tr").field("x")(args["n"], 0) = 1.0f;
  });
  Tree first = prog.instantiate(g.type, "first");
  k(first, 3);
  const size_t buffers = prog.impl()->context->buffers();
  first.destroy();
  Tree second = prog.instantiate(g.type, "second");
  EXPECT_EQ(prog.impl()->context->buffers(), buffers);  // first's buffer, reused
  EXPECT_EQ(second.field("x").read<float>({3, 0}), 0.0f);
  EXPECT_THAT(error_of([&] { k(first, 1); }), AllOf(HasSubstr("kernel 'k'"), HasSubstr("'first' was destroyed")));
  EXPECT_THAT(error_of([&] { (void)first.field("x").read<float>({3, 0}); }), HasSubstr("destroyed"));
  EXPECT_THAT(error_of([&] { (void)first.name(); }), HasSubstr("'first' was destroyed"));
  for (int n = 0; n < 2000; ++n) {
    Tree t = prog.instantiate(g.type);
    k(t, n % 16);
    t.destroy();
  }
  EXPECT_EQ(prog.impl()->context->buffers(), buffers + 1);  // second's and the loop's one at a time
  k(second, 5);
  EXPECT_EQ(second.field("x").read<float>({5, 0}), 1.0f);
  EXPECT_EQ(second.field("x").read<float>({3, 0}), 0.0f);
  EXPECT_EQ(second.stats().at(g.blocks->name()).active_cells, 1);
}

TEST_P(TreeTypes, ATreeTypesDataIsReachedOnlyThroughInstances) {
  Program prog(config());
  Grid g = make_grid(prog);
  Grid h = make_grid(prog, "other");
  Tree a = prog.instantiate(g.type, "a");
  Field declared = g.type.field("x");
  Kernel direct = prog.kernel("direct", [&] { declared(0, 0) = 1.0f; });
  EXPECT_THAT(error_of([&] { direct(); }), AllOf(HasSubstr("kernel 'direct'"), HasSubstr("tree type 'grid'"),
                                                 HasSubstr("args.tree")));
  Field host_handle = a.field("x");
  Kernel host = prog.kernel("host", [&] { host_handle(0, 0) = 1.0f; });
  EXPECT_THAT(error_of([&] { host(); }), AllOf(HasSubstr("kernel 'host'"), HasSubstr("host handle of tree 'a'")));
  Kernel snode = prog.kernel("snode", [&] { activate(*g.blocks, {0, 0}); });
  EXPECT_THAT(error_of([&] { snode(); }), AllOf(HasSubstr("activate on SNode"), HasSubstr("tree type 'grid'")));
  Kernel wrong_snode = prog.kernel("wrong_snode", {arg(g.type, "tr")}, [&](Args args) {
    activate(args.tree("tr")[*h.blocks], {0, 0});
  });
  EXPECT_THAT(error_of([&] { wrong_snode(a); }), HasSubstr("is not an SNode of tree type 'grid'"));
  Kernel as_number = prog.kernel("as_number", {arg(g.type, "tr")}, [&](Args args) { declared(0, 0) = args[0]; });
  EXPECT_THAT(error_of([&] { as_number(a); }), AllOf(HasSubstr("'tr') is a tree"), HasSubstr("args.tree")));
  Kernel as_tree = prog.kernel("as_tree", {arg(i32, "n")}, [&](Args args) { args.tree("n"); });
  EXPECT_THAT(error_of([&] { as_tree(1); }), HasSubstr("not a tree"));
  Kernel no_field = prog.kernel("no_field", {arg(g.type, "tr")}, [&](Args args) { args.tree("tr").field("y"); });
  EXPECT_THAT(error_of([&] { no_field(a); }), AllOf(HasSubstr("no field named 'y'"), HasSubstr("'x'")));
  EXPECT_THAT(error_of([&] { declared.read<float>({0, 0}); }), AllOf(HasSubstr("holds no data"), HasSubstr("field(\"x\")")));
  EXPECT_THAT(error_of([&] { g.blocks->deactivate_all(); }), HasSubstr("tree.deactivate_all()"));
}

TEST_P(TreeTypes, BadDeclarationsAreRefusedAndLeaveTheProgramUsable) {
  Program prog(config());
  Field plain = prog.field(f32, "plain", {});
  EXPECT_THAT(error_of([&] {
                prog.tree_type("t", [&](TreeTypeBuilder& t) { t.root().dense(i, 4).place(plain); });
              }),
              HasSubstr("declare the type's fields with its TreeTypeBuilder"));
  Field escaped;
  EXPECT_THAT(error_of([&] {
                prog.tree_type("t", [&](TreeTypeBuilder& t) {
                  escaped = t.field(f32, "x");
                  t.root().dense(i, 4).place(escaped);
                  prog.root().dense(i, 4).place(escaped);
                });
              }),
              HasSubstr("can be placed only under that type's root()"));
  EXPECT_THAT(error_of([&] { prog.tree_type("u", [&](TreeTypeBuilder& t) { t.field(f32, "x"); }); }),
              HasSubstr("declared but not placed"));
  EXPECT_THAT(error_of([&] { prog.tree_type("v", [&](TreeTypeBuilder&) {}); }), HasSubstr("has no fields"));
  EXPECT_THAT(error_of([&] {
                prog.tree_type("w", [&](TreeTypeBuilder& t) {
                  Field x = t.field(f32, "x");
                  t.root().dense(i, 4).place(x);
                  t.field(f32, "x");
                });
              }),
              HasSubstr("already has a field named 'x'"));
  EXPECT_THAT(error_of([&] { prog.instantiate(TreeType()); }), HasSubstr("empty"));
  // The names of failed types are free again; a good type works.
  Grid g = make_grid(prog, "t");
  EXPECT_THAT(error_of([&] { make_grid(prog, "t"); }), HasSubstr("already exists"));
  Tree a = prog.instantiate(g.type);
  plain.write({}, 2.0f);
  a.field("x").write({1, 1}, 3.0f);
  EXPECT_FLOAT_EQ(a.field("x").read<float>({1, 1}), 3.0f);
  EXPECT_FLOAT_EQ(plain.read<float>(), 2.0f);
}

}  // namespace
