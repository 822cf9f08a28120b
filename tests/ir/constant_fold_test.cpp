// tests/ir/constant_fold_test.cpp — constant_fold, text in / text out: every op
// family folds with docs/ir.md semantics, exact identities, constant ifs.
// Folded statements become constants in place; the constants they read stay
// (removing those is dead-code elimination's job).
#include "ir/passes/constant_fold.h"

#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace grove::ir {
namespace {

using test::text;

std::string folded(std::string_view module, bool expect_change = true) {
  bool changed = false;
  std::string out = test::run_pass(module, constant_fold, &changed);
  EXPECT_EQ(changed, expect_change);
  return out;
}

TEST(ConstantFold, IntegerArithmetic) {
  EXPECT_EQ(folded(R"(
kernel @k() stage typed {
  %0 = const i32 7
  %1 = const i32 -3
  %2 = binary add i32 %0 %1
  %3 = binary sub i32 %1 %0
  %4 = binary mul i32 %0 %1
  %5 = binary div i32 %0 %1
  %6 = binary mod i32 %1 %0
  %7 = binary min i32 %0 %1
  %8 = binary max i32 %0 %1
  %9 = binary pow i32 %1 %0
  print "{} {} {} {} {} {} {} {}" %2 %3 %4 %5 %6 %7 %8 %9
}
)"),
            text(R"(
kernel @k() stage typed {
  %0 = const i32 7
  %1 = const i32 -3
  %2 = const i32 4
  %3 = const i32 -10
  %4 = const i32 -21
  %5 = const i32 -2
  %6 = const i32 -3
  %7 = const i32 -3
  %8 = const i32 7
  %9 = const i32 -2187
  print "{} {} {} {} {} {} {} {}" %2 %3 %4 %5 %6 %7 %8 %9
}
)"));
}

// x % m is x where x is a range_for's index (or its cast to u32) and the
// loop's constant bounds lie in [0, m]: a field's index wrapped to its
// node's extent inside a loop over the field. Not for a bound past m, a
// begin below 0, bounds that are not constants, or another value.
TEST(ConstantFold, ModOfALoopIndexBelowTheDivisorIsTheIndex) {
  EXPECT_EQ(folded(R"(
kernel @k(n: i32) stage typed {
  %0 = const i32 0
  %1 = const i32 64
  %2 = arg i32 0
  %3 = const i32 -1
  %4 = range_for %0 %1 {
    %5 = loop_index i32 %4 0
    %6 = cast u32 %5
    %7 = const u32 64
    %8 = binary mod u32 %6 %7
    %9 = binary mod i32 %5 %1
    %10 = const u32 63
    %11 = binary mod u32 %6 %10
    %12 = binary add i32 %5 %5
    %13 = binary mod i32 %12 %1
    print "{} {} {} {}" %8 %9 %11 %13
  }
  %14 = range_for %0 %2 {
    %15 = loop_index i32 %14 0
    %16 = binary mod i32 %15 %1
    print "{}" %16
  }
  %17 = range_for %3 %1 {
    %18 = loop_index i32 %17 0
    %19 = binary mod i32 %18 %1
    print "{}" %19
  }
}
)"),
            text(R"(
kernel @k(n: i32) stage typed {
  %0 = const i32 0
  %1 = const i32 64
  %2 = arg i32 0
  %3 = const i32 -1
  %4 = range_for %0 %1 {
    %5 = loop_index i32 %4 0
    %6 = cast u32 %5
    %7 = const u32 64
    %8 = const u32 63
    %9 = binary mod u32 %6 %8
    %10 = binary add i32 %5 %5
    %11 = binary mod i32 %10 %1
    print "{} {} {} {}" %6 %5 %9 %11
  }
  %12 = range_for %0 %2 {
    %13 = loop_index i32 %12 0
    %14 = binary mod i32 %13 %1
    print "{}" %14
  }
  %15 = range_for %3 %1 {
    %16 = loop_index i32 %15 0
    %17 = binary mod i32 %16 %1
    print "{}" %17
  }
}
)"));
}

TEST(ConstantFold, OverflowWrapsAndDivisionByZeroGivesZero) {
  EXPECT_EQ(folded(R"(
kernel @k() stage typed {
  %0 = const i32 2147483647
  %1 = const i32 1
  %2 = const i32 0
  %3 = const i32 -2147483648
  %4 = const i32 -1
  %5 = binary add i32 %0 %1
  %6 = binary div i32 %1 %2
  %7 = binary mod i32 %0 %2
  %8 = binary div i32 %3 %4
  %9 = const u8 200
  %10 = const u8 100
  %11 = binary add u8 %9 %10
  %12 = binary sub u8 %10 %9
  print "{} {} {} {} {} {}" %5 %6 %7 %8 %11 %12
}
)"),
            text(R"(
kernel @k() stage typed {
  %0 = const i32 2147483647
  %1 = const i32 1
  %2 = const i32 0
  %3 = const i32 -2147483648
  %4 = const i32 -1
  %5 = const i32 -2147483648
  %6 = const i32 0
  %7 = const i32 0
  %8 = const i32 0
  %9 = const u8 200
  %10 = const u8 100
  %11 = const u8 44
  %12 = const u8 156
  print "{} {} {} {} {} {}" %5 %6 %7 %8 %11 %12
}
)"));
}

TEST(ConstantFold, ShiftCountsAreTakenModuloTheWidth) {
  EXPECT_EQ(folded(R"(
kernel @k() stage typed {
  %0 = const i32 1
  %1 = const i32 33
  %2 = binary shl i32 %0 %1
  %3 = const i32 -8
  %4 = binary shr i32 %3 %0
  %5 = const u32 4294967288
  %6 = const u32 1
  %7 = binary shr u32 %5 %6
  %8 = const i64 1
  %9 = const i64 65
  %10 = binary shl i64 %8 %9
  %11 = const u8 1
  %12 = const u8 9
  %13 = binary shl u8 %11 %12
  print "{} {} {} {} {}" %2 %4 %7 %10 %13
}
)"),
            text(R"(
kernel @k() stage typed {
  %0 = const i32 1
  %1 = const i32 33
  %2 = const i32 2
  %3 = const i32 -8
  %4 = const i32 -4
  %5 = const u32 4294967288
  %6 = const u32 1
  %7 = const u32 2147483644
  %8 = const i64 1
  %9 = const i64 65
  %10 = const i64 2
  %11 = const u8 1
  %12 = const u8 9
  %13 = const u8 2
  print "{} {} {} {} {}" %2 %4 %7 %10 %13
}
)"));
}

TEST(ConstantFold, BitOpsAndIntegerUnaryOps) {
  EXPECT_EQ(folded(R"(
kernel @k() stage typed {
  %0 = const i32 12
  %1 = const i32 10
  %2 = binary bit_and i32 %0 %1
  %3 = binary bit_or i32 %0 %1
  %4 = binary bit_xor i32 %0 %1
  %5 = unary bit_not i32 %0
  %6 = unary neg i32 %0
  %7 = const i32 -2147483648
  %8 = unary abs i32 %7
  %9 = unary neg i32 %7
  %10 = const u8 5
  %11 = unary bit_not u8 %10
  print "{} {} {} {} {} {} {} {}" %2 %3 %4 %5 %6 %8 %9 %11
}
)"),
            text(R"(
kernel @k() stage typed {
  %0 = const i32 12
  %1 = const i32 10
  %2 = const i32 8
  %3 = const i32 14
  %4 = const i32 6
  %5 = const i32 -13
  %6 = const i32 -12
  %7 = const i32 -2147483648
  %8 = const i32 -2147483648
  %9 = const i32 -2147483648
  %10 = const u8 5
  %11 = const u8 250
  print "{} {} {} {} {} {} {} {}" %2 %3 %4 %5 %6 %8 %9 %11
}
)"));
}

TEST(ConstantFold, ComparisonsAndLogicGiveU1) {
  EXPECT_EQ(folded(R"(
kernel @k() stage typed {
  %0 = const i32 -1
  %1 = const i32 2
  %2 = binary cmp_lt u1 %0 %1
  %3 = binary cmp_ge u1 %0 %1
  %4 = binary cmp_eq u1 %0 %0
  %5 = const u32 4294967295
  %6 = const u32 2
  %7 = binary cmp_lt u1 %5 %6
  %8 = binary logic_and u1 %2 %4
  %9 = binary logic_or u1 %3 %7
  %10 = unary logic_not u1 %3
  %11 = const f32 nan
  %12 = binary cmp_eq u1 %11 %11
  %13 = binary cmp_ne u1 %11 %11
  print "{} {} {} {} {} {} {} {} {}" %2 %3 %4 %7 %8 %9 %10 %12 %13
}
)"),
            text(R"(
kernel @k() stage typed {
  %0 = const i32 -1
  %1 = const i32 2
  %2 = const u1 1
  %3 = const u1 0
  %4 = const u1 1
  %5 = const u32 4294967295
  %6 = const u32 2
  %7 = const u1 0
  %8 = const u1 1
  %9 = const u1 0
  %10 = const u1 1
  %11 = const f32 nan
  %12 = const u1 0
  %13 = const u1 1
  print "{} {} {} {} {} {} {} {} {}" %2 %3 %4 %7 %8 %9 %10 %12 %13
}
)"));
}

TEST(ConstantFold, FloatArithmeticIsExactlyTheInterpreters) {
  EXPECT_EQ(folded(R"(
kernel @k() stage typed {
  %0 = const f64 0.1
  %1 = const f64 0.2
  %2 = binary add f64 %0 %1
  %3 = const f32 1
  %4 = const f32 0
  %5 = binary div f32 %3 %4
  %6 = unary neg f32 %3
  %7 = binary div f32 %6 %4
  %8 = const f32 2
  %9 = unary sqrt f32 %8
  %10 = const f32 -2.5
  %11 = unary round f32 %10
  %12 = unary floor f32 %10
  %13 = unary ceil f32 %10
  %14 = binary mod f32 %10 %8
  %15 = binary min f32 %10 %8
  print "{} {} {} {} {} {} {} {} {}" %2 %5 %7 %9 %11 %12 %13 %14 %15
}
)"),
            text(R"(
kernel @k() stage typed {
  %0 = const f64 0.1
  %1 = const f64 0.2
  %2 = const f64 0.30000000000000004
  %3 = const f32 1
  %4 = const f32 0
  %5 = const f32 inf
  %6 = const f32 -1
  %7 = const f32 -inf
  %8 = const f32 2
  %9 = const f32 1.4142135
  %10 = const f32 -2.5
  %11 = const f32 -3
  %12 = const f32 -3
  %13 = const f32 -2
  %14 = const f32 -0.5
  %15 = const f32 -2.5
  print "{} {} {} {} {} {} {} {} {}" %2 %5 %7 %9 %11 %12 %13 %14 %15
}
)"));
}

TEST(ConstantFold, CastsTruncateSaturateAndWrap) {
  EXPECT_EQ(folded(R"(
kernel @k() stage typed {
  %0 = const f32 2.7
  %1 = cast i32 %0
  %2 = const f32 -2.7
  %3 = cast i32 %2
  %4 = const f32 1e10
  %5 = cast i32 %4
  %6 = const f32 nan
  %7 = cast i32 %6
  %8 = const i32 -1
  %9 = cast u8 %8
  %10 = cast u1 %8
  %11 = cast f64 %0
  %12 = const u64 18446744073709551615
  %13 = cast f32 %12
  %14 = const f32 -0.5
  %15 = cast u1 %14
  %16 = cast i32 %8
  print "{} {} {} {} {} {} {} {} {} {}" %1 %3 %5 %7 %9 %10 %11 %13 %15 %16
}
)"),
            text(R"(
kernel @k() stage typed {
  %0 = const f32 2.7
  %1 = const i32 2
  %2 = const f32 -2.7
  %3 = const i32 -2
  %4 = const f32 1e+10
  %5 = const i32 2147483647
  %6 = const f32 nan
  %7 = const i32 0
  %8 = const i32 -1
  %9 = const u8 255
  %10 = const u1 1
  %11 = const f64 2.700000047683716
  %12 = const u64 18446744073709551615
  %13 = const f32 1.8446744e+19
  %14 = const f32 -0.5
  %15 = const u1 1
  print "{} {} {} {} {} {} {} {} {} {}" %1 %3 %5 %7 %9 %10 %11 %13 %15 %8
}
)"));
}

TEST(ConstantFold, SelectOnAConstantConditionOrOfEqualValues) {
  EXPECT_EQ(folded(R"(
kernel @k(a: i32, b: i32) stage typed {
  %0 = arg i32 0
  %1 = arg i32 1
  %2 = const u1 1
  %3 = select i32 %2 %0 %1
  %4 = const u1 0
  %5 = select i32 %4 %0 %1
  %6 = binary cmp_lt u1 %0 %1
  %7 = select i32 %6 %0 %0
  %8 = select i32 %6 %0 %1
  print "{} {} {} {}" %3 %5 %7 %8
}
)"),
            text(R"(
kernel @k(a: i32, b: i32) stage typed {
  %0 = arg i32 0
  %1 = arg i32 1
  %2 = const u1 1
  %3 = const u1 0
  %4 = binary cmp_lt u1 %0 %1
  %5 = select i32 %4 %0 %1
  print "{} {} {} {}" %0 %1 %0 %5
}
)"));
}

TEST(ConstantFold, IntegerArithmeticIdentities) {
  EXPECT_EQ(folded(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = const i32 1
  %3 = binary add i32 %0 %1
  %4 = binary add i32 %1 %0
  %5 = binary sub i32 %0 %1
  %6 = binary sub i32 %1 %0
  %7 = binary mul i32 %2 %0
  %8 = binary mul i32 %0 %1
  %9 = binary div i32 %0 %2
  %10 = binary div i32 %2 %0
  print "{} {} {} {} {} {} {} {}" %3 %4 %5 %6 %7 %8 %9 %10
}
)"),
            text(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = const i32 1
  %3 = binary sub i32 %1 %0
  %4 = const i32 0
  %5 = binary div i32 %2 %0
  print "{} {} {} {} {} {} {} {}" %0 %0 %0 %3 %0 %4 %0 %5
}
)"));
}

TEST(ConstantFold, BitwiseAndShiftIdentities) {
  EXPECT_EQ(folded(R"(
kernel @k(a: i32, b: u8) stage typed {
  %0 = arg i32 0
  %1 = arg u8 1
  %2 = const i32 0
  %3 = const i32 -1
  %4 = const u8 255
  %5 = binary bit_or i32 %0 %2
  %6 = binary bit_xor i32 %2 %0
  %7 = binary bit_and i32 %0 %3
  %8 = binary bit_and i32 %0 %2
  %9 = binary bit_and u8 %4 %1
  %10 = binary shl i32 %0 %2
  %11 = binary shr i32 %0 %2
  %12 = binary shl i32 %2 %0
  print "{} {} {} {} {} {} {} {}" %5 %6 %7 %8 %9 %10 %11 %12
}
)"),
            text(R"(
kernel @k(a: i32, b: u8) stage typed {
  %0 = arg i32 0
  %1 = arg u8 1
  %2 = const i32 0
  %3 = const i32 -1
  %4 = const u8 255
  %5 = const i32 0
  %6 = binary shl i32 %2 %0
  print "{} {} {} {} {} {} {} {}" %0 %0 %0 %5 %1 %0 %0 %6
}
)"));
}

TEST(ConstantFold, FloatIdentitiesOnlyWhereExactForSignedZerosAndNaN) {
  EXPECT_EQ(folded(R"(
kernel @k(a: f32) stage typed {
  %0 = arg f32 0
  %1 = const f32 1
  %2 = const f32 0
  %3 = const f32 -0
  %4 = binary mul f32 %0 %1
  %5 = binary div f32 %0 %1
  %6 = binary add f32 %0 %3
  %7 = binary sub f32 %0 %2
  %8 = binary add f32 %0 %2
  %9 = binary mul f32 %0 %2
  %10 = binary sub f32 %0 %3
  print "{} {} {} {} {} {} {}" %4 %5 %6 %7 %8 %9 %10
}
)"),
            text(R"(
kernel @k(a: f32) stage typed {
  %0 = arg f32 0
  %1 = const f32 1
  %2 = const f32 0
  %3 = const f32 -0
  %4 = binary add f32 %0 %2
  %5 = binary mul f32 %0 %2
  %6 = binary sub f32 %0 %3
  print "{} {} {} {} {} {} {}" %0 %0 %0 %0 %4 %5 %6
}
)"));
}

TEST(ConstantFold, NestedIfsWithConstantConditionsKeepOnlyTheTakenStatements) {
  EXPECT_EQ(folded(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const u1 1
  %2 = const i32 3
  %3 = const i32 4
  %4 = range_for %2 %3 {
    if %1 {
      %5 = binary cmp_lt u1 %2 %3
      if %5 {
        print "taken {}" %0
      } else {
        print "not taken"
      }
      %6 = unary logic_not u1 %1
      if %6 {
        print "not taken"
      } else {
        %7 = binary add i32 %0 %2
        print "else {}" %7
      }
    } else {
      print "not taken"
    }
  }
}
)"),
            text(R"(
kernel @k(a: i32) stage typed {
  %0 = arg i32 0
  %1 = const u1 1
  %2 = const i32 3
  %3 = const i32 4
  %4 = range_for %2 %3 {
    %5 = const u1 1
    print "taken {}" %0
    %6 = const u1 0
    %7 = binary add i32 %0 %2
    print "else {}" %7
  }
}
)"));
}

// Inlining would make the loop a top-level (parallel) range_for, where a
// break is not allowed, so the if stays.
TEST(ConstantFold, TopLevelIfAroundALoopWithABreakIsKept) {
  const char* kernel = R"(
kernel @k() stage typed {
  %0 = const u1 1
  %1 = const i32 0
  %2 = const i32 4
  if %0 {
    %3 = range_for %1 %2 {
      break
    }
  } else {
  }
}
)";
  EXPECT_EQ(folded(kernel, /*expect_change=*/false), text(kernel));
}

TEST(ConstantFold, NonConstantCodeIsUnchanged) {
  const char* kernel = R"(
field @x : f32[4]

kernel @k(a: f32, i: i32) stage typed {
  %0 = arg f32 0
  %1 = arg i32 1
  %2 = field_load f32 @x[%1]
  %3 = const f32 0
  %4 = binary add f32 %2 %3
  %5 = binary mul f32 %4 %0
  field_store @x[%1] %5
}
)";
  EXPECT_EQ(folded(kernel, /*expect_change=*/false), text(R"(
kernel @k(a: f32, i: i32) stage typed {
  %0 = arg f32 0
  %1 = arg i32 1
  %2 = field_load f32 @x[%1]
  %3 = const f32 0
  %4 = binary add f32 %2 %3
  %5 = binary mul f32 %4 %0
  field_store @x[%1] %5
}
)"));
}

TEST(ConstantFold, RunsAtTheLoweredAndOffloadedStagesAndLeavesTreeStatements) {
  EXPECT_EQ(folded(R"(
kernel @k() stage lowered {
  task serial $-1 "main" {
    %0 = const u32 4
    %1 = const u32 8
    %2 = binary add u32 %0 %1
    %3 = tree_load i32 @t0[%2]
    %4 = const i32 0
    %5 = binary add i32 %3 %4
    tree_store @t0[%2] %5 as i32
    %6 = tree_atomic add i32 @t0[%2] %5
    %7 = tree_cas u32 @t0[%2] %0 %1
  }
}
)"),
            text(R"(
kernel @k() stage lowered {
  task serial $-1 "main" {
    %0 = const u32 4
    %1 = const u32 8
    %2 = const u32 12
    %3 = tree_load i32 @t0[%2]
    %4 = const i32 0
    tree_store @t0[%2] %3 as i32
    %5 = tree_atomic add i32 @t0[%2] %3
    %6 = tree_cas u32 @t0[%2] %0 %1
  }
}
)"));
  EXPECT_EQ(folded(R"(
kernel @k() stage offloaded {
  task serial $-1 "s" {
    %0 = const u1 1
    if %0 {
      %1 = const i32 0
      %2 = range_for %1 %1 {
        break
      }
    } else {
    }
  }
  task range_for $-1 "r" {
    %3 = const i32 2
    %4 = const i32 3
    %5 = binary mul i32 %3 %4
    %6 = range_for %3 %5 {
    }
  }
}
)"),
            text(R"(
kernel @k() stage offloaded {
  task serial $-1 "s" {
    %0 = const u1 1
    %1 = const i32 0
    %2 = range_for %1 %1 {
      break
    }
  }
  task range_for $-1 "r" {
    %3 = const i32 2
    %4 = const i32 3
    %5 = const i32 6
    %6 = range_for %3 %5 {
    }
  }
}
)"));
}

}  // namespace
}  // namespace grove::ir
