// tests/ir/cse_test.cpp — eliminate_common_subexpressions, text in / text out:
// what is merged (pure statements dominated by an equal one) and what is not
// (sibling blocks, loads, atomics, different attributes).
#include "ir/passes/cse.h"

#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace grove::ir {
namespace {

using test::text;

std::string cse(std::string_view module, bool expect_change = true) {
  bool changed = false;
  std::string out = test::run_pass(module, eliminate_common_subexpressions, &changed);
  EXPECT_EQ(changed, expect_change);
  return out;
}

TEST(Cse, MergesEqualStatementsInOneBlockAndTheirUsers) {
  EXPECT_EQ(cse(R"(
kernel @k(a: i32, b: i32) stage typed {
  %0 = arg i32 0
  %1 = arg i32 1
  %2 = binary add i32 %0 %1
  %3 = binary add i32 %0 %1
  %4 = binary mul i32 %2 %3
  %5 = binary mul i32 %3 %2
  %6 = arg i32 0
  %7 = const i32 7
  %8 = const i32 7
  print "{} {} {} {} {}" %4 %5 %6 %7 %8
}
)"),
            text(R"(
kernel @k(a: i32, b: i32) stage typed {
  %0 = arg i32 0
  %1 = arg i32 1
  %2 = binary add i32 %0 %1
  %3 = binary mul i32 %2 %2
  %4 = const i32 7
  print "{} {} {} {} {}" %3 %3 %0 %4 %4
}
)"));
}

TEST(Cse, StatementsDifferingInTypeOpOrOperandsStay) {
  const char* kernel = R"(
kernel @k(a: i32, b: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = const u32 0
  %3 = const f32 0
  %4 = const f32 -0
  %5 = binary add i32 %0 %1
  %6 = binary sub i32 %0 %1
  %7 = binary sub i32 %1 %0
  %8 = cast f32 %0
  %9 = cast f64 %0
  %10 = unary neg i32 %0
  %11 = unary abs i32 %0
  %12 = arg i32 1
  print "{} {} {} {} {} {} {} {} {} {} {}" %2 %3 %4 %5 %6 %7 %8 %9 %10 %11 %12
}
)";
  EXPECT_EQ(cse(kernel, /*expect_change=*/false), text(kernel));
}

TEST(Cse, CommutativeOperandsMatchOnlyWhereTheOrderCannotShow) {
  EXPECT_EQ(cse(R"(
kernel @k(a: i32, b: i32, x: f32, y: f32) stage typed {
  %0 = arg i32 0
  %1 = arg i32 1
  %2 = arg f32 2
  %3 = arg f32 3
  %4 = binary add i32 %0 %1
  %5 = binary add i32 %1 %0
  %6 = binary min i32 %1 %0
  %7 = binary min i32 %0 %1
  %8 = binary add f32 %2 %3
  %9 = binary add f32 %3 %2
  %10 = binary cmp_eq u1 %2 %3
  %11 = binary cmp_eq u1 %3 %2
  %12 = binary min f32 %2 %3
  %13 = binary min f32 %3 %2
  print "{} {} {} {} {} {} {} {} {} {}" %4 %5 %6 %7 %8 %9 %10 %11 %12 %13
}
)"),
            text(R"(
kernel @k(a: i32, b: i32, x: f32, y: f32) stage typed {
  %0 = arg i32 0
  %1 = arg i32 1
  %2 = arg f32 2
  %3 = arg f32 3
  %4 = binary add i32 %0 %1
  %5 = binary min i32 %1 %0
  %6 = binary add f32 %2 %3
  %7 = binary add f32 %3 %2
  %8 = binary cmp_eq u1 %2 %3
  %9 = binary min f32 %2 %3
  %10 = binary min f32 %3 %2
  print "{} {} {} {} {} {} {} {} {} {}" %4 %4 %5 %5 %6 %7 %8 %8 %9 %10
}
)"));
}

TEST(Cse, ReusesValuesOfEnclosingBlocksButNotOfNestedOnes) {
  EXPECT_EQ(cse(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = const i32 8
  %3 = binary mul i32 %0 %0
  %4 = range_for %1 %2 {
    %5 = loop_index i32 %4 0
    %6 = binary mul i32 %0 %0
    %7 = const i32 8
    %8 = binary cmp_lt u1 %5 %7
    if %8 {
      %9 = binary mul i32 %0 %0
      %10 = loop_index i32 %4 0
      %11 = binary add i32 %9 %10
      print "{}" %11
    } else {
    }
    %12 = binary add i32 %6 %5
    print "{}" %12
  }
}
)"),
            text(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = const i32 8
  %3 = binary mul i32 %0 %0
  %4 = range_for %1 %2 {
    %5 = loop_index i32 %4 0
    %6 = binary cmp_lt u1 %5 %2
    if %6 {
      %7 = binary add i32 %3 %5
      print "{}" %7
    } else {
    }
    %8 = binary add i32 %3 %5
    print "{}" %8
  }
}
)"));
}

TEST(Cse, SiblingBlocksDoNotShareValues) {
  const char* kernel = R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = binary cmp_gt u1 %0 %1
  if %2 {
    %3 = binary mul i32 %0 %0
    print "{}" %3
  } else {
    %4 = binary mul i32 %0 %0
    print "{}" %4
  }
  %5 = const i32 2
  while {
    %6 = binary add i32 %0 %0
    print "{}" %6
    break
  }
  %7 = range_for %1 %5 {
    %8 = binary add i32 %0 %0
    %9 = loop_index i32 %7 0
    print "{} {}" %8 %9
  }
  %10 = binary mul i32 %0 %0
  print "{}" %10
}
)";
  EXPECT_EQ(cse(kernel, /*expect_change=*/false), text(kernel));
}

TEST(Cse, LoadsAllocasAndAtomicsAreNeverMerged) {
  EXPECT_EQ(cse(R"(
field @x : i32[4]

kernel @k(i: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 1
  %2 = binary add i32 %0 %1
  %3 = field_load i32 @x[%2]
  %4 = binary add i32 %0 %1
  %5 = field_load i32 @x[%4]
  %6 = field_atomic add i32 @x[%4] %3
  %7 = field_atomic add i32 @x[%2] %3
  %8 = alloca i32
  %9 = alloca i32
  local_store %8 %5
  %10 = local_load i32 %8
  %11 = local_load i32 %8
  %12 = local_load i32 %9
  print "{} {} {} {} {}" %6 %7 %10 %11 %12
}
)"),
            text(R"(
kernel @k(i: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 1
  %2 = binary add i32 %0 %1
  %3 = field_load i32 @x[%2]
  %4 = field_load i32 @x[%2]
  %5 = field_atomic add i32 @x[%2] %3
  %6 = field_atomic add i32 @x[%2] %3
  %7 = alloca i32
  %8 = alloca i32
  local_store %7 %4
  %9 = local_load i32 %7
  %10 = local_load i32 %7
  %11 = local_load i32 %8
  print "{} {} {} {} {}" %5 %6 %9 %10 %11
}
)"));
}

TEST(Cse, LoopIndicesMergeOnlyForTheSameLoopAndAxis) {
  EXPECT_EQ(cse(R"(
field @m : f32[4, 4]

kernel @k() stage typed {
  %0 = struct_for @m {
    %1 = loop_index i32 %0 0
    %2 = loop_index i32 %0 1
    %3 = loop_index i32 %0 0
    %4 = range_for %1 %2 {
      %5 = loop_index i32 %4 0
      %6 = loop_index i32 %0 1
      print "{} {} {}" %3 %5 %6
    }
  }
}
)"),
            text(R"(
kernel @k() stage typed {
  %0 = struct_for @m {
    %1 = loop_index i32 %0 0
    %2 = loop_index i32 %0 1
    %3 = range_for %1 %2 {
      %4 = loop_index i32 %3 0
      print "{} {} {}" %1 %4 %2
    }
  }
}
)"));
}

TEST(Cse, CastsSelectsAndUnaryChainsCollapse) {
  EXPECT_EQ(cse(R"(
kernel @k(a: i32, b: f32) stage typed {
  %0 = arg i32 0
  %1 = arg f32 1
  %2 = cast f32 %0
  %3 = binary cmp_lt u1 %2 %1
  %4 = select f32 %3 %2 %1
  %5 = cast f32 %0
  %6 = binary cmp_lt u1 %5 %1
  %7 = select f32 %6 %5 %1
  %8 = select f32 %6 %1 %5
  %9 = unary sqrt f32 %7
  %10 = unary sqrt f32 %4
  print "{} {} {}" %8 %9 %10
}
)"),
            text(R"(
kernel @k(a: i32, b: f32) stage typed {
  %0 = arg i32 0
  %1 = arg f32 1
  %2 = cast f32 %0
  %3 = binary cmp_lt u1 %2 %1
  %4 = select f32 %3 %2 %1
  %5 = select f32 %3 %1 %2
  %6 = unary sqrt f32 %4
  print "{} {} {}" %5 %6 %6
}
)"));
}

TEST(Cse, ElseBlocksAndLoopBodiesSeeValuesDefinedBeforeThem) {
  EXPECT_EQ(cse(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = binary mul i32 %0 %0
  %2 = binary cmp_gt u1 %1 %0
  if %2 {
  } else {
    %3 = binary mul i32 %0 %0
    while {
      %4 = binary cmp_gt u1 %3 %0
      if %4 {
        break
      } else {
      }
      print "{}" %3
    }
  }
}
)"),
            text(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = binary mul i32 %0 %0
  %2 = binary cmp_gt u1 %1 %0
  if %2 {
  } else {
    while {
      if %2 {
        break
      } else {
      }
      print "{}" %1
    }
  }
}
)"));
}

TEST(Cse, TreeAndSNodeStatementsAreNeverMerged) {
  const std::string module = text(R"(
kernel @k(a: i32) stage lowered {
  task serial $-1 "main" {
    %0 = arg i32 0
    %1 = const u32 4
    %2 = tree_load i32 @t0[%1]
    %3 = tree_load i32 @t0[%1]
    tree_store @t0[%1] %0 as i32
    tree_store @t0[%1] %0 as i32
    %4 = tree_atomic add i32 @t0[%1] %0
    %5 = tree_atomic add i32 @t0[%1] %0
    %6 = tree_cas u32 @t0[%1] %1 %1
    %7 = tree_cas u32 @t0[%1] %1 %1
    print "{} {} {} {} {} {}" %2 %3 %4 %5 %6 %7
  }
}
)");
  EXPECT_EQ(cse(module, false), module);
  const std::string snode = text(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = snode_op is_active u1 $S1[%0]
  snode_op activate $S1[%0]
  %2 = snode_op is_active u1 $S1[%0]
  %3 = snode_op length i32 $S2[]
  %4 = snode_op length i32 $S2[]
  print "{} {} {} {}" %1 %2 %3 %4
}
)");
  EXPECT_EQ(cse(snode, false), snode);
}

TEST(Cse, TasksAreBlocksThatDoNotShareValues) {
  EXPECT_EQ(cse(R"(
kernel @k() stage offloaded {
  task serial $-1 "a" {
    %0 = const u32 4
    %1 = const u32 4
    %2 = tree_load i32 @t0[%1]
    print "{}" %2
  }
  task range_for $-1 "b" {
    %3 = const u32 4
    %4 = tree_load i32 @t0[%3]
    %5 = const i32 0
    %6 = range_for %5 %4 {
      %7 = const u32 4
      %8 = const i32 0
      %9 = tree_load i32 @t0[%7]
      %10 = binary add i32 %9 %8
      print "{}" %10
    }
  }
}
)"),
            text(R"(
kernel @k() stage offloaded {
  task serial $-1 "a" {
    %0 = const u32 4
    %1 = tree_load i32 @t0[%0]
    print "{}" %1
  }
  task range_for $-1 "b" {
    %2 = const u32 4
    %3 = tree_load i32 @t0[%2]
    %4 = const i32 0
    %5 = range_for %4 %3 {
      %6 = tree_load i32 @t0[%2]
      %7 = binary add i32 %6 %4
      print "{}" %7
    }
  }
}
)"));
}

}  // namespace
}  // namespace grove::ir
