// Data types: storage conversions, wraparound, promotion, default_fp.
#include <cmath>

#include "backend_fixture.h"

using namespace grove;

namespace {

class Types : public grove::testing::BackendTest {};
GROVE_ALL_BACKENDS(Types);

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
  x.write({0}, 1234.9);       // double -> i16 truncates
  x.write({1}, int64_t{-5});
  EXPECT_EQ(x.read<int32_t>({0}), 1234);
  EXPECT_DOUBLE_EQ(x.read<double>({1}), -5.0);
  Field f = prog.field(f32, "f", {1});
  f.write({0}, 3);
  EXPECT_EQ(f.read<int32_t>({0}), 3);
  EXPECT_EQ(f.read<bool>({0}), true);
}

}  // namespace
