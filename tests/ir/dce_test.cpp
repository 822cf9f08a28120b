// tests/ir/dce_test.cpp — eliminate_dead_code, text in / text out: unused
// chains, dead allocas, unreachable code, empty ifs; side effects stay.
#include "ir/passes/dce.h"

#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace grove::ir {
namespace {

using test::text;

std::string dce(std::string_view module, bool expect_change = true) {
  bool changed = false;
  std::string out = test::run_pass(module, eliminate_dead_code, &changed);
  EXPECT_EQ(changed, expect_change);
  return out;
}

TEST(Dce, RemovesUnusedChains) {
  EXPECT_EQ(dce(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 2
  %2 = binary mul i32 %0 %1
  %3 = cast f32 %2
  %4 = unary sqrt f32 %3
  %5 = binary add i32 %0 %1
  print "{}" %5
}
)"),
            text(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 2
  %2 = binary add i32 %0 %1
  print "{}" %2
}
)"));
}

TEST(Dce, KeepsStoresAtomicsLoopsAndPrints) {
  EXPECT_EQ(dce(R"(
field @x : i32[4]

kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = const i32 4
  field_store @x[%1] %0
  %3 = field_atomic add i32 @x[%1] %0
  %4 = range_for %1 %2 {
  }
  %5 = struct_for @x {
  }
  while {
    break
  }
  print "done"
  %6 = field_load i32 @x[%1]
}
)"),
            text(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = const i32 4
  field_store @x[%1] %0
  %3 = field_atomic add i32 @x[%1] %0
  %4 = range_for %1 %2 {
  }
  %5 = struct_for @x {
  }
  while {
    break
  }
  print "done"
}
)"));
}

TEST(Dce, RemovesAllocasThatAreNeverLoadedWithTheirStores) {
  EXPECT_EQ(dce(R"(
kernel @k(a: f32) stage typed {
  %0 = arg f32 0
  %1 = alloca f32
  %2 = unary sqrt f32 %0
  local_store %1 %2
  %3 = alloca f32
  local_store %3 %0
  %4 = local_load f32 %3
  print "{}" %4
}
)"),
            text(R"(
kernel @k(a: f32) stage typed {
  %0 = arg f32 0
  %1 = alloca f32
  local_store %1 %0
  %2 = local_load f32 %1
  print "{}" %2
}
)"));
}

TEST(Dce, AllocaWhoseLoadsAreUnusedGoesAtTheFixedPoint) {
  EXPECT_EQ(dce(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = alloca i32
  local_store %1 %0
  %2 = const i32 0
  %3 = const i32 4
  %4 = range_for %2 %3 {
    %5 = local_load i32 %1
    %6 = binary add i32 %5 %0
    local_store %1 %0
  }
  %7 = local_load i32 %1
  %8 = cast f32 %7
}
)"),
            text(R"(
kernel @k(a: i32) stage typed {
  %0 = const i32 0
  %1 = const i32 4
  %2 = range_for %0 %1 {
  }
}
)"));
}

TEST(Dce, DropsStatementsAfterBreakOrContinueInTheSameBlockOnly) {
  EXPECT_EQ(dce(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = const i32 4
  while {
    %3 = range_for %1 %2 {
      %4 = loop_index i32 %3 0
      %5 = binary cmp_lt u1 %4 %0
      if %5 {
        continue
        print "never {}" %4
      } else {
      }
      print "{}" %4
    }
    break
    print "never"
    %6 = range_for %1 %2 {
    }
  }
}
)"),
            text(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = const i32 4
  while {
    %3 = range_for %1 %2 {
      %4 = loop_index i32 %3 0
      %5 = binary cmp_lt u1 %4 %0
      if %5 {
        continue
      } else {
      }
      print "{}" %4
    }
    break
  }
}
)"));
}

TEST(Dce, RemovesIfsWhoseBlocksAreOrBecomeEmpty) {
  EXPECT_EQ(dce(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 3
  %2 = binary cmp_lt u1 %0 %1
  if %2 {
  } else {
  }
  %3 = binary cmp_gt u1 %0 %1
  if %3 {
    %4 = binary mul i32 %0 %0
  } else {
    if %2 {
    } else {
    }
  }
  %5 = binary cmp_eq u1 %0 %1
  if %5 {
  } else {
    print "kept"
  }
}
)"),
            text(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 3
  %2 = binary cmp_eq u1 %0 %1
  if %2 {
  } else {
    print "kept"
  }
}
)"));
}

TEST(Dce, UnusedLoadsGoButAtomicsInLoopsStay) {
  EXPECT_EQ(dce(R"(
field @x : f32[8]

kernel @k() stage typed {
  %0 = const i32 0
  %1 = const i32 8
  %2 = range_for %0 %1 {
    %3 = loop_index i32 %2 0
    %4 = field_load f32 @x[%3]
    %5 = const f32 1
    %6 = field_atomic max f32 @x[%3] %5
    %7 = binary add f32 %4 %6
  }
}
)"),
            text(R"(
kernel @k() stage typed {
  %0 = const i32 0
  %1 = const i32 8
  %2 = range_for %0 %1 {
    %3 = loop_index i32 %2 0
    %4 = const f32 1
    %5 = field_atomic max f32 @x[%3] %4
  }
}
)"));
}

TEST(Dce, LiveCodeIsUnchanged) {
  const char* kernel = R"(
field @x : f32[4]

kernel @k(a: f32) stage frontend {
  %0 = arg f32 0
  %1 = alloca f32
  local_store %1 %0
  %2 = const i32 0
  %3 = const i32 4
  %4 = range_for %2 %3 {
    %5 = loop_index i32 %4 0
    %6 = local_load f32 %1
    field_store @x[%5] %6
  }
  while {
  }
}
)";
  EXPECT_EQ(dce(kernel, /*expect_change=*/false), text(R"(
kernel @k(a: f32) stage frontend {
  %0 = arg f32 0
  %1 = alloca f32
  local_store %1 %0
  %2 = const i32 0
  %3 = const i32 4
  %4 = range_for %2 %3 {
    %5 = loop_index i32 %4 0
    %6 = local_load f32 %1
    field_store @x[%5] %6
  }
  while {
  }
}
)"));
}

TEST(Dce, UnusedTreeLoadsGoButTreeWritesAndSNodeChangesStay) {
  EXPECT_EQ(dce(R"(
kernel @k(a: i32) stage lowered {
  task serial $-1 "main" {
    %0 = arg i32 0
    %1 = const u32 4
    %2 = tree_load f32 @t0[%1] as f16
    %3 = tree_load i32 @t0[%1]
    %4 = binary add i32 %3 %0
    tree_store @t0[%1] %0 as i32
    %5 = tree_atomic add i32 @t0[%1] %0
    %6 = tree_cas u32 @t0[%1] %1 %1
    %7 = tree_load i32 @t1[%1]
    print "{}" %7
  }
}
)"),
            text(R"(
kernel @k(a: i32) stage lowered {
  task serial $-1 "main" {
    %0 = arg i32 0
    %1 = const u32 4
    tree_store @t0[%1] %0 as i32
    %2 = tree_atomic add i32 @t0[%1] %0
    %3 = tree_cas u32 @t0[%1] %1 %1
    %4 = tree_load i32 @t1[%1]
    print "{}" %4
  }
}
)"));
  // Unused is_active/length go; activate, deactivate and append change the tree.
  EXPECT_EQ(dce(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = snode_op is_active u1 $S1[%0]
  %2 = snode_op length i32 $S2[]
  snode_op activate $S1[%0]
  snode_op deactivate $S1[%0]
  %3 = snode_op append i32 $S2[] %0
}
)"),
            text(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  snode_op activate $S1[%0]
  snode_op deactivate $S1[%0]
  %1 = snode_op append i32 $S2[] %0
}
)"));
}

TEST(Dce, TasksStayEvenWhenEmptyAndTheirDeadStatementsGo) {
  EXPECT_EQ(dce(R"(
kernel @k() stage offloaded {
  task serial $-1 "empty" {
  }
  task range_for $-1 "r" {
    %0 = const u32 0
    %1 = tree_load i32 @t0[%0]
    %2 = const i32 0
    %3 = const i32 8
    %4 = range_for %2 %3 {
      %5 = tree_load i32 @t0[%0]
    }
  }
}
)"),
            text(R"(
kernel @k() stage offloaded {
  task serial $-1 "empty" {
  }
  task range_for $-1 "r" {
    %0 = const i32 0
    %1 = const i32 8
    %2 = range_for %0 %1 {
    }
  }
}
)"));
}

}  // namespace
}  // namespace grove::ir
