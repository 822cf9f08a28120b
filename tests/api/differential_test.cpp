// tests/api/differential_test.cpp — every backend against the reference
// interpreter, bit for bit: every binary and unary operation on every type
// over edge values (zero, -1, the minimum and maximum, shift counts past the
// width, signed zeros, infinities, NaN, denormals), every cast between two
// types, f16 storage rounding, atomics, and instruction patterns a driver
// has been seen to miscompile. ctest runs the suite again with the CPU
// backend compiling for older x86 levels (GROVE_CPU_TARGET) and with
// lavapipe restricted to AVX (GALLIUM_OVERRIDE_CPU_CAPS): drivers compile
// the same code differently per instruction set.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "../support/differential.h"
#include "backend_fixture.h"

namespace grove {
namespace {

using testing::Build;
using testing::compare_with_interpreter;

class Differential : public grove::testing::BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, Differential,
                         ::testing::ValuesIn(grove::testing::backends_compared_with_the_interpreter()),
                         grove::testing::backend_name);

const DataType kTypes[] = {u1, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64};

std::vector<double> edge_values(DataType t) {
  if (t == f32 || t == f64) {
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> v = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 7.25, -7.75, 1e-3, 100.0,
                             1e30, -1e30, inf, -inf, std::numeric_limits<double>::quiet_NaN(), 2147483648.0,
                             -2147483649.0, 4294967296.0, 9.3e18, 2e19, 300.0, -129.0, 65535.5};
    v.push_back(t == f32 ? static_cast<double>(std::numeric_limits<float>::denorm_min())
                         : std::numeric_limits<double>::denorm_min());
    v.push_back(t == f32 ? static_cast<double>(std::numeric_limits<float>::max()) : std::numeric_limits<double>::max());
    return v;
  }
  if (t == u1) return {0, 1};
  return {};
}

std::vector<int64_t> edge_ints(DataType t) {
  std::vector<int64_t> v = {0, 1, -1, 2, -2, 3, 5, -7, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 100, -100, 127, 128,
                            -128, -129, 255, 256, 32767, -32768, 65535, 65536, 0x55555555, 2147483647,
                            -2147483648LL, 4294967295LL, INT64_MAX, INT64_MIN, 0x123456789abcdefLL};
  (void)t;
  return v;
}

struct BinaryCase {
  const char* name;
  std::function<Expr(Expr, Expr)> f;
  bool ints, floats, bools, transcendental;
};

const std::vector<BinaryCase>& binary_cases() {
  static const std::vector<BinaryCase> cases = {
      {"add", [](Expr a, Expr b) { return a + b; }, true, true, true, false},
      {"sub", [](Expr a, Expr b) { return a - b; }, true, true, true, false},
      {"mul", [](Expr a, Expr b) { return a * b; }, true, true, true, false},
      {"div", [](Expr a, Expr b) { return a / b; }, true, true, true, false},
      {"mod", [](Expr a, Expr b) { return a % b; }, true, true, true, false},
      {"min", [](Expr a, Expr b) { return min(a, b); }, true, true, true, false},
      {"max", [](Expr a, Expr b) { return max(a, b); }, true, true, true, false},
      {"pow", [](Expr a, Expr b) { return pow(a, b); }, true, true, true, true},
      {"atan2", [](Expr a, Expr b) { return atan2(a, b); }, false, true, false, true},
      {"and", [](Expr a, Expr b) { return a & b; }, true, false, true, false},
      {"or", [](Expr a, Expr b) { return a | b; }, true, false, true, false},
      {"xor", [](Expr a, Expr b) { return a ^ b; }, true, false, true, false},
      {"shl", [](Expr a, Expr b) { return a << b; }, true, false, true, false},
      {"shr", [](Expr a, Expr b) { return a >> b; }, true, false, true, false},
      {"lt", [](Expr a, Expr b) { return cast(i32, a < b); }, true, true, true, false},
      {"le", [](Expr a, Expr b) { return cast(i32, a <= b); }, true, true, true, false},
      {"gt", [](Expr a, Expr b) { return cast(i32, a > b); }, true, true, true, false},
      {"ge", [](Expr a, Expr b) { return cast(i32, a >= b); }, true, true, true, false},
      {"eq", [](Expr a, Expr b) { return cast(i32, a == b); }, true, true, true, false},
      {"ne", [](Expr a, Expr b) { return cast(i32, a != b); }, true, true, true, false},
      {"land", [](Expr a, Expr b) { return cast(i32, a && b); }, true, true, true, false},
      {"lor", [](Expr a, Expr b) { return cast(i32, a || b); }, true, true, true, false},
  };
  return cases;
}

// Fills `f` (1-D) with the edge values of its type.
// Integers are wrapped to t's width first (as C++ converts them): a field
// takes only values its type holds.
void fill_edges(Field f, DataType t) {
  if (is_float(t) || t == u1) {
    f.from_vector(edge_values(t));
    return;
  }
  const int w = bit_width(t);
  const uint64_t mask = w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
  if (is_signed(t)) {
    std::vector<int64_t> v;
    for (int64_t x : edge_ints(t)) {
      const uint64_t low = static_cast<uint64_t>(x) & mask;
      const uint64_t sign = uint64_t{1} << (w - 1);
      v.push_back(static_cast<int64_t>((low ^ sign) - sign));  // sign-extended from bit w-1
    }
    f.from_vector(v);
  } else {
    std::vector<uint64_t> v;
    for (int64_t x : edge_ints(t)) v.push_back(static_cast<uint64_t>(x) & mask);
    f.from_vector(v);
  }
}

int64_t edge_count(DataType t) {
  return static_cast<int64_t>(is_float(t) || t == u1 ? edge_values(t).size() : edge_ints(t).size());
}

TEST_P(Differential, BinaryOperationsOnEveryType) {
  const testing::DriverLeeway leeway = testing::driver_leeway(config());
  for (DataType t : kTypes) {
    SCOPED_TRACE(std::string(type_name(t)));
    std::vector<const BinaryCase*> cases;
    for (const BinaryCase& c : binary_cases())
      if (is_float(t) ? c.floats : t == u1 ? c.bools : c.ints) cases.push_back(&c);
    const int64_t n = edge_count(t);
    std::vector<std::string> names;
    std::vector<DataType> types;
    std::vector<bool> loose;
    for (const BinaryCase* c : cases) {
      names.push_back(std::string(type_name(t)) + " " + c->name);
      static const std::set<std::string> to_i32 = {"lt", "le", "gt", "ge", "eq", "ne", "land", "lor"};
      types.push_back(to_i32.count(c->name) ? i32 : t);
      loose.push_back(c->transcendental && is_float(t));
    }
    // The driver's Pow (GLSL.std.450) is not checked for subnormal bases and
    // results near the top of the range (lavapipe's is off there); the cases
    // C defines specially (zeros, infinities, NaN, negative bases) are.
    const std::vector<double> edges = edge_values(t);
    auto pow_unchecked = [&](size_t element) {
      if (!is_float(t)) return false;
      double x = edges[element / edges.size()];
      double limit = t == f32 ? 1.2e-38 : 2.3e-308;
      return (x != 0.0 && std::fabs(x) < limit) || (std::fabs(x) > 1e20 && std::isfinite(x));
    };
    Build build = [&](Program& prog) {
      Field a = prog.field(t, "a", {n}), b = prog.field(t, "b", {n});
      std::vector<Field> outs;
      for (size_t k = 0; k < cases.size(); ++k) outs.push_back(prog.field(types[k], "r" + std::to_string(k), {n, n}));
      fill_edges(a, t);
      fill_edges(b, t);
      Kernel kern = prog.kernel("binary", [&] {
        for_range(0, static_cast<int>(n * n), [&](Expr k) {
          Expr i = k / static_cast<int>(n), j = k % static_cast<int>(n);
          for (size_t c = 0; c < cases.size(); ++c) outs[c](i, j) = cases[c]->f(a(i), b(j));
        });
      });
      kern();
      return outs;
    };
    // A driver's leeway (driver_leeway): f32 division within a few ulp, and
    // unchecked for a divisor beyond 2^126 (atan2 divides too) or a
    // denormal operand where denormals may be flushed.
    if (leeway.rounding && t == f32)
      for (size_t k = 0; k < cases.size(); ++k) loose[k] = loose[k] || std::string(cases[k]->name) == "div";
    auto driver_unchecked = [&](size_t output, size_t element) {
      if (t != f32) return false;
      const double x = edges[element / edges.size()], y = edges[element % edges.size()];
      const std::string name = cases[output]->name;
      if (leeway.denormals && (testing::is_f32_denormal(x) || testing::is_f32_denormal(y))) return true;
      return leeway.rounding && (name == "div" || name == "atan2") &&
             std::max(std::fabs(x), std::fabs(y)) > 0x1p126 && std::isfinite(y);
    };
    compare_with_interpreter(config(), build, names, types, loose, [&](size_t output, size_t element) {
      return (std::string(cases[output]->name) == "pow" && pow_unchecked(element)) || driver_unchecked(output, element);
    });
  }
}

TEST_P(Differential, UnaryOperationsOnEveryType) {
  struct UnaryCase {
    const char* name;
    std::function<Expr(Expr)> f;
    bool ints, transcendental;
  };
  const std::vector<UnaryCase> cases = {
      {"neg", [](Expr a) { return -a; }, true, false},
      {"not", [](Expr a) { return cast(i32, !a); }, true, false},
      {"bit_not", [](Expr a) { return ~a; }, true, false},
      {"abs", [](Expr a) { return abs(a); }, true, false},
      {"floor", [](Expr a) { return floor(a); }, true, false},
      {"ceil", [](Expr a) { return ceil(a); }, true, false},
      {"round", [](Expr a) { return round(a); }, true, false},
      {"sqrt", [](Expr a) { return sqrt(a); }, false, false},
      {"rsqrt", [](Expr a) { return rsqrt(a); }, false, false},
      {"sin", [](Expr a) { return sin(a); }, false, true},
      {"cos", [](Expr a) { return cos(a); }, false, true},
      {"tan", [](Expr a) { return tan(a); }, false, true},
      {"asin", [](Expr a) { return asin(a); }, false, true},
      {"acos", [](Expr a) { return acos(a); }, false, true},
      {"atan", [](Expr a) { return atan(a); }, false, true},
      {"exp", [](Expr a) { return exp(a); }, false, true},
      {"log", [](Expr a) { return log(a); }, false, true},
      {"tanh", [](Expr a) { return tanh(a); }, false, true},
  };
  const testing::DriverLeeway leeway = testing::driver_leeway(config());
  for (DataType t : kTypes) {
    if (t == u1) continue;
    SCOPED_TRACE(std::string(type_name(t)));
    std::vector<const UnaryCase*> use;
    for (const UnaryCase& c : cases)
      if (is_float(t) || (c.ints && !(std::string(c.name) == "bit_not" && is_float(t)))) use.push_back(&c);
    if (is_float(t)) {
      use.clear();
      for (const UnaryCase& c : cases)
        if (std::string(c.name) != "bit_not") use.push_back(&c);
    }
    const int64_t n = edge_count(t);
    std::vector<std::string> names;
    std::vector<DataType> types;
    std::vector<bool> loose;
    for (const UnaryCase* c : use) {
      names.push_back(std::string(type_name(t)) + " " + c->name);
      types.push_back(std::string(c->name) == "not" ? i32 : t);
      // Sin, cos, tan are the driver's; large arguments may differ more.
      loose.push_back(c->transcendental);
    }
    Build build = [&](Program& prog) {
      Field a = prog.field(t, "a", {n});
      std::vector<Field> outs;
      for (size_t k = 0; k < use.size(); ++k) outs.push_back(prog.field(types[k], "r" + std::to_string(k), {n}));
      fill_edges(a, t);
      Kernel kern = prog.kernel("unary", [&] {
        for_range(0, static_cast<int>(n), [&](Expr i) {
          for (size_t c = 0; c < use.size(); ++c) outs[c](i) = use[c]->f(a(i));
        });
      });
      kern();
      return outs;
    };
    // Transcendentals of huge arguments (sin(1e30)) depend on the argument
    // reduction: they are not compared; the others loosely or exactly.
    // A driver's leeway (driver_leeway): f32 sqrt and rsqrt within a few
    // ulp, denormal arguments unchecked where denormals may be flushed.
    const std::vector<double> edges = edge_values(t);
    std::vector<bool> transcendental = loose;
    if (leeway.rounding && t == f32)
      for (size_t k = 0; k < use.size(); ++k)
        loose[k] = loose[k] || std::string(use[k]->name) == "sqrt" || std::string(use[k]->name) == "rsqrt";
    compare_with_interpreter(config(), build, names, types, loose, [&](size_t output, size_t element) {
      return (transcendental[output] && std::fabs(edges[element]) > 1e3) ||
             (leeway.denormals && t == f32 && testing::is_f32_denormal(edges[element]));
    });
  }
}

TEST_P(Differential, CastsBetweenEveryPairOfTypes) {
  const bool flushing_driver = testing::driver_leeway(config()).denormals;
  for (DataType from : kTypes) {
    SCOPED_TRACE(std::string(type_name(from)));
    const int64_t n = edge_count(from);
    std::vector<std::string> names;
    std::vector<DataType> types;
    for (DataType to : kTypes) {
      names.push_back(std::string(type_name(from)) + " -> " + std::string(type_name(to)));
      types.push_back(to);
    }
    Build build = [&](Program& prog) {
      Field a = prog.field(from, "a", {n});
      std::vector<Field> outs;
      for (DataType to : kTypes) outs.push_back(prog.field(to, "to_" + std::string(type_name(to)), {n}));
      fill_edges(a, from);
      Kernel kern = prog.kernel("casts", [&] {
        for_range(0, static_cast<int>(n), [&](Expr i) {
          for (size_t c = 0; c < outs.size(); ++c) outs[c](i) = cast(types[c], a(i));
        });
      });
      kern();
      return outs;
    };
    // A denormal operand may be flushed where the driver may flush them
    // (driver_leeway): f32 -> u1 and f32 -> f64 of denorm_min.
    const std::vector<double> edges = from == f32 ? edge_values(from) : std::vector<double>{};
    const bool flushing = from == f32 && flushing_driver;
    compare_with_interpreter(config(), build, names, types, {}, [&](size_t, size_t element) {
      return flushing && testing::is_f32_denormal(edges[element]);
    });
  }
}

TEST_P(Differential, F16StorageRoundsLikeTheInterpreter) {
  std::vector<float> values;
  for (uint32_t bits = 0; bits < (1u << 16); ++bits) {
    // Sweep f32 values around every f16: exponents from subnormal to past the range.
    uint32_t exp = 100 + (bits >> 11) % 48;
    values.push_back(std::bit_cast<float>((bits & 1u) << 31 | exp << 23 | (bits * 2654435761u & 0x7fffffu)));
  }
  values.push_back(std::numeric_limits<float>::infinity());
  values.push_back(std::numeric_limits<float>::quiet_NaN());
  values.push_back(65504.0f);
  values.push_back(65520.0f);
  const int n = static_cast<int>(values.size());
  Build build = [&](Program& prog) {
    Field in = prog.field(f32, "in", {n});
    Field h = prog.field(f16, "h", {n});
    Field back = prog.field(f32, "back", {n});
    in.from_vector(values);
    Kernel kern = prog.kernel("f16", [&] {
      for_range(0, n, [&](Expr i) { h(i) = in(i); });
      for_range(0, n, [&](Expr i) { back(i) = h(i) * 1.0f; });
    });
    kern();
    return std::vector<Field>{back};
  };
  compare_with_interpreter(config(), build, {"f16 round trip"}, {f32});
}

TEST_P(Differential, AtomicsOnEveryType) {
  for (DataType t : {i32, u32, i64, u64, f32, f64, i8, u16}) {
    SCOPED_TRACE(std::string(type_name(t)));
    Build build = [&](Program& prog) {
      std::vector<Field> outs;
      const char* ops[] = {"add", "sub", "min", "max", "and", "or", "xor"};
      int count = is_float(t) ? 4 : 7;
      for (int o = 0; o < count; ++o) outs.push_back(prog.field(t, ops[o], {}));
      // "and" starts from every bit set: -1, or an unsigned type's largest value.
      const uint64_t ones = bit_width(t) == 64 ? ~uint64_t{0} : (uint64_t{1} << bit_width(t)) - 1;
      for (int o = 0; o < count; ++o) {
        if (o != 4) outs[static_cast<size_t>(o)].write({}, 3);
        else if (is_signed(t)) outs[static_cast<size_t>(o)].write({}, -1);
        else outs[static_cast<size_t>(o)].write({}, ones);
      }
      Kernel kern = prog.kernel("atomics", [&] {
        for_range(0, 1000, [&](Expr i) {
          Expr v = cast(t, i % 37 - 11);
          atomic_add(outs[0](), v);
          atomic_sub(outs[1](), v);
          atomic_min(outs[2](), v);
          atomic_max(outs[3](), v);
          if (count > 4) {
            atomic_and(outs[4](), cast(t, ~(Expr(1) << (i % 20))) | cast(t, i % 3));
            atomic_or(outs[5](), cast(t, Expr(1) << (i % 13)));
            atomic_xor(outs[6](), v);
          }
        });
      });
      kern();
      return outs;
    };
    std::vector<std::string> names = {"add", "sub", "min", "max", "and", "or", "xor"};
    compare_with_interpreter(config(), build, names, std::vector<DataType>(7, t));
  }
}

// Narrow signed values widened to 64 bits and then compared, clamped or
// negated: lavapipe has miscompiled OpSConvert followed by a signed compare,
// min, max or abs (cast(i64, x) > 33 true for x = 0). Checked against the
// plain C++ values.
TEST_P(Differential, SignExtensionTo64BitsFeedsSignedOperations) {
  for (DataType t : {i8, i16, i32}) {
    SCOPED_TRACE(std::string(type_name(t)));
    std::vector<int64_t> values;
    const int64_t limit = int64_t{1} << (bit_width(t) - 1);
    for (int64_t v : {0, 1, -1, -2, -5, 33, 34, -33, 127, -128, 40000, -40000, 2147483647, -2147483647 - 1})
      if (v >= -limit && v < limit) values.push_back(v);
    const int n = static_cast<int>(values.size());
    Program prog(config());
    Field a = prog.field(t, "a", {n});
    Field gt = prog.field(i32, "gt", {n}), le = prog.field(i32, "le", {n});
    Field lo = prog.field(i64, "lo", {n}), hi = prog.field(i64, "hi", {n}), ab = prog.field(i64, "ab", {n});
    a.from_vector(values);
    Kernel k = prog.kernel("widen", [&] {
      for_range(0, n, [&](Expr i) {
        Expr w = cast(i64, a(i));
        gt(i) = select(w > cast(i64, Expr(33)), 1, 0);
        le(i) = select(w <= cast(i64, Expr(-2)), 1, 0);
        lo(i) = min(w, cast(i64, Expr(5)));
        hi(i) = max(w, cast(i64, Expr(-3)));
        ab(i) = abs(w);
      });
    });
    k();
    for (int e = 0; e < n; ++e) {
      const int64_t v = values[e];
      SCOPED_TRACE("value " + std::to_string(v));
      EXPECT_EQ(gt.read<int32_t>({e}), v > 33 ? 1 : 0);
      EXPECT_EQ(le.read<int32_t>({e}), v <= -2 ? 1 : 0);
      EXPECT_EQ(lo.read<int64_t>({e}), std::min<int64_t>(v, 5));
      EXPECT_EQ(hi.read<int64_t>({e}), std::max<int64_t>(v, -3));
      EXPECT_EQ(ab.read<int64_t>({e}), v < 0 ? -v : v);
    }
  }
}

// IEEE 754's signed zeros, infinities and NaN through arithmetic a driver
// may otherwise fold (x * 0.0 is -0.0 for negative x, NaN for infinite x),
// and f64 rounding of values past 2^24. Checked against the host's values.
TEST_P(Differential, SignedZerosInfinitiesAndNaNSurviveArithmetic) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> values = {-3.5, -0.0, 0.0, -inf, inf, -0.205, 22013607.936, -22013607.5, 4503599627370495.5,
                                      -1073741824.5};
  const int n = static_cast<int>(values.size());
  for (DataType t : {f32, f64}) {
    SCOPED_TRACE(std::string(type_name(t)));
    Program prog(config());
    Field a = prog.field(t, "a", {n});
    Field zero = prog.field(t, "zero", {});
    std::vector<Field> out;
    for (int o = 0; o < 9; ++o) out.push_back(prog.field(t, "r" + std::to_string(o), {n}));
    a.from_vector(values);
    Kernel k = prog.kernel("ieee", [&] {
      for_range(0, n, [&](Expr i) {
        Expr x = a(i), z = zero();
        out[0](i) = x * z;
        out[1](i) = round(x);
        out[2](i) = rsqrt(x * z);
        out[3](i) = x + z;
        out[4](i) = -(x * z);
        out[5](i) = floor(x) - x;
        // The same with a literal zero, which a driver could fold.
        const Expr literal_zero = Expr::constant(t, 0.0);
        out[6](i) = x * literal_zero;
        out[7](i) = rsqrt(x * literal_zero);
        out[8](i) = (x - x) * literal_zero;
      });
    });
    k();
    for (int e = 0; e < n; ++e) {
      const double v = t == f32 ? static_cast<double>(static_cast<float>(values[e])) : values[e];
      SCOPED_TRACE("value " + std::to_string(v));
      auto want = [&](double r) {
        return t == f32 ? static_cast<double>(static_cast<float>(r)) : r;
      };
      auto got = [&](int o) {
        return t == f32 ? static_cast<double>(out[o].read<float>({e})) : out[o].read<double>({e});
      };
      const double expected[] = {v * 0.0, std::round(v), 1.0 / std::sqrt(v * 0.0), v + 0.0, -(v * 0.0),
                                 std::floor(v) - v, v * 0.0, 1.0 / std::sqrt(v * 0.0), (v - v) * 0.0};
      for (int o = 0; o < 9; ++o) {
        const double w = want(expected[o]), g = got(o);
        if (std::isnan(w)) {
          EXPECT_TRUE(std::isnan(g)) << "result " << o << ": " << g;
        } else {
          EXPECT_EQ(std::bit_cast<uint64_t>(g), std::bit_cast<uint64_t>(w)) << "result " << o << ": " << g << ", want " << w;
        }
      }
    }
  }
}

}  // namespace
}  // namespace grove
