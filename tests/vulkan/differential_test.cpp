// tests/vulkan/differential_test.cpp — the Vulkan backend against the
// reference interpreter, bit for bit: every binary and unary operation on
// every type over edge values (zero, -1, the minimum and maximum, shift
// counts past the width, signed zeros, infinities, NaN, denormals), every
// cast between two types, f16 storage rounding, and atomics.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "grove/grove.h"
#include "program/test_hooks.h"

namespace grove {
namespace {

bool vulkan_available() {
  static const bool ok = [] {
    bool built = false;
    for (Arch a : compiled_backends()) built |= a == Arch::Vulkan;
    if (!built) return false;
    try {
      Config c;
      c.arch = Arch::Vulkan;
      Program probe(c);
      return true;
    } catch (const Error&) {
      return false;
    }
  }();
  return ok;
}

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

// The bits of every element of a field, as read back from the host.
std::vector<uint64_t> field_bits(const Field& f) {
  std::vector<uint64_t> out;
  switch (f.dtype()) {
    case DataType::f32:
      for (float x : f.to_vector<float>()) out.push_back(std::bit_cast<uint32_t>(x));
      break;
    case DataType::f64:
      for (double x : f.to_vector<double>()) out.push_back(std::bit_cast<uint64_t>(x));
      break;
    case DataType::u64:
      for (uint64_t x : f.to_vector<uint64_t>()) out.push_back(x);
      break;
    default:
      for (int64_t x : f.to_vector<int64_t>()) out.push_back(static_cast<uint64_t>(x));
      break;
  }
  return out;
}

bool is_nan_bits(DataType t, uint64_t b) {
  if (t == f32) return std::isnan(std::bit_cast<float>(static_cast<uint32_t>(b)));
  if (t == f64) return std::isnan(std::bit_cast<double>(b));
  return false;
}

// Builds the same program on a backend and returns the bits of `outputs`.
using Build = std::function<std::vector<Field>(Program&)>;

std::vector<std::vector<uint64_t>> run_on(Arch arch, const Build& build) {
  Config c;
  c.arch = arch;
  Program prog(c);
  std::vector<Field> outputs = build(prog);
  prog.sync();
  std::vector<std::vector<uint64_t>> bits;
  for (const Field& f : outputs) bits.push_back(field_bits(f));
  return bits;
}

double as_double(DataType t, uint64_t bits) {
  return t == f32 ? static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits))) : std::bit_cast<double>(bits);
}

// Transcendental results: the driver's precision (f32 pow), and f64 ones
// computed in f32 (GLSL.std.450 has no f64 forms): a relative tolerance, and
// nothing checked where the exact value leaves f32's range.
bool close_enough(DataType t, uint64_t want, uint64_t got) {
  double w = as_double(t, want), g = as_double(t, got);
  if (t == f64 && (std::fabs(w) > 3.0e38 || (w != 0.0 && std::fabs(w) < 1.2e-38))) return true;
  if (std::isinf(w) || std::isinf(g)) return w == g;
  return std::fabs(w - g) <= (t == f32 ? 1e-5 : 1e-4) * std::max(1e-30, std::fabs(w));
}

// Compares outputs bit for bit (any NaN equals any NaN); `loose[i]` compares
// output i with close_enough (transcendental functions).
void compare(const Build& build, const std::vector<std::string>& names, const std::vector<DataType>& types,
             const std::vector<bool>& loose = {},
             const std::function<bool(size_t output, size_t element)>& skip = nullptr) {
  auto want = run_on(Arch::Interp, build);
  auto got = run_on(Arch::Vulkan, build);
  ASSERT_EQ(want.size(), got.size());
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(want[o].size(), got[o].size()) << names[o];
    int reported = 0;
    for (size_t i = 0; i < want[o].size(); ++i) {
      uint64_t w = want[o][i], g = got[o][i];
      if (w == g || (is_nan_bits(types[o], w) && is_nan_bits(types[o], g))) continue;
      if (o < loose.size() && loose[o] && close_enough(types[o], w, g)) continue;
      if (skip && skip(o, i)) continue;
      if (reported++ < 5) ADD_FAILURE() << names[o] << " element " << i << ": interpreter 0x" << std::hex << w
                                        << ", vulkan 0x" << g;
    }
  }
}

class Differential : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!vulkan_available()) GTEST_SKIP() << "no Vulkan device";
    setenv("GROVE_VALIDATE_SPIRV", "1", 1);
  }
};

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
void fill_edges(Field f, DataType t) {
  if (is_float(t) || t == u1) {
    f.from_vector(edge_values(t));
  } else {
    f.from_vector(edge_ints(t));
  }
}

int64_t edge_count(DataType t) {
  return static_cast<int64_t>(is_float(t) || t == u1 ? edge_values(t).size() : edge_ints(t).size());
}

TEST_F(Differential, BinaryOperationsOnEveryType) {
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
    compare(build, names, types, loose, [&](size_t output, size_t element) {
      return std::string(cases[output]->name) == "pow" && pow_unchecked(element);
    });
  }
}

TEST_F(Differential, UnaryOperationsOnEveryType) {
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
    // Transcendentals of huge or special arguments (sin(1e30)) are compared
    // only for NaN-ness and loosely; the others exactly.
    auto want = run_on(Arch::Interp, build);
    auto got = run_on(Arch::Vulkan, build);
    for (size_t o = 0; o < want.size(); ++o) {
      int reported = 0;
      for (size_t i = 0; i < want[o].size(); ++i) {
        uint64_t w = want[o][i], g = got[o][i];
        if (w == g || (is_nan_bits(types[o], w) && is_nan_bits(types[o], g))) continue;
        // sin/cos/tan of huge arguments depend on the argument reduction.
        if (loose[o] && (std::fabs(edge_values(t)[i]) > 1e3 || close_enough(types[o], w, g))) continue;
        if (reported++ < 5) ADD_FAILURE() << names[o] << " of element " << i << ": interpreter 0x" << std::hex << w
                                          << ", vulkan 0x" << g;
      }
    }
  }
}

TEST_F(Differential, CastsBetweenEveryPairOfTypes) {
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
    compare(build, names, types);
  }
}

TEST_F(Differential, F16StorageRoundsLikeTheInterpreter) {
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
  compare(build, {"f16 round trip"}, {f32});
}

TEST_F(Differential, AtomicsOnEveryType) {
  for (DataType t : {i32, u32, i64, u64, f32, f64, i8, u16}) {
    SCOPED_TRACE(std::string(type_name(t)));
    Build build = [&](Program& prog) {
      std::vector<Field> outs;
      const char* ops[] = {"add", "sub", "min", "max", "and", "or", "xor"};
      int count = is_float(t) ? 4 : 7;
      for (int o = 0; o < count; ++o) outs.push_back(prog.field(t, ops[o], {}));
      for (int o = 0; o < count; ++o) outs[static_cast<size_t>(o)].write({}, o == 4 ? -1 : 3);
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
    compare(build, names, std::vector<DataType>(7, t));
  }
}

TEST_F(Differential, FloatAtomicsWithoutFloatAtomicSupport) {
  detail::VulkanTestProfile p;
  p.no_float_atomics = true;
  detail::set_vulkan_test_profile(p);
  Build build = [&](Program& prog) {
    Field s = prog.field(f32, "s", {}), d = prog.field(f32, "d", {}), lo = prog.field(f32, "lo", {}),
          hi = prog.field(f32, "hi", {}), x = prog.field(f32, "x", {});
    Kernel kern = prog.kernel("fatomics", [&] {
      for_range(0, 4096, [&](Expr i) {
        Expr v = cast(f32, i % 64) * 0.25f;
        atomic_add(s(), v);
        atomic_sub(d(), v);
        atomic_min(lo(), v - 3.0f);
        atomic_max(hi(), v);
      });
      x() = 1.5f;
    });
    kern();
    return std::vector<Field>{s, d, lo, hi, x};
  };
  compare(build, {"add", "sub", "min", "max", "x"}, std::vector<DataType>(5, f32));
  detail::set_vulkan_test_profile({});
}

}  // namespace
}  // namespace grove
