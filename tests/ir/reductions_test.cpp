// mark_reductions: which tree_atomics a code generator may combine (text in,
// marks out). The tree is built in C++, as the text form does not carry it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/parser.h"
#include "ir/passes/reductions.h"
#include "ir/printer.h"
#include "ir/snode.h"
#include "ir/verifier.h"

namespace grove::ir {
namespace {

// The marks of the kernel's tree_atomics, in program order, after the pass.
std::vector<Reduction> marks(const std::string& text, const SNodeForest* forest) {
  ParsedModule m = parse_module(text, "reductions_test.ir");
  Kernel& k = *m.kernels.at(0);
  k.forest = forest;
  mark_reductions(k);
  verify(k, "mark_reductions");
  // Printed and read back, the marks stay.
  EXPECT_EQ(print_kernel(*parse_module(print_kernel(k), "again.ir").kernels.at(0)), print_kernel(k));
  std::vector<Reduction> out;
  walk(k.body(), [&](Stmt* s) {
    if (s->kind() == StmtKind::TreeAtomic) out.push_back(s->reduction());
  });
  return out;
}

TEST(Reductions, OnlyUnreadSumsIntoOneCellOfFieldDataAreMarked) {
  SNodeForest forest;
  const int tree = forest.add_tree();
  const int dense = forest.add_child(forest.tree(tree).root, SNodeType::dense, {0}, {16});
  forest.add_place(dense, 0, DataType::i32, "x");
  forest.lay_out(tree);
  const int64_t data = forest.tree(tree).root_offset;
  ASSERT_GE(data, 1);  // after the header
  auto at = [&](int64_t word) { return std::to_string(word); };
  const std::string text = R"(
kernel @sums() stage lowered {
  task range_for $-1 "range_for" {
    %0 = const i32 0
    %1 = const i32 1000
    %2 = range_for %0 %1 {
      %3 = loop_index i32 %2 0
      %4 = const u32 )" + at(data) + R"(
      %5 = tree_atomic add i32 @t0[%4] %3
      %6 = const u32 )" + at(data - 1) + R"(
      %7 = tree_atomic add i32 @t0[%6] %3
      %8 = const u32 )" + at(data + 1) + R"(
      %9 = cast f32 %3
      %10 = tree_atomic add f32 @t0[%8] %9
      %11 = tree_load f32 @t0[%8]
      %12 = const u32 )" + at(data + 2) + R"(
      %13 = tree_atomic add i32 @t0[%12] %3
      %14 = binary add i32 %13 %3
      %15 = const u32 )" + at(data + 4) + R"(
      %16 = cast i64 %3
      %17 = tree_atomic add i64 @t0[%15] %16
      %18 = cast u32 %3
      %19 = tree_atomic add i32 @t0[%18] %3
      %20 = tree_atomic sub i32 @t0[%4] %3
      %21 = const u32 )" + at(data + 3) + R"(
      %22 = cast u32 %3
      %23 = tree_atomic add u32 @t0[%21] %22
      %24 = tree_atomic add u32 @t0[%21] %22
    }
  }
  task serial $-1 "serial" {
    %25 = const u32 )" + at(data) + R"(
    %26 = const i32 1
    %27 = tree_atomic add i32 @t0[%25] %26
  }
}
)";
  const std::vector<Reduction> want = {
      Reduction::one_cell,    // the cell is also changed by the sub below
      Reduction::none,        // a word of the header (the runtime's counters)
      Reduction::one_cell,    // the loop also reads the cell
      Reduction::none,        // its old value is read
      Reduction::accumulate,  // a 64-bit sum: nothing else touches its cell
      Reduction::none,        // a computed address
      Reduction::none,        // not an add
      Reduction::accumulate,  // two sums into one cell nothing else touches
      Reduction::accumulate,
      Reduction::none,  // a serial task
  };
  EXPECT_EQ(marks(text, &forest), want);
  // Without the sub the first sum is the only access to its cell. Without a
  // forest (kernels from text) any constant address counts as data.
  std::string no_sub = text;
  no_sub.replace(no_sub.find("      %20 = tree_atomic sub i32 @t0[%4] %3\n"),
                 std::string("      %20 = tree_atomic sub i32 @t0[%4] %3\n").size(), "");
  std::vector<Reduction> got = marks(no_sub, nullptr);
  ASSERT_EQ(got.size(), 9u);
  EXPECT_EQ(got[0], Reduction::accumulate);
  EXPECT_EQ(got[1], Reduction::accumulate);
}

// is_uniform_counter_add: the adds a GPU may make once for the threads that
// run side by side (a constant to a constant address, 32 bits, no
// reduction mark), whether or not the old value is read.
TEST(Reductions, CountersAreConstantAddsToAConstantWord) {
  const std::string text = R"(
kernel @counter_adds() stage lowered {
  task range_for $-1 "range_for" {
    %0 = const i32 0
    %1 = const i32 64
    %2 = range_for %0 %1 {
      %3 = loop_index i32 %2 0
      %4 = const u32 4
      %5 = const u32 1
      %6 = tree_atomic add u32 @t0[%4] %5
      %7 = binary add u32 %6 %5
      tree_store @t0[%7] %3 as i32
      %8 = const i32 2
      %9 = tree_atomic add i32 @t0[%4] %8
      %10 = tree_atomic add i32 @t0[%4] %3
      %11 = cast u32 %3
      %12 = tree_atomic add u32 @t0[%11] %5
      %13 = tree_atomic sub u32 @t0[%4] %5
      %14 = const i64 1
      %15 = tree_atomic add i64 @t0[%4] %14
      %16 = const u32 8
      %17 = tree_atomic reduce add i32 @t0[%16] %8
    }
  }
}
)";
  ParsedModule m = parse_module(text, "counters.ir");
  std::vector<bool> got;
  walk(m.kernels.at(0)->body(), [&](Stmt* s) {
    if (s->kind() == StmtKind::TreeAtomic) got.push_back(is_uniform_counter_add(s));
  });
  const std::vector<bool> want = {
      true,   // a ticket: its old value picks a word
      true,   // nothing reads its old value
      false,  // a value that differs per iteration
      false,  // a computed address
      false,  // not an add
      false,  // 64 bits
      false,  // marked as a reduction: summed its own way
  };
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace grove::ir
