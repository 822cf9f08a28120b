// tests/ir/type_check_test.cpp — type_check, text in / text out: implicit casts,
// result types, u1 conditions, and the user errors it raises.
#include "ir/passes/type_check.h"

#include <gtest/gtest.h>

#include "grove/error.h"
#include "ir/assert.h"
#include "pass_test_util.h"

namespace grove::ir {
namespace {

using test::text;

std::string type_checked(std::string_view module) { return test::run_pass(module, type_check); }

// The message of the grove::Error type_check raises on `module` ("" if none).
std::string type_error(std::string_view module) {
  try {
    type_checked(module);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TypeCheck, I32PlusF32CastsTheIntegerOperand) {
  EXPECT_EQ(type_checked(R"(
kernel @k(a: i32, b: f32) stage frontend {
  %0 = arg i32 0
  %1 = arg f32 1
  %2 = binary add f32 %0 %1
  %3 = binary mul f32 %1 %0
  print "{} {}" %2 %3
}
)"),
            text(R"(
kernel @k(a: i32, b: f32) stage typed {
  %0 = arg i32 0
  %1 = arg f32 1
  %2 = cast f32 %0
  %3 = binary add f32 %2 %1
  %4 = cast f32 %0
  %5 = binary mul f32 %1 %4
  print "{} {}" %3 %5
}
)"));
}

TEST(TypeCheck, IntegersPromoteToTheWiderTypeAndUnsignedAtEqualWidth) {
  EXPECT_EQ(type_checked(R"(
kernel @k(a: u8, b: i32, c: u32) stage frontend {
  %0 = arg u8 0
  %1 = arg i32 1
  %2 = arg u32 2
  %3 = binary add i32 %0 %1
  %4 = binary sub u32 %1 %2
  %5 = binary cmp_eq u1 %0 %1
  %6 = binary add i32 %5 %1
  print "{} {} {}" %3 %4 %6
}
)"),
            text(R"(
kernel @k(a: u8, b: i32, c: u32) stage typed {
  %0 = arg u8 0
  %1 = arg i32 1
  %2 = arg u32 2
  %3 = cast i32 %0
  %4 = binary add i32 %3 %1
  %5 = cast u32 %1
  %6 = binary sub u32 %5 %2
  %7 = cast i32 %0
  %8 = binary cmp_eq u1 %7 %1
  %9 = cast i32 %8
  %10 = binary add i32 %9 %1
  print "{} {} {}" %4 %6 %10
}
)"));
}

TEST(TypeCheck, FloatsPromoteToTheWidestFloat) {
  EXPECT_EQ(type_checked(R"(
kernel @k(a: i64, b: f64, c: f32) stage frontend {
  %0 = arg i64 0
  %1 = arg f64 1
  %2 = arg f32 2
  %3 = binary add f64 %0 %1
  %4 = binary add f32 %0 %2
  %5 = binary mul f64 %2 %1
  print "{} {} {}" %3 %4 %5
}
)"),
            text(R"(
kernel @k(a: i64, b: f64, c: f32) stage typed {
  %0 = arg i64 0
  %1 = arg f64 1
  %2 = arg f32 2
  %3 = cast f64 %0
  %4 = binary add f64 %3 %1
  %5 = cast f32 %0
  %6 = binary add f32 %5 %2
  %7 = cast f64 %2
  %8 = binary mul f64 %7 %1
  print "{} {} {}" %4 %6 %8
}
)"));
}

TEST(TypeCheck, ComparisonsComputeInThePromotedTypeAndGiveU1) {
  EXPECT_EQ(type_checked(R"(
kernel @k(a: i32, b: f32) stage frontend {
  %0 = arg i32 0
  %1 = arg f32 1
  %2 = binary cmp_lt u1 %0 %1
  %3 = binary cmp_ne u1 %1 %1
  print "{} {}" %2 %3
}
)"),
            text(R"(
kernel @k(a: i32, b: f32) stage typed {
  %0 = arg i32 0
  %1 = arg f32 1
  %2 = cast f32 %0
  %3 = binary cmp_lt u1 %2 %1
  %4 = binary cmp_ne u1 %1 %1
  print "{} {}" %3 %4
}
)"));
}

TEST(TypeCheck, ConditionsThatAreNotU1AreComparedWithZero) {
  EXPECT_EQ(type_checked(R"(
kernel @k(a: i32, b: f32) stage frontend {
  %0 = arg i32 0
  %1 = arg f32 1
  if %0 {
    print "a"
  } else {
  }
  %2 = select f32 %1 %0 %1
  %3 = binary cmp_gt u1 %0 %0
  if %3 {
  } else {
    print "b"
  }
  print "{}" %2
}
)"),
            text(R"(
kernel @k(a: i32, b: f32) stage typed {
  %0 = arg i32 0
  %1 = arg f32 1
  %2 = const i32 0
  %3 = binary cmp_ne u1 %0 %2
  if %3 {
    print "a"
  } else {
  }
  %4 = const f32 0
  %5 = binary cmp_ne u1 %1 %4
  %6 = cast f32 %0
  %7 = select f32 %5 %6 %1
  %8 = binary cmp_gt u1 %0 %0
  if %8 {
  } else {
    print "b"
  }
  print "{}" %7
}
)"));
}

TEST(TypeCheck, LogicOperandsThatAreNotU1AreComparedWithZero) {
  EXPECT_EQ(type_checked(R"(
kernel @k(a: i32, b: f64) stage frontend {
  %0 = arg i32 0
  %1 = arg f64 1
  %2 = binary logic_and u1 %0 %1
  %3 = unary logic_not u1 %0
  %4 = binary logic_or u1 %2 %3
  print "{}" %4
}
)"),
            text(R"(
kernel @k(a: i32, b: f64) stage typed {
  %0 = arg i32 0
  %1 = arg f64 1
  %2 = const i32 0
  %3 = binary cmp_ne u1 %0 %2
  %4 = const f64 0
  %5 = binary cmp_ne u1 %1 %4
  %6 = binary logic_and u1 %3 %5
  %7 = const i32 0
  %8 = binary cmp_ne u1 %0 %7
  %9 = unary logic_not u1 %8
  %10 = binary logic_or u1 %6 %9
  print "{}" %10
}
)"));
}

TEST(TypeCheck, FieldAccessesCastIndicesToI32AndValuesToTheComputeType) {
  EXPECT_EQ(type_checked(R"(
field @h : f16[4]
field @n : i32[4]

kernel @k(a: f64, i: u8) stage frontend {
  %0 = arg f64 0
  %1 = arg u8 1
  field_store @h[%1] %0
  %2 = field_load f32 @h[%1]
  %3 = field_atomic add i32 @n[%1] %0
  print "{} {}" %2 %3
}
)"),
            text(R"(
kernel @k(a: f64, i: u8) stage typed {
  %0 = arg f64 0
  %1 = arg u8 1
  %2 = cast i32 %1
  %3 = cast f32 %0
  field_store @h[%2] %3
  %4 = cast i32 %1
  %5 = field_load f32 @h[%4]
  %6 = cast i32 %1
  %7 = cast i32 %0
  %8 = field_atomic add i32 @n[%6] %7
  print "{} {}" %5 %8
}
)"));
}

TEST(TypeCheck, LocalStoresCastToTheVariablesType) {
  EXPECT_EQ(type_checked(R"(
kernel @k(a: f32) stage frontend {
  %0 = arg f32 0
  %1 = alloca i32
  local_store %1 %0
  %2 = local_load i32 %1
  %3 = alloca f64
  local_store %3 %2
  %4 = local_load f64 %3
  print "{}" %4
}
)"),
            text(R"(
kernel @k(a: f32) stage typed {
  %0 = arg f32 0
  %1 = alloca i32
  %2 = cast i32 %0
  local_store %1 %2
  %3 = local_load i32 %1
  %4 = alloca f64
  %5 = cast f64 %3
  local_store %4 %5
  %6 = local_load f64 %4
  print "{}" %6
}
)"));
}

TEST(TypeCheck, RangeBoundsAndIndicesInsideLoopsBecomeI32) {
  EXPECT_EQ(type_checked(R"(
field @x : f32[8, 8]

kernel @k(n: i64) stage frontend {
  %0 = arg i64 0
  %1 = const u1 0
  %2 = range_for %1 %0 {
    %3 = loop_index i32 %2 0
    %4 = cast i64 %3
    field_store @x[%3, %4] %3
  }
}
)"),
            text(R"(
kernel @k(n: i64) stage typed {
  %0 = arg i64 0
  %1 = const u1 0
  %2 = cast i32 %1
  %3 = cast i32 %0
  %4 = range_for %2 %3 {
    %5 = loop_index i32 %4 0
    %6 = cast i64 %5
    %7 = cast i32 %6
    %8 = cast f32 %5
    field_store @x[%5, %7] %8
  }
}
)"));
}

TEST(TypeCheck, ShiftsComputeInTheLeftOperandsType) {
  EXPECT_EQ(type_checked(R"(
kernel @k(a: i64, b: u8) stage frontend {
  %0 = arg i64 0
  %1 = arg u8 1
  %2 = binary shl i64 %0 %1
  %3 = binary shr u8 %1 %0
  print "{} {}" %2 %3
}
)"),
            text(R"(
kernel @k(a: i64, b: u8) stage typed {
  %0 = arg i64 0
  %1 = arg u8 1
  %2 = cast i64 %1
  %3 = binary shl i64 %0 %2
  %4 = cast u8 %0
  %5 = binary shr u8 %1 %4
  print "{} {}" %3 %5
}
)"));
}

TEST(TypeCheck, MathFunctionsOfIntegersComputeInF32) {
  EXPECT_EQ(type_checked(R"(
kernel @k(a: i32, b: f64) stage frontend {
  %0 = arg i32 0
  %1 = arg f64 1
  %2 = unary sqrt f32 %0
  %3 = binary atan2 f32 %0 %0
  %4 = unary neg i32 %0
  %5 = unary sin f64 %1
  print "{} {} {} {}" %2 %3 %4 %5
}
)"),
            text(R"(
kernel @k(a: i32, b: f64) stage typed {
  %0 = arg i32 0
  %1 = arg f64 1
  %2 = cast f32 %0
  %3 = unary sqrt f32 %2
  %4 = cast f32 %0
  %5 = cast f32 %0
  %6 = binary atan2 f32 %4 %5
  %7 = unary neg i32 %0
  %8 = unary sin f64 %1
  print "{} {} {} {}" %3 %6 %7 %8
}
)"));
}

TEST(TypeCheck, ATypedKernelIsLeftAsItIs) {
  const char* typed = R"(
kernel @k(a: i32, b: f32) stage typed {
  %0 = arg i32 0
  %1 = arg f32 1
  %2 = cast f32 %0
  %3 = binary cmp_lt u1 %2 %1
  if %3 {
    %4 = select f32 %3 %2 %1
    print "{}" %4
  } else {
  }
}
)";
  EXPECT_EQ(type_checked(typed), text(typed));
}

TEST(TypeCheck, BitOpsOnFloatsAreUserErrors) {
  EXPECT_EQ(type_error(R"(
kernel @k(a: f32, b: i32) stage frontend {
  %0 = arg f32 0
  %1 = arg i32 1
  %2 = binary bit_and f32 %0 %1
}
)"),
            "kernel 'k': bit_and needs integer operands but got f32 and i32; cast the operands "
            "with cast(i32, ...)");
  EXPECT_EQ(type_error(R"(
kernel @k(a: f32, b: i32) stage frontend {
  %0 = arg f32 0
  %1 = arg i32 1
  %2 = binary shr i32 %1 %0
}
)"),
            "kernel 'k': shr needs integer operands but got i32 and f32; cast the operands "
            "with cast(i32, ...)");
}

TEST(TypeCheck, BitNotOfAFloatIsAUserError) {
  EXPECT_EQ(type_error(R"(
kernel @k(a: f64) stage frontend {
  %0 = arg f64 0
  %1 = unary bit_not f64 %0
}
)"),
            "kernel 'k': bit_not needs an integer operand but got f64; cast the operand with "
            "cast(i32, ...)");
}

TEST(TypeCheck, AtomicBitOpsOnFloatFieldsAreUserErrors) {
  EXPECT_EQ(type_error(R"(
field @x : f32[4]

kernel @k(i: i32) stage frontend {
  %0 = arg i32 0
  %1 = field_atomic bit_or f32 @x[%0] %0
}
)"),
            "kernel 'k': atomic bit_or on field 'x' needs an integer field but the field is "
            "f32; use an integer field, or atomic add/sub/min/max");
}

TEST(TypeCheck, FloatFieldIndicesAreUserErrors) {
  EXPECT_EQ(type_error(R"(
field @x : i32[4, 4]

kernel @k(i: i32, f: f32) stage frontend {
  %0 = arg i32 0
  %1 = arg f32 1
  %2 = field_load i32 @x[%0, %1]
}
)"),
            "kernel 'k': index 1 of field 'x' (in field_load) is f32, but it must be an "
            "integer; cast it with cast(i32, ...)");
}

TEST(TypeCheck, FloatRangeBoundsAreUserErrors) {
  EXPECT_EQ(type_error(R"(
kernel @k(n: f32) stage frontend {
  %0 = arg f32 0
  %1 = const i32 0
  %2 = range_for %1 %0 {
  }
}
)"),
            "kernel 'k': the end bound of a range_for is f32, but it must be an integer; cast "
            "it with cast(i32, ...)");
}

TEST(TypeCheck, SNodeOpIndicesBecomeI32AndAppendValuesStay) {
  EXPECT_EQ(type_checked(R"(
kernel @k(a: i64, b: f64) stage frontend {
  %0 = arg i64 0
  %1 = arg f64 1
  %2 = snode_op is_active u1 $S1[%0, %0]
  snode_op activate $S1[%0, %0]
  %3 = snode_op append i32 $S2[%0] %1
  %4 = snode_op length i32 $S2[%0]
  %5 = struct_for $S1 {
    %6 = loop_index i32 %5 1
    snode_op deactivate $S1[%6, %6]
  }
  print "{} {} {}" %2 %3 %4
}
)"),
            text(R"(
kernel @k(a: i64, b: f64) stage typed {
  %0 = arg i64 0
  %1 = arg f64 1
  %2 = cast i32 %0
  %3 = cast i32 %0
  %4 = snode_op is_active u1 $S1[%2, %3]
  %5 = cast i32 %0
  %6 = cast i32 %0
  snode_op activate $S1[%5, %6]
  %7 = cast i32 %0
  %8 = snode_op append i32 $S2[%7] %1
  %9 = cast i32 %0
  %10 = snode_op length i32 $S2[%9]
  %11 = struct_for $S1 {
    %12 = loop_index i32 %11 1
    snode_op deactivate $S1[%12, %12]
  }
  print "{} {} {}" %4 %8 %10
}
)"));
  EXPECT_TRUE(type_error(R"(
kernel @k(b: f32) stage frontend {
  %0 = arg f32 0
  snode_op activate $S1[%0]
}
)").find("index 0 of SNode 1 (in snode_op activate) is f32, but it must be an integer") != std::string::npos);
}

TEST(TypeCheck, TreeStatementsAtTheFrontendAreInternalErrors) {
  ParsedModule m = parse_module(text(R"(
kernel @k() stage frontend {
  %0 = const u32 0
  %1 = tree_load i32 @t0[%0]
}
)"));
  EXPECT_THROW(type_check(*m.kernels[0]), InternalError);
}

}  // namespace
}  // namespace grove::ir
