// tests/ir/merge_ifs_test.cpp — merge_adjacent_ifs, text in / text out:
// ifs on one condition with only values between them merge (then and else
// blocks in order, the values before them); anything else between, another
// condition, or a nested pair merges only where it stands.
#include "ir/passes/merge_ifs.h"

#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace grove::ir {
namespace {

using test::text;

std::string merge(std::string_view module, bool expect_change = true) {
  bool changed = false;
  std::string out = test::run_pass(module, merge_adjacent_ifs, &changed);
  EXPECT_EQ(changed, expect_change);
  return out;
}

TEST(MergeIfs, IfsOnOneConditionWithValuesBetweenBecomeOne) {
  EXPECT_EQ(merge(R"(
field @x : i32[4]
field @y : f32[4]

kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = binary cmp_gt u1 %0 %1
  if %2 {
    field_store @x[%1] %0
  } else {
    print "a"
  }
  %3 = const i32 1
  %4 = binary add i32 %0 %3
  if %2 {
    field_store @x[%3] %4
  } else {
  }
  %5 = cast f32 %4
  if %2 {
    %6 = field_atomic add f32 @y[%1] %5
  } else {
    print "b"
  }
}
)"),
            text(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = binary cmp_gt u1 %0 %1
  %3 = const i32 1
  %4 = binary add i32 %0 %3
  %5 = cast f32 %4
  if %2 {
    field_store @x[%1] %0
    field_store @x[%3] %4
    %6 = field_atomic add f32 @y[%1] %5
  } else {
    print "a"
    print "b"
  }
}
)"));
}

TEST(MergeIfs, LoadsEffectsAndOtherConditionsKeepIfsApart) {
  const char* kept = R"(
field @x : i32[4]

kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = binary cmp_gt u1 %0 %1
  %3 = binary cmp_lt u1 %0 %1
  if %2 {
    field_store @x[%1] %0
  } else {
  }
  %4 = field_load i32 @x[%1]
  if %2 {
    field_store @x[%1] %4
  } else {
  }
  print "between"
  if %2 {
    field_store @x[%1] %1
  } else {
  }
  if %3 {
    field_store @x[%1] %0
  } else {
  }
}
)";
  EXPECT_EQ(merge(kept, false), print_kernel(*parse_module(text(kept), "test").kernels.front()));
}

TEST(MergeIfs, PairsInsideBlocksMergeToo) {
  EXPECT_EQ(merge(R"(
field @x : i32[4]

kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = const i32 4
  %3 = range_for %1 %2 {
    %4 = loop_index i32 %3 0
    %5 = binary cmp_lt u1 %4 %0
    if %5 {
      field_store @x[%4] %0
    } else {
    }
    if %5 {
      %6 = field_atomic add i32 @x[%1] %4
    } else {
    }
  }
}
)"),
            text(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = const i32 4
  %3 = range_for %1 %2 {
    %4 = loop_index i32 %3 0
    %5 = binary cmp_lt u1 %4 %0
    if %5 {
      field_store @x[%4] %0
      %6 = field_atomic add i32 @x[%1] %4
    } else {
    }
  }
}
)"));
}

// `unlikely` speaks of the condition, which both ifs share: the merged
// if is unlikely when either was.
TEST(MergeIfs, AnUnlikelyIfMakesTheMergedOneUnlikely) {
  EXPECT_EQ(merge(R"(
field @x : i32[4]

kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = binary cmp_gt u1 %0 %1
  if %2 {
    field_store @x[%1] %0
  } else {
  }
  if unlikely %2 {
    field_store @x[%0] %1
  } else {
  }
}
)"),
            text(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = binary cmp_gt u1 %0 %1
  if unlikely %2 {
    field_store @x[%1] %0
    field_store @x[%0] %1
  } else {
  }
}
)"));
}

}  // namespace
}  // namespace grove::ir
