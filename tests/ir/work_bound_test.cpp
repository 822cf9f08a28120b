// tests/ir/work_bound_test.cpp — ir::work_bound: the most statements a
// launch runs, counted by hand for each kernel below, and -1 wherever a
// loop's count is not known before the launch.
#include <gtest/gtest.h>

#include <string>

#include "ir/snode.h"
#include "ir/work_bound.h"
#include "pass_test_util.h"

namespace grove::ir {
namespace {

// A forest where field 0 (@x, 1-D) is placed under a pointer of 16 cells
// with a dense of 8 under each: 128 cells its struct_for can reach.
SNodeForest pointer_forest() {
  SNodeForest forest;
  const int t = forest.add_tree();
  const int pointer = forest.add_child(forest.tree(t).root, SNodeType::pointer, {0}, {16});
  const int dense = forest.add_child(pointer, SNodeType::dense, {0}, {8});
  forest.add_place(dense, 0, DataType::f32, "x");
  return forest;
}

// The bound of kernel @k(`params`) over field @x (f32, `extent` cells)
// whose body is `body`.
int64_t bound_of(const std::string& body, const std::string& params = "", int extent = 64,
                 const SNodeForest& forest = SNodeForest()) {
  const std::string module = "field @x : f32[" + std::to_string(extent) + "]\n\nkernel @k(" + params +
                             ") stage frontend {\n" + test::text(body) + "}\n";
  ParsedModule m = parse_module(module, "work_bound_test");
  return work_bound(*m.kernels.front(), forest);
}

TEST(WorkBound, CountsALoopsBodyOncePerIterationWithBoundsMadeOfConstants) {
  // 2 constants, 2 binaries (the end is 4 * 4 = 16, the begin 2 - 2 = 0),
  // the loop (1), and its body of 3 statements plus the loop's own step,
  // 16 times: 5 + 16 * 4 = 69.
  EXPECT_EQ(bound_of(R"(
  %0 = const i32 4
  %1 = const i32 2
  %2 = binary mul i32 %0 %0
  %3 = binary sub i32 %1 %1
  %4 = range_for %3 %2 {
    %5 = loop_index i32 %4 0
    %6 = cast f32 %5
    field_store @x[%5] %6
  }
)"),
            4 + 1 + 16 * 4);
}

TEST(WorkBound, MultipliesNestedLoopsAndTakesBothBranchesOfAnIf) {
  // The outer loop's body: the inner loop (1 + 5 * (3 + 1) = 21), a
  // loop_index (1) and the if with a print in each branch (3); with the
  // step, 26, 3 times: 78, with 3 constants and the outer loop itself: 82.
  EXPECT_EQ(bound_of(R"(
  %0 = const i32 0
  %1 = const i32 3
  %2 = const i32 5
  %3 = range_for %0 %1 {
    %4 = range_for %0 %2 {
      %5 = loop_index i32 %4 0
      %6 = cast f32 %5
      field_store @x[%5] %6
    }
    %7 = loop_index i32 %3 0
    if %7 {
      print "a"
    } else {
      print "b"
    }
  }
)"),
            82);
}

TEST(WorkBound, IsUnknownForALoopUpToAnArgumentOrAWhile) {
  EXPECT_EQ(bound_of(R"(
  %0 = const i32 0
  %1 = arg i32 0
  %2 = range_for %0 %1 {
    %3 = loop_index i32 %2 0
    %4 = cast f32 %3
    field_store @x[%3] %4
  }
)",
                     "n: i32"),
            -1);
  EXPECT_EQ(bound_of(R"(
  %0 = const i32 0
  while {
    break
  }
)"),
            -1);
}

TEST(WorkBound, AStructForCountsEveryCellItsNodeCanHave) {
  // 128 cells (16 pointer cells of 8), each running the body's 3
  // statements and the step: 1 + 128 * 4.
  const SNodeForest forest = pointer_forest();
  EXPECT_EQ(bound_of(R"(
  %0 = struct_for @x {
    %1 = loop_index i32 %0 0
    %2 = cast f32 %1
    field_store @x[%1] %2
  }
)",
                     "", 128, forest),
            1 + 128 * 4);
}

TEST(WorkBound, SaturatesRatherThanOverflows) {
  // 2^31 - 1 iterations of 2^31 - 1 iterations of 2^31 - 1 iterations: past
  // 2^62, which stands for "at least that".
  EXPECT_EQ(bound_of(R"(
  %0 = const i32 0
  %1 = const i32 2147483647
  %2 = range_for %0 %1 {
    %3 = range_for %0 %1 {
      %4 = range_for %0 %1 {
        print "."
      }
    }
  }
)"),
            int64_t{1} << 62);
}

}  // namespace
}  // namespace grove::ir
