// The kernel DSL: arithmetic, math, arguments, local variables, atomics, print.
#include <bit>
#include <cmath>
#include <limits>

#include "backend_fixture.h"

using namespace grove;

namespace {

class Dsl : public grove::testing::BackendTest {};
GROVE_ALL_BACKENDS(Dsl);

TEST_P(Dsl, IntegerArithmeticHasCSemantics) {
  Program prog(config());
  Field r = prog.field(i32, "r", {8});
  Kernel k = prog.kernel("k", {arg(i32, "a"), arg(i32, "b")}, [&](Args a) {
    r(0) = a[0] / a[1];
    r(1) = a[0] % a[1];
    r(2) = -a[0] / a[1];
    r(3) = -a[0] % a[1];
    r(4) = a[0] * a[1] - 3;
    r(5) = a[0] / 0;  // defined: 0, never a trap
    r(6) = min(a[0], a[1]) * 100 + max(a[0], a[1]);
    r(7) = abs(-a[0]);
  });
  k(17, 5);
  std::vector<int32_t> v = r.to_vector<int32_t>();
  EXPECT_EQ(v, (std::vector<int32_t>{3, 2, -3, -2, 82, 0, 517, 17}));
}

TEST_P(Dsl, FloatMathMatchesTheHost) {
  Program prog(config());
  Field r = prog.field(f32, "r", {14});
  Kernel k = prog.kernel("k", {arg(f32, "x")}, [&](Args a) {
    Expr x = a[0];
    r(0) = sqrt(x);
    r(1) = sin(x);
    r(2) = cos(x);
    r(3) = tan(x);
    r(4) = exp(x);
    r(5) = log(x);
    r(6) = pow(x, 2.5f);
    r(7) = floor(x);
    r(8) = ceil(x);
    r(9) = abs(-x);
    r(10) = atan2(x, 2.0f);
    r(11) = tanh(x);
    r(12) = round(x);
    r(13) = x / 3.0f;
  });
  float x = 1.75f;
  k(x);
  std::vector<float> v = r.to_vector<float>();
  std::vector<float> want = {std::sqrt(x), std::sin(x), std::cos(x), std::tan(x), std::exp(x),
                             std::log(x), std::pow(x, 2.5f), 1.0f, 2.0f, x, std::atan2(x, 2.0f),
                             std::tanh(x), 2.0f, x / 3.0f};
  for (size_t n = 0; n < want.size(); ++n) EXPECT_FLOAT_EQ(v[n], want[n]) << "result " << n;
}

// sin, cos and tan of f32 over [-100, 100] and at the edges, against the
// host's double-precision functions rounded to f32: within 3 ulp, or within
// what an error of 2^-27 in the reduced argument makes (near the zeros of
// sin and cos, and the poles of tan, where a few ulp of the argument move
// the value far).
TEST_P(Dsl, TrigonometryIsWithinAFewUlpOfTheHost) {
  std::vector<float> xs = {0.0f, -0.0f, 1e-6f, -1e-6f, 1e-4f, 0.5f, 1.75f, -1.75f, 3.14159265f, 1.5707963f,
                           4.7123890f, 7.8539816f, 8191.5f, -8191.5f};
  for (int k = -2000; k <= 2000; ++k) xs.push_back(static_cast<float>(k) * 0.05f + 0.0013f);
  const int64_t n = static_cast<int64_t>(xs.size());
  Program prog(config());
  Field x = prog.field(f32, "x", {n});
  Field s = prog.field(f32, "s", {n}), c = prog.field(f32, "c", {n}), t = prog.field(f32, "t", {n});
  x.from_vector(xs);
  prog.kernel("trig", [&] {
    for_range(0, static_cast<int>(n), [&](Expr i) {
      s(i) = sin(x(i));
      c(i) = cos(x(i));
      t(i) = tan(x(i));
    });
  })();
  const std::vector<float> sv = s.to_vector<float>(), cv = c.to_vector<float>(), tv = t.to_vector<float>();
  auto ulps = [](float a, float b) {
    auto key = [](float f) {
      const auto u = std::bit_cast<std::int32_t>(f);
      return u < 0 ? static_cast<std::int64_t>(std::numeric_limits<std::int32_t>::min()) - u : std::int64_t{u};
    };
    return std::llabs(key(a) - key(b));
  };
  auto check = [&](const char* name, float got, double exact, double slope, float arg) {
    const float want = static_cast<float>(exact);
    if (ulps(got, want) <= 3 || std::fabs(static_cast<double>(got) - exact) <= std::ldexp(std::fabs(slope), -27)) return;
    ADD_FAILURE() << name << "(" << arg << ") = " << got << ", want " << want << " (" << ulps(got, want) << " ulp)";
  };
  for (int64_t k = 0; k < n; ++k) {
    const double a = xs[static_cast<size_t>(k)];
    const size_t e = static_cast<size_t>(k);
    check("sin", sv[e], std::sin(a), std::cos(a), xs[e]);
    check("cos", cv[e], std::cos(a), std::sin(a), xs[e]);
    check("tan", tv[e], std::tan(a), 1.0 + std::tan(a) * std::tan(a), xs[e]);
  }
  EXPECT_TRUE(std::signbit(sv[1])) << "sin(-0) is -0";
  EXPECT_TRUE(std::signbit(tv[1])) << "tan(-0) is -0";
}

TEST_P(Dsl, ComparisonsAndLogic) {
  Program prog(config());
  Field r = prog.field(i32, "r", {6});
  Kernel k = prog.kernel("k", {arg(f32, "x")}, [&](Args a) {
    Expr x = a[0];
    r(0) = select(x < 2.0f, 1, 0);
    r(1) = select(x >= 2.0f && x != 3.0f, 1, 0);
    r(2) = select(x == 3.0f || x < 0.0f, 1, 0);
    r(3) = select(!(x > 1.0f), 1, 0);
    r(4) = cast(i32, x <= 3.0f);
    r(5) = select(x > 2.5f, 10, 20);
  });
  k(3.0f);
  EXPECT_EQ(r.to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 1, 0, 1, 10}));
  k(1.0f);
  EXPECT_EQ(r.to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 0, 1, 1, 20}));
}

TEST_P(Dsl, BitOperations) {
  Program prog(config());
  Field r = prog.field(u32, "r", {7});
  Kernel k = prog.kernel("k", {arg(u32, "a"), arg(u32, "b")}, [&](Args a) {
    r(0) = a[0] & a[1];
    r(1) = a[0] | a[1];
    r(2) = a[0] ^ a[1];
    r(3) = a[0] << 4;
    r(4) = a[0] >> 2;
    r(5) = ~a[0];
    r(6) = a[0] << 33;  // shift count modulo 32
  });
  k(0xF0F0u, 0x0FF0u);
  EXPECT_EQ(r.to_vector<uint32_t>(),
            (std::vector<uint32_t>{0x00F0u, 0xFFF0u, 0xFF00u, 0xF0F00u, 0x3C3Cu, ~0xF0F0u, 0x1E1E0u}));
}

// popcnt, clz and ctz count over the operand type's own width, 0 included
// (the expected values come from <bit> on the host).
TEST_P(Dsl, BitCountsOverEachTypesWidth) {
  Program prog(config());
  Field r = prog.field(i64, "r", {7, 3});
  Kernel k = prog.kernel(
      "k", {arg(i8), arg(u16), arg(i32), arg(u32), arg(i64), arg(u64), arg(u32)}, [&](Args a) {
        for (int i = 0; i < 7; ++i) {
          r(i, 0) = cast(i64, popcnt(a[i]));
          r(i, 1) = cast(i64, clz(a[i]));
          r(i, 2) = cast(i64, ctz(a[i]));
        }
      });
  const int8_t v8 = -96;  // 0xa0
  const uint16_t v16 = 0x0500;
  const int32_t v32 = -(1 << 20);
  const uint32_t u32v = 0x00f00000u;
  const int64_t v64 = int64_t{0x3} << 40;
  const uint64_t u64v = (uint64_t{1} << 63) | 0x10u;
  k(v8, v16, v32, u32v, v64, u64v, 0u);
  auto counts = [](auto u) {
    return std::vector<int64_t>{std::popcount(u), std::countl_zero(u), std::countr_zero(u)};
  };
  std::vector<int64_t> want;
  for (const auto& c : {counts(static_cast<uint8_t>(v8)), counts(v16), counts(static_cast<uint32_t>(v32)),
                        counts(u32v), counts(static_cast<uint64_t>(v64)), counts(u64v), counts(0u)})
    want.insert(want.end(), c.begin(), c.end());
  EXPECT_EQ(r.to_vector<int64_t>(), want);
}

TEST_P(Dsl, ArithmeticShiftForSignedTypes) {
  Program prog(config());
  Field r = prog.field(i32, "r", {2});
  Kernel k = prog.kernel("k", {arg(i32, "a")}, [&](Args a) {
    r(0) = a[0] >> 4;
    r(1) = cast(i32, cast(u32, a[0]) >> 28u);
  });
  k(-256);
  EXPECT_EQ(r.read<int32_t>({0}), -16);
  EXPECT_EQ(r.read<int32_t>({1}), 15);
}

TEST_P(Dsl, CastsBetweenTypes) {
  Program prog(config());
  Field r = prog.field(f64, "r", {6});
  Kernel k = prog.kernel("k", {arg(f32, "x")}, [&](Args a) {
    r(0) = cast(f64, cast(i32, a[0]));          // truncation toward zero
    r(1) = cast(f64, cast(i32, -a[0]));
    r(2) = cast(f64, cast(u8, cast(i32, a[0]) + 254));  // wraps
    r(3) = cast(f64, cast<float>(cast(i64, a[0]) * 3));
    r(4) = cast(f64, cast(u1, a[0]));
    r(5) = cast(f64, cast(i16, 40000));          // wraps to -25536
  });
  k(7.9f);
  EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{7, -7, 5, 21, 1, -25536}));
}

TEST_P(Dsl, ArgumentsOfEveryType) {
  Program prog(config());
  Field r = prog.field(f64, "r", {11});
  std::vector<ArgSpec> specs = {arg(i8), arg(i16), arg(i32), arg(i64), arg(u8), arg(u16),
                                arg(u32), arg(u64), arg(f16), arg(f32), arg(f64)};
  Kernel k = prog.kernel("k", specs, [&](Args a) {
    for (int n = 0; n < 11; ++n) r(n) = cast(f64, a[n]);
  });
  k(int8_t{-100}, int16_t{-30000}, int32_t{-2000000000}, int64_t{-(int64_t{1} << 50)},
    uint8_t{200}, uint16_t{60000}, uint32_t{4000000000u}, uint64_t{1} << 60, 1.5f, 0.25f, 1e300);
  std::vector<double> v = r.to_vector<double>();
  EXPECT_EQ(v[0], -100);
  EXPECT_EQ(v[1], -30000);
  EXPECT_EQ(v[2], -2000000000.0);
  EXPECT_EQ(v[3], -std::ldexp(1.0, 50));
  EXPECT_EQ(v[4], 200);
  EXPECT_EQ(v[5], 60000);
  EXPECT_EQ(v[6], 4000000000.0);
  EXPECT_EQ(v[7], std::ldexp(1.0, 60));
  EXPECT_EQ(v[8], 1.5);
  EXPECT_EQ(v[9], 0.25);
  EXPECT_EQ(v[10], 1e300);
}

TEST_P(Dsl, ArgumentsAreConvertedToTheDeclaredType) {
  Program prog(config());
  Field r = prog.field(f32, "r", {});
  Kernel k = prog.kernel("k", {arg(f32, "x")}, [&](Args a) { r() = a["x"] * 2.0f; });
  k(3);  // an int passed for an f32 argument
  EXPECT_FLOAT_EQ(r.read<float>(), 6.0f);
  k(2.25);
  EXPECT_FLOAT_EQ(r.read<float>(), 4.5f);
  k(int64_t{1} << 62);  // every 64-bit integer is within f32's range (rounded)
  EXPECT_FLOAT_EQ(r.read<float>(), 0x1p63f);
  // f16's range ends at 65504: an integer past it is refused, one within it is not.
  Field h = prog.field(f16, "h", {});
  Kernel half = prog.kernel("half", {arg(f16, "x")}, [&](Args a) { h() = a["x"]; });
  half(65504);
  EXPECT_EQ(h.read<float>(), 65504.0f);
  EXPECT_EQ(grove::testing::error_of([&] { half(65520); }),
            "kernel 'half': argument 0 ('x', f16) was given 65520 (i32), which is out of the range of f16; "
            "convert it on the host first");
}

TEST_P(Dsl, KernelCompilesOnceForManyLaunches) {
  Program prog(config());
  Field x = prog.field(i32, "x", {4});
  Kernel k = prog.kernel("k", {arg(i32, "v")}, [&](Args a) {
    for_range(0, 4, [&](Expr n) { x(n) = a[0] + n; });
  });
  for (int v = 0; v < 20; ++v) k(v);
  EXPECT_EQ(k.compile_count(), 1);
  EXPECT_EQ(x.read<int32_t>({3}), 22);
  EXPECT_EQ(prog.stats().kernel_launches, 20);
}

TEST_P(Dsl, LocalVariables) {
  Program prog(config());
  Field r = prog.field(i32, "r", {3});
  Kernel k = prog.kernel("k", [&] {
    Var s = 0;
    Var p(i64, 1);
    Var counter = 0;
    while_([&] { return counter < 10; }, [&] {
      counter += 1;
      s += counter;
      p *= 2;
    });
    r(0) = s;
    r(1) = cast(i32, p);
    Var copy = s;
    copy -= 5;
    r(2) = copy + s * 0;
  });
  k();
  EXPECT_EQ(r.to_vector<int32_t>(), (std::vector<int32_t>{55, 1024, 50}));
}

TEST_P(Dsl, AtomicsReturnTheOldValue) {
  Program prog(config());
  Field a = prog.field(i32, "a", {7});
  Field old = prog.field(i32, "old", {7});
  a.from_vector(std::vector<int32_t>{10, 10, 10, 10, 0b1100, 0b1100, 0b1100});
  Kernel k = prog.kernel("k", [&] {
    old(0) = atomic_add(a(0), 5);
    old(1) = atomic_sub(a(1), 3);
    old(2) = atomic_min(a(2), 4);
    old(3) = atomic_max(a(3), 40);
    old(4) = atomic_and(a(4), 0b1010);
    old(5) = atomic_or(a(5), 0b0011);
    old(6) = atomic_xor(a(6), 0b0110);
  });
  k();
  EXPECT_EQ(old.to_vector<int32_t>(), (std::vector<int32_t>{10, 10, 10, 10, 12, 12, 12}));
  EXPECT_EQ(a.to_vector<int32_t>(), (std::vector<int32_t>{15, 7, 4, 40, 0b1000, 0b1111, 0b1010}));
}

TEST_P(Dsl, AtomicAddAccumulatesAcrossAParallelLoop) {
  Program prog(config());
  Field hist = prog.field(i32, "hist", {10});
  Field total = prog.field(f32, "total", {});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 1000, [&](Expr n) {
      hist(n % 10) += 1;
      total() += 0.5f;
    });
  });
  k();
  for (int32_t v : hist.to_vector<int32_t>()) EXPECT_EQ(v, 100);
  EXPECT_FLOAT_EQ(total.read<float>(), 500.0f);
}

TEST_P(Dsl, ReductionsIntoOneValueAreExact) {
  Program prog(config());
  Field isum = prog.field(i32, "isum", {}), usum = prog.field(u32, "usum", {});
  Field fsum = prog.field(f32, "fsum", {}), seen = prog.field(i32, "seen", {});
  Field lsum = prog.field(i64, "lsum", {}), qsum = prog.field(u64, "qsum", {});
  Field dsum = prog.field(f64, "dsum", {});
  Field x = prog.field(i32, "x", {1000});
  Kernel k = prog.kernel("k", {arg(i32, "n")}, [&](Args a) {
    for_range(0, 100000, [&](Expr i) {
      isum() += i % 7;                    // several accumulators in one loop
      fsum() += 0.25f;
      if_(i % 3 == 0, [&] { usum() += cast(u32, 2); });  // under a branch
      lsum() += cast(i64, i) * 100000;    // 64-bit sums, past the 32-bit range
      dsum() += cast(f64, i % 5) * 0.5;   // halves: exact in any order
      if_(i % 4 == 1, [&] { qsum() += cast(u64, 3000000000u); });
    });
    for_range(0, a[0], [&](Expr i) {      // a bound known only at launch
      x(i % 1000) += 1;                    // not one address: plain atomics
      seen() += 1;
    });
  });
  k(12345);
  int64_t want = 0;
  for (int i = 0; i < 100000; ++i) want += i % 7;
  EXPECT_EQ(isum.read<int32_t>(), want);
  EXPECT_EQ(fsum.read<float>(), 25000.0f);
  EXPECT_EQ(usum.read<uint32_t>(), 2u * 33334u);
  EXPECT_EQ(lsum.read<int64_t>(), int64_t{100000} * (int64_t{99999} * 100000 / 2));
  EXPECT_EQ(dsum.read<double>(), 0.5 * (0 + 1 + 2 + 3 + 4) * 20000);
  EXPECT_EQ(qsum.read<uint64_t>(), uint64_t{3000000000u} * 25000);
  EXPECT_EQ(seen.read<int32_t>(), 12345);
  EXPECT_EQ(x.read<int32_t>({344}), 13);
  EXPECT_EQ(x.read<int32_t>({345}), 12);
}

TEST_P(Dsl, AReductionTargetThatIsAlsoReadStaysAtomic) {
  Program prog(config());
  Field total = prog.field(i32, "total", {});
  Field peak = prog.field(i32, "peak", {});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 5000, [&](Expr) {
      Expr before = atomic_add(total(), 1);  // the old value is used
      atomic_max(peak(), before);
    });
  });
  k();
  EXPECT_EQ(total.read<int32_t>(), 5000);
  EXPECT_EQ(peak.read<int32_t>(), 4999);
}

TEST_P(Dsl, PrintGoesToTheSink) {
  Program prog(config());
  std::string out;
  prog.set_print_sink([&](std::string_view s) { out += s; });
  Kernel k = prog.kernel("k", {arg(i32, "n")}, [&](Args a) {
    for_range(0, 3, [&](Expr n) {
      if_(n == 1, [&] { print("n = ", n, ", a = ", a[0], ", half = ", cast(f32, n) / 2.0f, " {ok}"); });
    });
  });
  k(42);
  EXPECT_EQ(out, "n = 1, a = 42, half = 0.5 {ok}\n");
}

// Float % is C's fmod, exactly, also where the value is computed before a
// parallel loop (a top-level value: each task recomputes it ahead of its
// loop, and legalize writes it there as a loop over local variables on a
// target without an exact fmod, as Vulkan).
TEST_P(Dsl, AFloatModComputedBeforeAParallelLoopIsExact) {
  Program prog(config());
  Field wide = prog.field(f64, "wide", {4});
  Field narrow = prog.field(f32, "narrow", {4});
  Kernel k = prog.kernel("fmod_prefix", {arg(f64, "a"), arg(f32, "b")}, [&](Args a) {
    Expr r = a[0] % Expr::constant(f64, 0.1);
    Expr q = a[1] % 3.0f;
    for_range(0, 4, [&](Expr i) {
      wide(i) = r * cast(f64, i + 1);
      narrow(i) = q + cast(f32, i);
    });
  });
  for (const auto& [x, y] : {std::pair{1e17, 1e30f}, std::pair{-7.25, -7.25f}, std::pair{1e-310, 2.5f}}) {
    k(x, y);
    for (int n = 0; n < 4; ++n) {
      EXPECT_EQ(wide.read<double>({n}), std::fmod(x, 0.1) * (n + 1)) << x;
      EXPECT_EQ(narrow.read<float>({n}), std::fmod(y, 3.0f) + static_cast<float>(n)) << y;
    }
  }
}

// One record with a value of every scalar type, 64-bit values after an odd
// number of words (legalize pads them to an even word: the values must
// still come out in order), from an iteration of a parallel loop.
TEST_P(Dsl, PrintShowsAValueOfEveryScalarType) {
  Program prog(config());
  std::string out;
  prog.set_print_sink([&](std::string_view s) { out += s; });
  Kernel k = prog.kernel("types", {arg(i32, "a")}, [&](Args a) {
    for_range(0, 4, [&](Expr n) {
      if_(n == 2, [&] {
        Expr v = a[0];
        print(cast(i8, v), " ", cast(i64, v) * 1000000007, " ", cast(u16, v), " ", cast(f64, v) * 0.75, " ",
              cast(u8, v), " ", cast(u64, v), " ", cast(i16, v), " ", cast(f32, v) / 4.0f, " ", v < 0, " ",
              cast(u32, v));
      });
    });
  });
  k(-3);
  // By hand: -3 as each type, -3 * 1000000007, -3 * 0.75, -3 / 4.
  EXPECT_EQ(out, "-3 -3000000021 65533 -2.25 253 18446744073709551613 -3 -0.75 1 4294967293\n");
}

}  // namespace
