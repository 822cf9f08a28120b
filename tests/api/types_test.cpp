// Data types: storage conversions, wraparound, promotion, default_fp.
#include <gmock/gmock.h>

#include <cmath>
#include <vector>

#include "backend_fixture.h"

using namespace grove;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

class Types : public grove::testing::BackendTest {};
GROVE_ALL_BACKENDS(Types);

// `real` is the Program's Config::default_fp wherever a type is given: one
// setting moves fields, arguments, casts, constants and Vars between f32
// and f64 (Taichi's default_fp). Each run is checked against the same
// arithmetic in C++ in that precision.
template <typename F>
void check_real_program(const Config& base, DataType fp) {
  Config c = base;
  c.default_fp = fp;
  Program prog(c);
  Field x = prog.field(real, "x", {4});
  Field v = prog.vector_field(2, real, "v", {4});
  Kernel k = prog.kernel("k", {arg(real, "h")}, [&](Args a) {
    for_range(0, 4, [&](Expr i) {
      Var acc(real, Expr::constant(real, 0.1));
      acc = acc + cast(real, i) * a[0];
      x(i) = acc;
      v(i) = Vec{acc * 3.0, Expr::constant(real, 1) / 3.0};
    });
  });
  k(0.7);
  EXPECT_EQ(x.dtype(), fp);
  EXPECT_EQ(v[1].dtype(), fp);
  for (int i = 0; i < 4; ++i) {
    const F acc = F(0.1) + static_cast<F>(i) * F(0.7);
    EXPECT_EQ(x.read<F>({i}), acc) << i;
    EXPECT_EQ(v[0].read<F>({i}), acc * F(3.0)) << i;
    EXPECT_EQ(v[1].read<F>({i}), F(1) / F(3.0)) << i;
  }
}

TEST_P(Types, RealIsTheProgramsDefaultFloat) {
  check_real_program<float>(config(), f32);
  check_real_program<double>(config(), f64);
  EXPECT_EQ(type_name(real), "real");
}

TEST_P(Types, F16FieldsRoundToNearestEven) {
  Program prog(config());
  Field h = prog.field(f16, "h", {4});
  Kernel k = prog.kernel("k", [&] {
    h(0) = 1.0f + 1.0f / 2048.0f;        // halfway between 1 and 1+2^-10: ties to even (1)
    h(1) = 1.0f + 3.0f / 2048.0f;        // halfway, rounds up to 1+2^-9
    h(2) = 70000.0f;                     // past the f16 range: inf
    h(3) = h(0) + 0.5f;                  // reads back as f32
  });
  k();
  EXPECT_EQ(h.read<float>({0}), 1.0f);
  EXPECT_EQ(h.read<float>({1}), 1.0f + 2.0f / 1024.0f);
  EXPECT_TRUE(std::isinf(h.read<float>({2})));
  EXPECT_EQ(h.read<float>({3}), 1.5f);
}

TEST_P(Types, NarrowIntegersWrap) {
  Program prog(config());
  Field a = prog.field(u8, "a", {});
  Field b = prog.field(i8, "b", {});
  Field c = prog.field(u16, "c", {});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 300, [&](Expr) { a() += 1; });
    b() = cast(i8, 127) + cast(i8, 1);
    c() = cast(u16, 0) - cast(u16, 1);
  });
  k();
  EXPECT_EQ(a.read<int>(), 300 - 256);
  EXPECT_EQ(b.read<int>(), -128);
  EXPECT_EQ(c.read<int>(), 65535);
}

TEST_P(Types, SixtyFourBitIntegersKeepAllBits) {
  Program prog(config());
  Field x = prog.field(u64, "x", {});
  Field y = prog.field(i64, "y", {});
  Kernel k = prog.kernel("k", {arg(u64, "v")}, [&](Args a) {
    x() = a[0] * 3u + 1u;
    y() = cast(i64, a[0]) >> 3;
  });
  uint64_t v = 0x8000'0000'0000'0001ull;
  k(v);
  EXPECT_EQ(x.read<uint64_t>(), v * 3 + 1);
  EXPECT_EQ(y.read<int64_t>(), static_cast<int64_t>(v) >> 3);
}

TEST_P(Types, ImplicitPromotionFollowsTaichi) {
  Program prog(config());
  Field r = prog.field(f32, "r", {3});
  Field q = prog.field(i64, "q", {});
  Kernel k = prog.kernel("k", {arg(i32, "n")}, [&](Args a) {
    r(0) = a[0] / 2;           // integer division, then stored as f32
    r(1) = a[0] / 2.0f;        // i32 / f32 -> f32
    r(2) = a[0] + 0.25;        // double literal -> default_fp (f32)
    q() = a[0] * Expr(int64_t{1} << 33);  // i32 * i64 -> i64
  });
  k(7);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{3.0f, 3.5f, 7.25f}));
  EXPECT_EQ(q.read<int64_t>(), int64_t{7} << 33);
  EXPECT_NE(k.ir("type_check").find("cast f32"), std::string::npos);
}

TEST_P(Types, DefaultFloatCanBeF64) {
  Config c = config();
  c.default_fp = f64;
  Program prog(c);
  Field r = prog.field(f64, "r", {});
  Kernel k = prog.kernel("k", [&] { r() = Expr(0.1) + Expr(0.2); });
  k();
  EXPECT_EQ(r.read<double>(), 0.1 + 0.2);
}

TEST_P(Types, HostConversionsOnReadAndWrite) {
  Program prog(config());
  Field x = prog.field(i16, "x", {2});
  x.write({0}, 1234.0);       // a whole double -> i16
  x.write({1}, int64_t{-5});
  EXPECT_EQ(x.read<int32_t>({0}), 1234);
  EXPECT_DOUBLE_EQ(x.read<double>({1}), -5.0);
  // A value the field cannot hold is refused, naming the field and the
  // value, and nothing is stored: a fraction, one out of range, NaN.
  EXPECT_THAT(grove::testing::error_of([&] { x.write({0}, 1234.9); }),
              AllOf(HasSubstr("field 'x' (i16)"), HasSubstr("1234.9 (f64), which is not a whole number")));
  EXPECT_THAT(grove::testing::error_of([&] { x.write({0}, 40000); }),
              AllOf(HasSubstr("field 'x' (i16)"), HasSubstr("40000 (i32), which is out of the range of i16")));
  EXPECT_THAT(grove::testing::error_of([&] { x.fill(std::nan("")); }), HasSubstr("field 'x' (i16)"));
  EXPECT_THAT(grove::testing::error_of([&] { x.from_vector(std::vector<int32_t>{7, 1 << 20}); }),
              HasSubstr("1048576 (i32), which is out of the range of i16"));
  EXPECT_EQ(x.read<int32_t>({0}), 1234);  // from_vector stored neither value
  Field b = prog.field(u8, "b", {1});
  EXPECT_THAT(grove::testing::error_of([&] { b.write({0}, 300); }), HasSubstr("field 'b' (u8) was given 300 (i32)"));
  EXPECT_THAT(grove::testing::error_of([&] { b.write({0}, -1); }), HasSubstr("out of the range of u8"));
  b.write({0}, 255);
  EXPECT_EQ(b.read<int32_t>({0}), 255);
  Field f = prog.field(f32, "f", {1});
  f.write({0}, 3);
  EXPECT_EQ(f.read<int32_t>({0}), 3);
  EXPECT_EQ(f.read<bool>({0}), true);
}

}  // namespace
