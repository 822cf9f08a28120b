// tests/ir/eval_test.cpp — scalar semantics of docs/ir.md shared by the interpreter and the folder.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "ir/eval.h"

namespace grove::ir {
namespace {

using B = BinaryOp;

uint64_t f32_bits(float f) { return std::bit_cast<uint32_t>(f); }
uint64_t f64_bits(double d) { return std::bit_cast<uint64_t>(d); }
float as_f32(uint64_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits)); }
double as_f64(uint64_t bits) { return std::bit_cast<double>(bits); }

// A binary op on two host integers of type t, read back as a host integer.
int64_t bin(B op, DataType t, int64_t a, int64_t b) {
  return bits_to_int(t, eval_binary(op, t, int_to_bits(t, a), int_to_bits(t, b)));
}

constexpr DataType kIntegers[] = {i8, i16, i32, i64, u8, u16, u32, u64};

TEST(EvalTest, DivisionAndModByZeroAndMinOverMinusOneGiveZero) {
  for (DataType t : kIntegers) {
    SCOPED_TRACE(type_name(t));
    EXPECT_EQ(bin(B::div, t, 7, 0), 0);
    EXPECT_EQ(bin(B::mod, t, 7, 0), 0);
    EXPECT_EQ(bin(B::div, t, 0, 0), 0);
    EXPECT_EQ(bin(B::div, t, 7, 2), 3);
    EXPECT_EQ(bin(B::mod, t, 7, 2), 1);
  }
  EXPECT_EQ(bin(B::div, u1, 1, 0), 0);
  EXPECT_EQ(bin(B::mod, u1, 1, 0), 0);
  // INT_MIN / -1 overflows in C; here it is 0, and INT_MIN % -1 is 0 too.
  EXPECT_EQ(bin(B::div, i8, -128, -1), 0);
  EXPECT_EQ(bin(B::div, i16, -32768, -1), 0);
  EXPECT_EQ(bin(B::div, i32, std::numeric_limits<int32_t>::min(), -1), 0);
  EXPECT_EQ(bin(B::div, i64, std::numeric_limits<int64_t>::min(), -1), 0);
  EXPECT_EQ(bin(B::mod, i32, std::numeric_limits<int32_t>::min(), -1), 0);
  EXPECT_EQ(bin(B::mod, i64, std::numeric_limits<int64_t>::min(), -1), 0);
  // Truncation toward zero; mod takes the dividend's sign.
  EXPECT_EQ(bin(B::div, i32, -7, 2), -3);
  EXPECT_EQ(bin(B::mod, i32, -7, 2), -1);
  EXPECT_EQ(bin(B::mod, i32, 7, -2), 1);
  EXPECT_EQ(bin(B::div, i8, -128, 2), -64);
  // Unsigned operands are not sign-extended: 0xff / 2 in u8.
  EXPECT_EQ(bin(B::div, u8, 255, 2), 127);
  EXPECT_EQ(bin(B::mod, u64, -1, 10), 5);  // 18446744073709551615 % 10
}

TEST(EvalTest, ShiftCountsAreTakenModuloTheWidth) {
  EXPECT_EQ(bin(B::shl, i32, 1, 33), 2);
  EXPECT_EQ(bin(B::shl, i32, 1, 32), 1);
  EXPECT_EQ(bin(B::shl, i64, 1, 64 + 63), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(bin(B::shl, u8, 1, 9), 2);
  EXPECT_EQ(bin(B::shl, i16, 1, 15), -32768);
  EXPECT_EQ(bin(B::shl, u16, 0xffff, 15), 0x8000);
  // shr: arithmetic for signed types, logical for unsigned ones.
  EXPECT_EQ(bin(B::shr, i8, -128, 7), -1);
  EXPECT_EQ(bin(B::shr, u8, 0x80, 7), 1);
  EXPECT_EQ(bin(B::shr, i32, -16, 2), -4);
  EXPECT_EQ(bin(B::shr, u32, 0xfffffff0u, 2), 0x3ffffffc);
  EXPECT_EQ(bin(B::shr, i64, -1, 63), -1);
  EXPECT_EQ(bin(B::shr, u64, -1, 63), 1);
  EXPECT_EQ(bin(B::shr, i32, 256, 40), 1);  // 40 mod 32 = 8
  // A negative count is read as its unsigned bit pattern: -1 is 31 for i32.
  EXPECT_EQ(bin(B::shl, i32, 1, -1), std::numeric_limits<int32_t>::min());
  // u1 has width 1: every count is 0 modulo 1.
  EXPECT_EQ(bin(B::shl, u1, 1, 1), 1);
  EXPECT_EQ(bin(B::shr, u1, 1, 1), 1);
}

TEST(EvalTest, FloatToIntegerCastsTruncateSaturateAndMapNanToZero) {
  auto from_f32 = [](DataType to, float f) { return bits_to_int(to, eval_cast(f32, to, f32_bits(f))); };
  auto from_f64 = [](DataType to, double d) { return bits_to_int(to, eval_cast(f64, to, f64_bits(d))); };
  EXPECT_EQ(from_f32(i32, 2.9f), 2);
  EXPECT_EQ(from_f32(i32, -2.9f), -2);
  EXPECT_EQ(from_f32(i32, 1e10f), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(from_f32(i32, -1e10f), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(from_f32(i32, 2147483648.0f), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(from_f32(i8, 200.0f), 127);
  EXPECT_EQ(from_f32(i8, -200.0f), -128);
  EXPECT_EQ(from_f32(u8, 300.7f), 255);
  EXPECT_EQ(from_f32(u8, -1.5f), 0);
  EXPECT_EQ(from_f32(u16, -0.5f), 0);
  EXPECT_EQ(from_f64(i64, 1e300), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(from_f64(i64, -std::numeric_limits<double>::infinity()), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(eval_cast(f64, u64, f64_bits(1e20)), ~uint64_t{0});
  EXPECT_EQ(eval_cast(f64, u64, f64_bits(18446744073709549568.0)), 18446744073709549568u);
  EXPECT_EQ(eval_cast(f64, u32, f64_bits(4294967295.9)), 0xffffffffu);
  for (DataType t : kIntegers) {
    SCOPED_TRACE(type_name(t));
    EXPECT_EQ(eval_cast(f32, t, f32_bits(std::numeric_limits<float>::quiet_NaN())), 0u);
    EXPECT_EQ(eval_cast(f64, t, f64_bits(-std::numeric_limits<double>::quiet_NaN())), 0u);
  }
  // A cast to u1 is x != 0 (NaN is not equal to zero), never truncation.
  EXPECT_EQ(eval_cast(f32, u1, f32_bits(0.25f)), 1u);
  EXPECT_EQ(eval_cast(f32, u1, f32_bits(-0.0f)), 0u);
  EXPECT_EQ(eval_cast(i32, u1, 256), 1u);
  EXPECT_EQ(eval_cast(u8, u1, 0), 0u);
}

TEST(EvalTest, F16RoundsToNearestEvenAndRoundTrips) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);  // the largest half
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);  // below the halfway point to 65536
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // the tie rounds to even: infinity
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  // Ties between two halves go to the even one.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // 1 + half an ulp
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // 1 + 1.5 ulp
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  // Subnormal halves: 2^-24 is the smallest, 2^-25 ties to 0, 3 * 2^-25 to 2.
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)), 0x0400);  // up to the smallest normal
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::numeric_limits<float>::quiet_NaN()))));

  // Every half that is not a NaN survives f16 -> f32 -> f16 unchanged.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << "half 0x" << std::hex << h;
  }
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);

  // Casts to f16 round once, even from f64: 1 + 2^-11 + 2^-40 is just above
  // a tie, so it rounds up (narrowing to f32 first would make it a tie).
  double above_tie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(eval_cast(f64, f16, f64_bits(above_tie)), 0x3c01u);
  EXPECT_EQ(eval_cast(f64, f16, f64_bits(1.0 + std::ldexp(1.0, -11))), 0x3c00u);
  EXPECT_EQ(eval_cast(f64, f16, f64_bits(1e300)), 0x7c00u);
  EXPECT_EQ(eval_cast(f64, f16, f64_bits(-1e-300)), 0x8000u);
  EXPECT_EQ(eval_cast(f16, f32, 0x3c01u), f32_bits(1.0009765625f));
  EXPECT_EQ(eval_cast(i32, f16, 2049), 0x6800u);  // 2048: the tie goes to even
  EXPECT_EQ(eval_cast(i32, f16, 2051), 0x6802u);  // 2052
}

TEST(EvalTest, U64ToFloatRoundsOnce) {
  // 2^63 + 2^39 + 1 is just above the halfway point between two floats; going
  // through double first would drop the +1 and tie to even (2^63).
  uint64_t v = (uint64_t{1} << 63) + (uint64_t{1} << 39) + 1;
  EXPECT_EQ(as_f32(eval_cast(u64, f32, v)), std::ldexp(1.0f, 63) + std::ldexp(1.0f, 40));
  EXPECT_EQ(as_f32(eval_cast(u64, f32, ~uint64_t{0})), std::ldexp(1.0f, 64));
  EXPECT_EQ(as_f64(eval_cast(u64, f64, ~uint64_t{0})), std::ldexp(1.0, 64));
  EXPECT_EQ(as_f64(eval_cast(u64, f64, uint64_t{1} << 63)), std::ldexp(1.0, 63));  // not negative
  EXPECT_EQ(as_f32(eval_cast(u64, f32, 16777217)), 16777216.0f);
  EXPECT_EQ(eval_cast(u64, f16, 70000), 0x7c00u);
  // Signed sources keep their sign.
  EXPECT_EQ(as_f32(eval_cast(i64, f32, static_cast<uint64_t>(int64_t{-3}))), -3.0f);
  EXPECT_EQ(as_f64(eval_cast(i32, f64, 0x80000000u)), -2147483648.0);
  EXPECT_EQ(as_f32(eval_cast(u32, f32, 0xffffffffu)), 4294967296.0f);
}

TEST(EvalTest, IntegerArithmeticWrapsAround) {
  EXPECT_EQ(bin(B::add, i32, std::numeric_limits<int32_t>::max(), 1), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(bin(B::sub, i64, std::numeric_limits<int64_t>::min(), 1), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(bin(B::add, u8, 255, 1), 0);
  EXPECT_EQ(bin(B::sub, u64, 0, 1), -1);  // all ones
  EXPECT_EQ(eval_binary(B::sub, u64, 0, 1), ~uint64_t{0});
  EXPECT_EQ(bin(B::mul, i8, 16, 16), 0);
  EXPECT_EQ(bin(B::mul, i8, 100, 3), 44);  // 300 - 256
  EXPECT_EQ(bin(B::mul, u16, 0xffff, 0xffff), 1);
  EXPECT_EQ(bin(B::mul, i16, -32768, -1), -32768);
  EXPECT_EQ(bin(B::mul, i32, 65536, 65536), 0);
  EXPECT_EQ(bin(B::add, u1, 1, 1), 0);
  EXPECT_EQ(eval_unary(UnaryOp::neg, i32, 0x80000000u), 0x80000000u);
  EXPECT_EQ(eval_unary(UnaryOp::abs, i8, 0x80u), 0x80u);
  EXPECT_EQ(eval_unary(UnaryOp::neg, u8, 1), 255u);
  EXPECT_EQ(eval_atomic(AtomicOp::add, i32, 0x7fffffffu, 1), 0x80000000u);
  // Results stay truncated to their width.
  EXPECT_EQ(eval_binary(B::add, i8, 0x7f, 0x7f), 0xfeu);
  // Integer pow wraps too; negative exponents give 0 except for 1 and -1.
  EXPECT_EQ(bin(B::pow, i32, 3, 4), 81);
  EXPECT_EQ(bin(B::pow, u16, 3, 11), 177147 % 65536);
  EXPECT_EQ(bin(B::pow, i32, 2, -1), 0);
  EXPECT_EQ(bin(B::pow, i32, -1, -3), -1);
  EXPECT_EQ(bin(B::pow, i32, -1, std::numeric_limits<int32_t>::min()), 1);
  EXPECT_EQ(bin(B::pow, i64, -1, std::numeric_limits<int64_t>::min()), 1);
}

TEST(EvalTest, ConversionsBetweenBitsAndHostNumbers) {
  EXPECT_EQ(bits_to_int(i8, 0xff), -1);
  EXPECT_EQ(bits_to_int(u8, 0xff), 255);
  EXPECT_EQ(int_to_bits(i16, -1), 0xffffu);
  EXPECT_EQ(int_to_bits(u1, 5), 1u);
  EXPECT_EQ(eval_cast(i32, u8, int_to_bits(i32, -1)), 0xffu);
  EXPECT_EQ(eval_cast(i8, u64, 0xff), ~uint64_t{0});  // sign-extended first
  EXPECT_EQ(eval_cast(u8, i64, 0xff), 255u);
  EXPECT_EQ(bits_to_double(f16, 0x3c00), 1.0);
  EXPECT_EQ(double_to_bits(f32, 0.1), f32_bits(0.1f));
  EXPECT_EQ(format_value(f32, f32_bits(0.1f)), "0.1");
  EXPECT_EQ(format_value(f64, f64_bits(0.1)), "0.1");
  EXPECT_EQ(format_value(f16, 0x3555), "0.33325195");
  EXPECT_EQ(format_value(i8, 0x80), "-128");
  EXPECT_EQ(format_value(u64, ~uint64_t{0}), "18446744073709551615");
  EXPECT_EQ(format_value(u1, 1), "1");
}

}  // namespace
}  // namespace grove::ir
