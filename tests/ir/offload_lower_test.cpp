// offload and lower_access, text in and text out. Both need the kernel's SNode
// trees, which the text form does not carry: each test builds its forest in
// C++ and parses the kernel against it.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ir/eval.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/passes/lower_access.h"
#include "ir/passes/offload.h"
#include "ir/passes/simplify.h"
#include "pass_test_util.h"
#include "ir/printer.h"
#include "ir/snode.h"
#include "ir/verifier.h"

namespace grove::ir {
namespace {

// Field 0 placed in dense(i, 4) under the root of tree 0.
// Field 1 placed in pointer(i, 8).dense(i, 2) in tree 1; field 2, where
// there is one, in a dense(i, 2) beside field 1's under the same pointer.
struct Trees {
  SNodeForest forest;
  int scratch;
  Trees(const FieldTable& fields) {
    int t0 = forest.add_tree();
    int d = forest.add_child(forest.tree(t0).root, SNodeType::dense, {0}, {4});
    forest.add_place(d, 0, fields.get(0).dtype, fields.get(0).name);
    forest.lay_out(t0);
    if (fields.size() > 1) {
      int t1 = forest.add_tree();
      int p = forest.add_child(forest.tree(t1).root, SNodeType::pointer, {0}, {8});
      int c = forest.add_child(p, SNodeType::dense, {0}, {2});
      forest.add_place(c, 1, fields.get(1).dtype, fields.get(1).name);
      if (fields.size() > 2) {
        int beside = forest.add_child(p, SNodeType::dense, {0}, {2});
        forest.add_place(beside, 2, fields.get(2).dtype, fields.get(2).name);
      }
      forest.lay_out(t1);
    }
    scratch = forest.add_scratch_tree(64);
  }
};

// A parsed kernel on its own Trees.
struct Parsed {
  ParsedModule module;
  std::unique_ptr<Trees> trees;  // the kernel's forest: it stays where it is
  Kernel& kernel() const { return *module.kernels.at(0); }
};

// Parses `module` (fields as in Trees) and runs offload, then lower_access and
// simplify when `lower`; in *result, what offload reported.
Parsed offloaded(const std::string& module, bool lower, OffloadResult* result = nullptr, int64_t scratch_base = 0,
                 const LowerAccessOptions& lower_options = {}) {
  Parsed p{parse_module(module, "test"), nullptr};
  Kernel& k = p.kernel();
  p.trees = std::make_unique<Trees>(*p.module.fields);
  k.forest = &p.trees->forest;
  OffloadOptions o;
  o.scratch_tree = p.trees->scratch;
  o.scratch_base = scratch_base;
  o.scratch_words = 64;
  OffloadResult r = offload(k, o);
  verify(k, "offload");
  if (lower) {
    lower_access(k, lower_options);
    simplify(k);
    verify(k, "lower_access");
  }
  if (result) *result = std::move(r);
  return p;
}

// The same, printed.
std::string run(const std::string& module, bool lower, OffloadResult* result = nullptr,
                int64_t scratch_base = 0, const LowerAccessOptions& lower_options = {}) {
  return print_kernel(offloaded(module, lower, result, scratch_base, lower_options).kernel());
}

// The task header lines of a printed kernel, one per task.
std::vector<std::string> task_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("  task ", 0) == 0) out.push_back(line.substr(2, line.size() - 4));  // drop " {"

  return out;
}

TEST(Offload, TasksListgenAndGcForAStructForOverAPointerTree) {
  const std::string module = R"(field @d : i32[4]
field @s : f32[16]

kernel @k() stage typed {
  %0 = const i32 0
  %1 = const i32 7
  field_store @d[%0] %1
  %2 = const i32 4
  %3 = range_for %0 %2 {
    %4 = loop_index i32 %3 0
    field_store @d[%4] %4
  }
  %5 = struct_for @s {
    %6 = loop_index i32 %5 0
    %7 = const f32 1
    field_store @s[%6] %7
  }
}
)";
  OffloadResult r;
  EXPECT_EQ(task_lines(run(module, false, &r)),
            (std::vector<std::string>{
                "task serial $-1 \"serial\"",
                "task range_for $-1 \"range_for\"",
                "task clear_list $S5 \"clear_list S5dense\"",
                "task listgen $S5 \"listgen S4pointer->S5dense\"",
                "task struct_for $S5 \"struct_for S5dense\"",
            }));
  // Listgen of the dense level walks the pointer's pool, so the pointer's
  // own list (of the root's cell) is not made. The struct-for writes the
  // very cells it visits, which are active: it modifies nothing, and the
  // other tasks touch only the dense tree, so no gc follows.
  ASSERT_EQ(r.tasks.size(), 5u);
  EXPECT_TRUE(r.tasks[4].modifies.empty());
  EXPECT_EQ(r.tasks[2].kind, TaskKind::clear_list);
  EXPECT_EQ(r.tasks[2].snode, 5);
}

// A kernel that begins by deactivating cell 3 of the pointer (S4).
constexpr const char* kDeactivatesCell3 = R"(field @d : i32[4]
field @s : f32[16]

kernel @k() stage typed {
  %0 = const i32 3
  snode_op deactivate $S4[%0]
)";

// A pointer's in-use bits are exact only after gc, so a struct-for after a
// deactivation in the same kernel lists after the gc of that tree, and the
// kernel needs no other gc unless it deactivates again.
TEST(Offload, AListgenAfterADeactivationFollowsItsGc) {
  const std::string module = std::string(kDeactivatesCell3) + R"(  %1 = struct_for @s {
    %2 = loop_index i32 %1 0
    %3 = const f32 1
    field_store @s[%2] %3
  }
}
)";
  EXPECT_EQ(task_lines(run(module, false)),
            (std::vector<std::string>{
                "task serial $-1 \"serial\"",
                "task gc $S4 \"gc S4pointer\"",
                "task gc_finish $S4 \"gc_finish S4pointer\"",
                "task clear_list $S5 \"clear_list S5dense\"",
                "task listgen $S5 \"listgen S4pointer->S5dense\"",
                "task struct_for $S5 \"struct_for S5dense\"",
            }));
}

TEST(Offload, PureValuesAreRecomputedAndVariablesLiveInScratch) {
  const std::string module = R"(field @d : i32[4]

kernel @k(n: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 1
  %2 = binary add i32 %0 %1
  %3 = alloca i32
  local_store %3 %2
  %4 = const i32 0
  %5 = range_for %4 %2 {
    %6 = loop_index i32 %5 0
    %7 = local_load i32 %3
    field_store @d[%6] %7
  }
}
)";
  OffloadResult r;
  std::string text = run(module, false, &r, 10);
  EXPECT_EQ(r.scratch_words_used, 2);
  // The variable lives in two scratch words (zeroed where it was declared);
  // the loop's bounds are recomputed in the loop's task.
  EXPECT_EQ(text, R"(kernel @k(n: i32) stage offloaded {
  task serial $-1 "serial" {
    %0 = arg i32 0
    %1 = const i32 1
    %2 = binary add i32 %0 %1
    %3 = const i32 0
    %4 = const u32 10
    tree_store @t1[%4] %3 as i32
    %5 = const u32 10
    tree_store @t1[%5] %2 as i32
    %6 = const i32 0
  }
  task range_for $-1 "range_for" {
    %7 = const i32 0
    %8 = arg i32 0
    %9 = const i32 1
    %10 = binary add i32 %8 %9
    %11 = range_for %7 %10 {
      %12 = loop_index i32 %11 0
      %13 = const u32 10
      %14 = tree_load i32 @t1[%13]
      field_store @d[%12] %14
    }
  }
}
)");
}

TEST(LowerAccess, ADenseStoreBecomesWordArithmetic) {
  const std::string module = R"(field @d : f32[4]

kernel @k() stage typed {
  %0 = const i32 2
  %1 = const f32 1.5
  field_store @d[%0] %1
  %2 = field_load f32 @d[%0]
  %3 = const i32 3
  field_store @d[%3] %2
}
)";
  // Root cell at word 16 (the 4-word header, then the next 64-byte line);
  // the dense node's cells are one word each; indices are reduced modulo
  // the extent (then folded). Each access names the field whose element
  // its word holds.
  EXPECT_EQ(run(module, true), R"(kernel @k() stage lowered {
  task serial $-1 "serial" {
    %0 = const f32 1.5
    %1 = const u32 18
    tree_store @t0[%1] %0 as f32 field @d
    %2 = tree_load f32 @t0[%1] field @d
    %3 = const u32 19
    tree_store @t0[%3] %2 as f32 field @d
  }
}
)");
}

TEST(LowerAccess, ASparseReadChecksThePathAndNeverActivates) {
  const std::string module = R"(field @d : i32[4]
field @s : f32[16]

kernel @k() stage typed {
  %0 = const i32 5
  %1 = field_load f32 @s[%0]
  %2 = cast i32 %1
  %3 = const i32 0
  field_store @d[%3] %2
}
)";
  std::string text = run(module, true);
  // The slot of pointer cell 2 is read (a plain load: nothing in this task
  // activates or deactivates, so no other invocation changes it); no
  // compare-and-swap, no read-modify-write, and the value is selected
  // against 0 for an inactive cell.
  EXPECT_NE(text.find("tree_load u32 @t1["), std::string::npos) << text;
  EXPECT_EQ(text.find("tree_load atomic"), std::string::npos) << text;
  EXPECT_EQ(text.find("tree_cas"), std::string::npos) << text;
  EXPECT_EQ(text.find("tree_atomic"), std::string::npos) << text;
  EXPECT_NE(text.find("select f32"), std::string::npos) << text;
  EXPECT_EQ(task_lines(text), (std::vector<std::string>{"task serial $-1 \"serial\""}));

  // In a task that also activates (a write to s), another invocation may be
  // publishing the slot it reads: an atomic load.
  text = run(R"(field @d : i32[4]
field @s : f32[16]

kernel @k() stage typed {
  %0 = const i32 5
  %1 = field_load f32 @s[%0]
  %2 = const i32 12
  field_store @s[%2] %1
}
)", true);
  const size_t read = text.find("tree_load atomic u32 @t1[");
  ASSERT_NE(read, std::string::npos) << text;
  EXPECT_LT(read, text.find("tree_cas")) << text;  // the read's, before the write's activation
}

// A struct-for that writes only the cells it visits changes no slot, so
// its read of a neighbour (which may lie in another block) reads the slot
// with a plain load; writing the neighbour instead may activate, and the
// slot reads become atomic.
TEST(LowerAccess, AStructForWritingItsOwnCellsReadsSlotsPlainly) {
  auto kernel = [](const char* written) {
    return std::string(R"(field @d : i32[4]
field @s : f32[16]

kernel @k() stage typed {
  %0 = struct_for @s {
    %1 = loop_index i32 %0 0
    %2 = const i32 1
    %3 = binary add i32 %1 %2
    %4 = field_load f32 @s[%3]
    field_store @s[)") + written + R"(] %4
  }
}
)";
  };
  const std::string own = run(kernel("%1"), true);
  EXPECT_NE(own.find("tree_load u32 @t1["), std::string::npos) << own;
  EXPECT_EQ(own.find("tree_load atomic"), std::string::npos) << own;
  const std::string other = run(kernel("%3"), true);
  EXPECT_NE(other.find("tree_load atomic u32 @t1["), std::string::npos) << other;
}

// A struct-for task that takes runs of cells (the CPU's), printed: what
// its task does before the cell loop, and the cell loop (the text after the
// last range_for).
struct RunParts {
  std::string before, cells;
  explicit RunParts(const std::string& text) {
    const size_t task = text.rfind("task struct_for"), loop = text.rfind("range_for");
    before = text.substr(task, loop - task);
    cells = text.substr(loop);
  }
};

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A stencil's reads at constant offsets (a neighbour at s[i + 1], one at
// s[i - 1]) in a struct-for that takes runs of cells: with near reads at
// offsets, each run reads the two neighbouring blocks' slots before its
// cell loop, and the cell loop reads no slot (its loads: the values
// alone); without, every read walks the tree in the loop. A write beside
// the loop's cell (t, in a dense block beside s's under the same pointer)
// neither walks nor activates.
TEST(LowerAccess, ReadsAtConstantOffsetsLookUpTheNeighbouringBlocksOncePerRun) {
  const std::string kernel = R"(field @d : i32[4]
field @s : f32[16]
field @t : f32[16]

kernel @k() stage typed {
  %0 = struct_for @s {
    %1 = loop_index i32 %0 0
    %2 = const i32 1
    %3 = binary add i32 %1 %2
    %4 = field_load f32 @s[%3]
    %5 = binary sub i32 %1 %2
    %6 = field_load f32 @s[%5]
    %7 = binary add f32 %4 %6
    field_store @t[%1] %7
  }
}
)";
  LowerAccessOptions options;
  options.cells_per_iteration = 2;
  const std::string slot = "tree_load u32 @t1[";
  const RunParts walked(run(kernel, true, nullptr, 0, options));
  EXPECT_EQ(count_of(walked.cells, slot), 2u) << walked.cells;  // a slot per read
  EXPECT_EQ(count_of(walked.cells, "tree_cas"), 0u) << walked.cells;
  EXPECT_EQ(count_of(walked.cells, "as f32 field @t"), 1u) << walked.cells;
  options.near_reads = LowerAccessOptions::NearReads::at_offsets;
  const RunParts near(run(kernel, true, nullptr, 0, options));
  EXPECT_EQ(count_of(near.cells, slot), 0u) << near.cells;
  EXPECT_EQ(count_of(near.cells, "tree_load f32 @t1["), 2u) << near.cells;
  EXPECT_EQ(count_of(near.cells, "tree_cas"), 0u) << near.cells;
  EXPECT_EQ(count_of(near.before, slot), count_of(walked.before, slot) + 2) << near.before;
  // Masked: each read loads from its own block and from its neighbour
  // under two conditions (masked loads at addresses linear in the cell, in
  // a vector loop), no address chosen by a select.
  options.masked_near_reads = true;
  const RunParts masked(run(kernel, true, nullptr, 0, options));
  EXPECT_EQ(count_of(masked.cells, slot), 0u) << masked.cells;
  EXPECT_EQ(count_of(masked.cells, "tree_load f32 @t1["), 4u) << masked.cells;
  EXPECT_EQ(count_of(masked.cells, "select u32"), 0u) << masked.cells;
}

// A read followed by a write of the same element (demote_atomics makes
// `s[5] += 2` one) activates at the read: one walk of the tree for both,
// and the read never looks at the cell before it exists (a lookup of an
// inactive cell reads pool entry 0's words, which another invocation may
// be writing: ThreadSanitizer saw that race).
TEST(LowerAccess, AReadModifyWriteActivatesOnceAtTheRead) {
  const std::string text = run(R"(field @d : i32[4]
field @s : f32[16]

kernel @k() stage typed {
  %0 = const i32 5
  %1 = field_load f32 @s[%0]
  %2 = const f32 2
  %3 = binary add f32 %1 %2
  field_store @s[%0] %3
}
)", true);
  // The slot's address is the first atomic load's operand; no other load
  // reads it (the allocator's own loads read its state words).
  const std::string load = "tree_load atomic u32 @t1[";
  const size_t slot = text.find(load);
  ASSERT_NE(slot, std::string::npos) << text;
  const std::string address = text.substr(slot, text.find(']', slot) + 1 - slot);
  EXPECT_EQ(text.find(address, slot + 1), std::string::npos) << text;  // read once
  const size_t read = text.find("tree_load f32 @t1[");
  ASSERT_NE(read, std::string::npos) << text;
  EXPECT_LT(text.find("tree_cas"), read) << text;  // activated before the read
}

TEST(LowerAccess, ASparseWriteActivatesWithCompareAndSwap) {
  const std::string module = R"(field @d : i32[4]
field @s : f32[16]

kernel @k() stage typed {
  %0 = const i32 5
  %1 = const f32 2
  field_store @s[%0] %1
}
)";
  std::string text = run(module, true);
  EXPECT_NE(text.find("tree_cas u32 @t1["), std::string::npos) << text;          // publication
  EXPECT_NE(text.find("tree_atomic add u32 @t1["), std::string::npos) << text;   // the allocation ticket
  // It only activates: no gc follows (losers' candidates wait in the spare
  // slots for the next kernel that deactivates).
  EXPECT_EQ(task_lines(text), (std::vector<std::string>{"task serial $-1 \"serial\""}));
}

// Accesses at the same indices of a block (a vector's components, a
// read-modify-write) share the first one's activation: one walk of the
// tree, not one per access, unless a deactivation comes between.
TEST(LowerAccess, AccessesAtOneCellOfABlockActivateItOnce) {
  // A kernel that stores 2 at s[5], then `rest`, lowered.
  auto lowered = [](const std::string& rest) {
    return run("field @d : i32[4]\nfield @s : f32[16]\n\nkernel @k() stage typed {\n"
               "  %0 = const i32 5\n  %1 = const f32 2\n  field_store @s[%0] %1\n" + rest + "}\n",
               true);
  };
  const std::string one = lowered("");
  const std::string three = lowered(R"(  %2 = field_atomic add f32 @s[%0] %1
  %3 = field_load f32 @s[%0]
  %4 = binary add f32 %2 %3
  field_store @s[%0] %4
)");
  const size_t walks = test::count(one, "tree_cas u32 @t1[");
  ASSERT_GT(walks, 0u) << one;
  EXPECT_EQ(test::count(three, "tree_cas u32 @t1["), walks) << three;
  EXPECT_EQ(test::count(three, "tree_atomic add f32 @t1["), 1u) << three;
  // A deactivation between: the access after it walks again.
  const std::string apart = lowered(R"(  snode_op deactivate $S4[%0]
  field_store @s[%0] %1
)");
  EXPECT_EQ(test::count(apart, "tree_cas u32 @t1["), 2 * walks) << apart;
}

// Writes of one statement group into distinct blocks (one under an if,
// one in its else, one at an index the group computes), lowered with
// group_activations: one copy of the activation code, in a loop before the
// first write, instead of one per write; the same values and the same
// blocks active as lowered write by write (the interpreter runs both).
TEST(LowerAccess, AStatementGroupsWritesShareOneCopyOfTheActivationCode) {
  const std::string module = R"(field @d : i32[4]
field @s : f32[16]

kernel @k(x: i32) stage typed {
  %0 = const i32 1
  %1 = const f32 2
  field_store @s[%0] %1
  %2 = arg i32 0
  %3 = const i32 0
  %4 = binary cmp_gt u1 %2 %3
  if %4 {
    %5 = const i32 12
    %6 = const f32 3
    field_store @s[%5] %6
  } else {
    %7 = const i32 9
    %8 = const f32 4
    field_store @s[%7] %8
  }
  %9 = binary add i32 %2 %0
  %10 = cast f32 %9
  field_store @s[%9] %10
}
)";
  LowerAccessOptions grouped;
  grouped.group_activations = true;
  LowerAccessOptions checked = grouped;
  checked.debug = true;
  const size_t copy = test::count(run(module, true), "tree_cas u32 @t1[") / 4;  // four writes, a copy each
  ASSERT_GT(copy, 0u);
  const std::string text = run(module, true, nullptr, 0, grouped);
  EXPECT_EQ(test::count(text, "tree_cas u32 @t1["), copy) << text;
  EXPECT_EQ(test::count(run(module, true, nullptr, 0, checked), "tree_cas u32 @t1["), 4 * copy);  // debug: each
  // Writes all in one branch of an if are grouped inside it: the loop runs
  // only where the branch does.
  const std::string branch = run(R"(field @d : i32[4]
field @s : f32[16]

kernel @k(x: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = binary cmp_gt u1 %0 %1
  if %2 {
    %3 = const f32 2
    field_store @s[%0] %3
    %4 = const i32 9
    field_store @s[%4] %3
  } else {
  }
}
)",
                                 true, nullptr, 0, grouped);
  EXPECT_EQ(test::count(branch, "tree_cas u32 @t1["), copy) << branch;
  EXPECT_LT(branch.find("if %"), branch.find("range_for")) << branch;

  // Each element of @s (0 where inactive) and the active blocks, after a
  // run with x lowered write by write or grouped.
  auto outcome = [&](int32_t x, const LowerAccessOptions& options) {
    const Parsed p = offloaded(module, true, nullptr, 0, options);
    const Kernel& k = p.kernel();
    const Trees& trees = *p.trees;
    std::vector<std::vector<uint32_t>> words;
    for (int t = 0; t < trees.forest.num_trees(); ++t)
      words.push_back(t == trees.scratch ? std::vector<uint32_t>(64, 0) : trees.forest.initial_buffer(t));
    Interpreter interp(k);
    InterpreterEnv env;
    env.snodes = &trees.forest;
    env.buffer = [&](int tree, int) -> std::span<uint32_t> { return words.at(static_cast<size_t>(tree)); };
    const std::vector<uint64_t> args = {static_cast<uint64_t>(static_cast<uint32_t>(x))};
    interp.run(args, env);
    std::vector<double> values;
    std::vector<int64_t> active;
    const std::vector<uint32_t>& w = words.at(1);
    for (int64_t e = 0; e < 16; ++e) {
      const int64_t idx[kMaxAxes] = {e};
      const int64_t a = trees.forest.find_element(1, idx, [&](int64_t n) { return w[static_cast<size_t>(n)]; });
      values.push_back(a < 0 ? 0.0 : bits_to_double(DataType::f32, load_element(w, a, DataType::f32)));
      if (a >= 0 && e % 2 == 0) active.push_back(e / 2);
    }
    return std::pair{values, active};
  };
  for (const int32_t x : {5, 0, -1}) {
    const auto [values, active] = outcome(x, {});
    EXPECT_EQ(outcome(x, grouped), (std::pair{values, active})) << "x = " << x;
    // By hand: blocks 0 (s[1]), 6 (s[12]) or 4 (s[9]), and s[x + 1]'s.
    std::vector<int64_t> want = {0, x > 0 ? 6 : 4};
    want.push_back((x + 1) / 2);
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    EXPECT_EQ(active, want) << "x = " << x;
  }
}

TEST(LowerAccess, ADeactivationIsFollowedByGcOfItsTree) {
  const std::string module = std::string(kDeactivatesCell3) + "}\n";
  std::string text = run(module, true);
  EXPECT_NE(text.find("tree_atomic exchange u32 @t1["), std::string::npos) << text;  // the slot
  EXPECT_EQ(task_lines(text), (std::vector<std::string>{"task serial $-1 \"serial\"", "task gc $S4 \"gc S4pointer\"",
                                                         "task gc_finish $S4 \"gc_finish S4pointer\""}));
}

}  // namespace
}  // namespace grove::ir
