// The legalize pass: text in, text out for the shape of each lowering, and
// the interpreter as the judge of its meaning: every unary and binary
// operation on every type, every cast, f16 storage and float atomic min/max
// over edge values give the same bits before legalize and after it (for a
// target that has nothing natively and one that has everything), and the
// legal kernel never hands a primitive an operand outside its
// preconditions (the interpreter checks them at stage legal).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <span>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "grove/error.h"
#include "ir/builder.h"
#include "ir/eval.h"
#include "ir/interpreter.h"
#include "ir/passes/legalize.h"
#include "ir/type_rules.h"
#include "ir/verifier.h"
#include "pass_test_util.h"

namespace grove::ir {
namespace {

using test::run_pass;
using test::text;

TargetOps nothing_native() { return {}; }
// A Vulkan device with shaderInt64: what legalize writes in 64-bit integers
// (f64 fmod) is written.
TargetOps nothing_native_but_int64() {
  TargetOps t;
  t.int64 = true;
  return t;
}
TargetOps everything_native() {
  TargetOps t;
  t.float_round = t.float_pow = t.f16_storage = t.float_math = t.f64_math = t.exact_fmod = t.int64 = true;
  return t;
}

// ---- text in, text out ----

TEST(Legalize, IntegerDivisionIsGuardedUnlessTheDivisorIsAConstantThatNeedsNoGuard) {
  std::string out = run_pass(R"(
kernel @k(a: i32, b: i32) stage lowered {
  task serial $-1 "serial" {
    %0 = arg i32 0
    %1 = arg i32 1
    %2 = binary div i32 %0 %1
    %3 = const i32 7
    %4 = binary mod i32 %0 %3
    %5 = binary add i32 %2 %4
    %6 = const u32 0
    tree_store @t0[%6] %5 as i32
  }
}
)", [](Kernel& k) { legalize(k, nothing_native()); });
  EXPECT_EQ(out, text(R"(
kernel @k(a: i32, b: i32) stage legal {
  task serial $-1 "serial" {
    %0 = arg i32 0
    %1 = arg i32 1
    %2 = const i32 0
    %3 = binary cmp_eq u1 %1 %2
    %4 = const i32 -1
    %5 = binary cmp_eq u1 %1 %4
    %6 = const i32 -2147483648
    %7 = binary cmp_eq u1 %0 %6
    %8 = binary logic_and u1 %5 %7
    %9 = binary logic_or u1 %3 %8
    %10 = const i32 1
    %11 = select i32 %9 %10 %1
    %12 = binary div i32 %0 %11
    %13 = const i32 0
    %14 = select i32 %9 %13 %12
    %15 = const i32 7
    %16 = binary mod i32 %0 %15
    %17 = binary add i32 %14 %16
    %18 = const u32 0
    tree_store @t0[%18] %17 as i32
  }
}
)"));
}

TEST(Legalize, ShiftsMinMaxBooleansAndRsqrtBecomePrimitives) {
  std::string out = run_pass(R"(
kernel @k(a: u32, b: u32, x: f32, p: u1, q: u1) stage lowered {
  task serial $-1 "serial" {
    %0 = arg u32 0
    %1 = arg u32 1
    %2 = binary shl u32 %0 %1
    %3 = binary min u32 %2 %1
    %4 = arg f32 2
    %5 = unary rsqrt f32 %4
    %6 = arg u1 3
    %7 = arg u1 4
    %8 = binary add u1 %6 %7
    %9 = cast f32 %8
    %10 = binary add f32 %5 %9
    tree_store @t0[%3] %10 as f32
  }
}
)", [](Kernel& k) { legalize(k, everything_native()); });
  EXPECT_EQ(out, text(R"(
kernel @k(a: u32, b: u32, x: f32, p: u1, q: u1) stage legal {
  task serial $-1 "serial" {
    %0 = arg u32 0
    %1 = arg u32 1
    %2 = const u32 31
    %3 = binary bit_and u32 %1 %2
    %4 = binary shl u32 %0 %3
    %5 = binary cmp_lt u1 %1 %4
    %6 = select u32 %5 %1 %4
    %7 = arg f32 2
    %8 = const f32 1
    %9 = unary sqrt f32 %7
    %10 = binary div f32 %8 %9
    %11 = arg u1 3
    %12 = arg u1 4
    %13 = binary cmp_ne u1 %11 %12
    %14 = const f32 1
    %15 = const f32 0
    %16 = select f32 %13 %14 %15
    %17 = binary add f32 %10 %16
    tree_store @t0[%6] %17 as f32
  }
}
)"));
}

TEST(Legalize, FloatAtomicMinBecomesACompareAndSwapLoop) {
  std::string out = run_pass(R"(
kernel @k(x: f32) stage lowered {
  task serial $-1 "serial" {
    %0 = arg f32 0
    %1 = const u32 4
    %2 = tree_atomic min f32 @t0[%1] %0
    tree_store @t0[%1] %2 as f32
  }
}
)", [](Kernel& k) { legalize(k, everything_native()); });
  EXPECT_EQ(out, text(R"(
kernel @k(x: f32) stage legal {
  task serial $-1 "serial" {
    %0 = arg f32 0
    %1 = const u32 4
    %2 = alloca u32
    %3 = tree_load atomic u32 @t0[%1]
    local_store %2 %3
    %4 = alloca f32
    while {
      %5 = local_load u32 %2
      %6 = bitcast f32 %5
      %7 = binary cmp_lt u1 %0 %6
      %8 = select f32 %7 %0 %6
      %9 = bitcast u32 %8
      %10 = tree_cas u32 @t0[%1] %5 %9
      %11 = binary cmp_eq u1 %10 %5
      if %11 {
        local_store %4 %6
        break
      } else {
      }
      local_store %2 %10
    }
    %12 = local_load f32 %4
    tree_store @t0[%1] %12 as f32
  }
}
)"));
}

TEST(Legalize, WhatTheTargetHasStays) {
  const char* module = R"(
kernel @k(x: f32, y: f32) stage lowered {
  task serial $-1 "serial" {
    %0 = arg f32 0
    %1 = arg f32 1
    %2 = binary pow f32 %0 %1
    %3 = unary round f32 %2
    %4 = const u32 0
    tree_store @t0[%4] %3 as f16
  }
}
)";
  std::string native = run_pass(module, [](Kernel& k) { legalize(k, everything_native()); });
  EXPECT_NE(native.find("binary pow f32 %0 %1"), std::string::npos) << native;
  EXPECT_NE(native.find("unary round f32"), std::string::npos) << native;
  EXPECT_NE(native.find("as f16"), std::string::npos) << native;
  std::string lowered = run_pass(module, [](Kernel& k) { legalize(k, nothing_native()); });
  EXPECT_EQ(lowered.find("unary round"), std::string::npos) << lowered;
  EXPECT_EQ(lowered.find("as f16"), std::string::npos) << lowered;
  EXPECT_NE(lowered.find("as u16"), std::string::npos) << lowered;
}

// Print and assert become records in the context buffer (one message
// table, numbered in program order; runtime/core/context_layout.h), and a
// failed assertion's invocation stops.
TEST(Legalize, PrintAndAssertBecomeRecordsInTheContext) {
  std::string out = run_pass(R"(
kernel @k(a: i32, b: f64) stage lowered {
  task serial $-1 "serial" {
    %0 = arg i32 0
    %1 = arg f64 1
    print "a = {}, b = {}\n" %0 %1
    %2 = const i32 7
    %3 = binary cmp_lt u1 %0 %2
    assert %3 "a is {}\n" %0
  }
}
)", [](Kernel& k) { legalize(k, everything_native()); });
  EXPECT_EQ(out, text(R"(
kernel @k(a: i32, b: f64) stage legal
  message 0 print "a = {}, b = {}\n" i32 f64
  message 1 assert "a is {}\n" i32
{
  task serial $-1 "serial" {
    %0 = arg i32 0
    %1 = arg f64 1
    %2 = const u32 4
    %3 = const u32 18
    %4 = tree_atomic add u32 @context[%3] %2
    %5 = const u32 20
    %6 = tree_load u32 @context[%5]
    %7 = binary cmp_ge u1 %6 %2
    %8 = binary sub u32 %6 %2
    %9 = binary cmp_le u1 %4 %8
    %10 = binary logic_and u1 %7 %9
    if %10 {
      %11 = const u32 32
      %12 = binary add u32 %4 %11
      %13 = message_base
      %14 = const u32 0
      %15 = binary add u32 %13 %14
      tree_store @context[%12] %15 as u32
      %16 = const u32 1
      %17 = binary add u32 %12 %16
      tree_store @context[%17] %0 as i32
      %18 = const u32 2
      %19 = binary add u32 %12 %18
      tree_store @context[%19] %1 as f64
    } else {
      %20 = const u32 1
      %21 = const u32 19
      %22 = tree_atomic add u32 @context[%21] %20
    }
    %23 = const i32 7
    %24 = binary cmp_lt u1 %0 %23
    %25 = unary logic_not u1 %24
    if unlikely %25 {
      %26 = const u32 0
      %27 = const u32 1
      %28 = tree_cas u32 @context[%26] %26 %27
      %29 = binary cmp_eq u1 %28 %26
      if %29 {
        %30 = message_base
        %31 = const u32 1
        %32 = binary add u32 %30 %31
        %33 = const u32 1
        tree_store @context[%33] %32 as u32
        %34 = const u32 2
        tree_store @context[%34] %0 as i32
      } else {
      }
      stop
    } else {
    }
  }
}
)"));
  // Records and stops are the legal stage's only: the verifier says so.
  const std::string stop = test::verify_text(R"(
kernel @k() stage lowered {
  task serial $-1 "serial" {
    stop
  }
}
)");
  EXPECT_NE(stop.find("allowed only at stages legal"), std::string::npos) << stop;
}

// Float mod: the target's where it is exact; else a long division in a
// loop over locals (f64: only with 64-bit integers), allowed before a
// parallel loop at stage legal.
TEST(Legalize, FloatModBecomesALongDivisionUnlessTheTargetHasItExactly) {
  const char* module = R"(
kernel @k(x: f32, y: f64) stage lowered {
  task range_for $-1 "range_for" {
    %0 = arg f32 0
    %1 = arg f64 1
    %2 = const f32 3
    %3 = binary mod f32 %0 %2
    %4 = const f64 0.5
    %5 = binary mod f64 %1 %4
    %6 = const i32 0
    %7 = const i32 4
    %8 = range_for %6 %7 {
      %9 = const u32 0
      tree_store @t0[%9] %3 as f32
      %10 = const u32 2
      tree_store @t0[%10] %5 as f64
    }
  }
}
)";
  std::string native = run_pass(module, [](Kernel& k) { legalize(k, everything_native()); });
  EXPECT_NE(native.find("binary mod f32 %0 %2"), std::string::npos) << native;
  EXPECT_EQ(native.find("while"), std::string::npos) << native;
  std::string no_int64 = run_pass(module, [](Kernel& k) { legalize(k, nothing_native()); });
  EXPECT_EQ(test::count(no_int64, "while {"), 1u) << no_int64;  // f32's, before the parallel loop
  EXPECT_NE(no_int64.find("unary clz u32"), std::string::npos) << no_int64;
  EXPECT_EQ(no_int64.find("binary mod f32"), std::string::npos) << no_int64;
  EXPECT_NE(no_int64.find("binary mod f64"), std::string::npos) << no_int64;  // the target's OpFRem
  std::string with_int64 = run_pass(module, [](Kernel& k) { legalize(k, nothing_native_but_int64()); });
  EXPECT_EQ(test::count(with_int64, "while {"), 2u) << with_int64;
  EXPECT_NE(with_int64.find("unary clz u64"), std::string::npos) << with_int64;
  EXPECT_EQ(with_int64.find("binary mod"), std::string::npos) << with_int64;
  // Before legalize, a loop before the parallel loop is refused.
  const std::string loop = test::verify_text(R"(
kernel @k() stage lowered {
  task range_for $-1 "range_for" {
    while {
      break
    }
    %0 = const i32 0
    %1 = range_for %0 %0 {
    }
  }
}
)");
  EXPECT_NE(loop.find("side-effect-free statements before its range_for"), std::string::npos) << loop;
}

// The math functions: kept where the target has them; else written out,
// with only what the target is left with (f32 sin beyond 8192, no f64
// function, no 64-bit integer) in the output.
TEST(Legalize, MathFunctionsAreWrittenOutInF32WithoutSixtyFourBitIntegers) {
  const char* module = R"(
kernel @k(x: f32, y: f64) stage lowered {
  task serial $-1 "serial" {
    %0 = arg f32 0
    %1 = arg f64 1
    %2 = unary sin f32 %0
    %3 = unary exp f64 %1
    %4 = binary pow f64 %1 %1
    %5 = binary atan2 f64 %1 %1
    %6 = unary tan f64 %1
    %7 = const u32 0
    tree_store @t0[%7] %2 as f32
    tree_store @t0[%7] %3 as f64
    tree_store @t0[%7] %4 as f64
    tree_store @t0[%7] %5 as f64
    tree_store @t0[%7] %6 as f64
  }
}
)";
  std::string native = run_pass(module, [](Kernel& k) { legalize(k, everything_native()); });
  for (const char* kept : {"unary sin f32 %0", "unary exp f64 %1", "binary atan2 f64 %1 %1", "unary tan f64 %1"})
    EXPECT_NE(native.find(kept), std::string::npos) << kept << "\n" << native;
  std::string lowered = run_pass(module, [](Kernel& k) { legalize(k, nothing_native()); });
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = lowered.find(what); at != std::string::npos; at = lowered.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("unary sin f32"), 1u) << lowered;  // |x| > 8192
  EXPECT_EQ(count("unary tan f32"), 1u) << lowered;  // the f64 tan's |x| > 2^30
  for (const char* gone : {"unary exp ", "unary log ", "binary atan2", "binary pow", "unary sin f64", "unary tan f64",
                           "u64", "i64"})
    EXPECT_EQ(count(gone), 0u) << gone << "\n" << lowered;
  EXPECT_NE(lowered.find("unary floor f32"), std::string::npos) << lowered;  // exp's n = floor(x log2 e + 1/2)
}

TEST(Legalize, BitcastRoundTripsThroughTheTextFormAndTheVerifierChecksItsWidth) {
  std::string out = run_pass(R"(
kernel @k(x: f64) stage legal {
  task serial $-1 "serial" {
    %0 = arg f64 0
    %1 = bitcast u64 %0
    %2 = const u32 0
    tree_store @t0[%2] %1 as u64
  }
}
)", [](Kernel&) {});
  EXPECT_NE(out.find("%1 = bitcast u64 %0"), std::string::npos) << out;
  const std::string wide = test::verify_text(R"(
kernel @k(x: f64) stage legal {
  task serial $-1 "serial" {
    %0 = arg f64 0
    %1 = bitcast u32 %0
  }
}
)");
  EXPECT_NE(wide.find("bitcast of a f64 to u32"), std::string::npos) << wide;
}

// ---- meaning: the interpreter before and after ----

const DataType kTypes[] = {DataType::u1, DataType::i8, DataType::i16, DataType::i32, DataType::i64, DataType::u8,
                           DataType::u16, DataType::u32, DataType::u64, DataType::f32, DataType::f64};

// Edge values as bit patterns of `t`.
std::vector<uint64_t> edges(DataType t) {
  std::vector<uint64_t> out;
  if (t == DataType::u1) return {0, 1};
  if (is_float(t)) {
    const double inf = std::numeric_limits<double>::infinity();
    for (double v : {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 7.25, -7.75, 1e-3, 100.0, 1e30, -1e30, inf,
                     -inf, std::numeric_limits<double>::quiet_NaN(), 2147483648.0, -2147483649.0, 4294967296.0, 9.3e18,
                     2e19, 300.0, -129.0, 65535.5, -0.205, 22013607.936, 4503599627370495.5, 1e-310, 5e-39})
      out.push_back(double_to_bits(t, v));
    return out;
  }
  for (int64_t v : {0LL, 1LL, -1LL, 2LL, -2LL, 3LL, 5LL, -7LL, 7LL, 8LL, 15LL, 16LL, 31LL, 32LL, 33LL, 63LL, 64LL, 65LL,
                    100LL, -100LL, 127LL, 128LL, -128LL, -129LL, 255LL, 256LL, 32767LL, -32768LL, 65535LL, 65536LL,
                    2147483647LL, -2147483647LL - 1, 4294967295LL, 9223372036854775807LL, -9223372036854775807LL - 1})
    out.push_back(int_to_bits(t, v));
  return out;
}

// A lowered kernel that applies `op` to every pair of `inputs` (words of
// tree 0: `n` values of `in` from word 0, 2 words each) and stores each
// result at word 2 * n + 2 * k of tree 0.
struct Table {
  std::vector<uint64_t> values;
  DataType in = DataType::unknown;
};

using Op = std::function<Stmt*(Builder&, Stmt* a, Stmt* b)>;

std::unique_ptr<Kernel> pairwise_kernel(const FieldTable& fields, int n, DataType in, DataType out, bool binary,
                                        const Op& op) {
  auto k = std::make_unique<Kernel>("k", std::vector<KernelArg>{}, &fields);
  k->stage = Stage::lowered;
  Builder b(k->body());
  Stmt* task = b.task(TaskKind::serial, -1, "serial");
  Builder t(task->body());
  const int count = binary ? n * n : n;
  Stmt* loop = t.range_for(t.const_int(DataType::i32, 0), t.const_int(DataType::i32, count));
  Builder l(loop->body());
  Stmt* idx = l.loop_index(loop, 0);
  Stmt* i = binary ? l.binary(BinaryOp::div, idx, l.const_int(DataType::i32, n)) : idx;
  Stmt* j = binary ? l.binary(BinaryOp::mod, idx, l.const_int(DataType::i32, n)) : idx;
  auto address = [&](Stmt* element, int base) {
    Stmt* w = l.binary(BinaryOp::add, l.binary(BinaryOp::mul, element, l.const_int(DataType::i32, 2)),
                       l.const_int(DataType::i32, base));
    return l.cast(DataType::u32, w);
  };
  Stmt* a = l.tree_load(0, in, address(i, 0));
  Stmt* c = l.tree_load(0, in, address(j, 0));
  Stmt* r = op(l, a, c);
  l.tree_store(0, out, address(idx, 2 * n), r);
  return k;
}

// The words of tree 0 after running `k` on a buffer holding `values`.
std::vector<uint32_t> run(const Kernel& k, DataType in, const std::vector<uint64_t>& values, int results) {
  std::vector<uint32_t> words(2 * values.size() + 2 * static_cast<size_t>(results) + 8, 0);
  for (size_t v = 0; v < values.size(); ++v) rt::store_element(words, static_cast<int64_t>(2 * v), in, values[v]);
  Interpreter interp(k);
  InterpreterEnv env;
  env.buffer = [&](int, int) -> std::span<uint32_t> { return words; };
  interp.run({}, env);
  return words;
}

int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  auto key = [](float f) {
    const int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  return std::llabs(key(a) - key(b));
}

// Within the precision docs/ir.md states for math a target computes
// through legalize: f32 within 3 ulp; f64 (computed in f32) within 1e-4 of
// the result, absolute below 1 in magnitude. Infinities, NaN and zeros'
// signs exactly.
bool close(DataType t, uint64_t want, uint64_t got) {
  if (t == DataType::f32)
    return ulp_distance(std::bit_cast<float>(static_cast<uint32_t>(want)),
                        std::bit_cast<float>(static_cast<uint32_t>(got))) <= 3;
  const double w = std::bit_cast<double>(want), g = std::bit_cast<double>(got);
  if (std::isnan(w) || std::isnan(g)) return std::isnan(w) && std::isnan(g);
  if (std::isinf(w) || std::isinf(g) || w == 0) return w == g && std::signbit(w) == std::signbit(g);
  return std::fabs(w - g) <= 1e-4 * std::max(1.0, std::fabs(w));
}

bool same(DataType t, uint64_t a, uint64_t b) {
  if (a == b) return true;
  if (t == DataType::f32) return std::isnan(std::bit_cast<float>(static_cast<uint32_t>(a))) &&
                                 std::isnan(std::bit_cast<float>(static_cast<uint32_t>(b)));
  if (t == DataType::f64) return std::isnan(std::bit_cast<double>(a)) && std::isnan(std::bit_cast<double>(b));
  return false;
}

// Runs the kernel `make` builds before and after legalize for both targets
// and compares every result: bit for bit, or where `approximate` (a math
// function the target without it gets from legalize) within its precision.
void expect_same_meaning(const std::string& what, DataType in, DataType out, bool binary, const Op& op,
                         bool approximate = false) {
  SCOPED_TRACE(what);
  FieldTable fields;
  const std::vector<uint64_t> values = edges(in);
  const int n = static_cast<int>(values.size());
  const int results = binary ? n * n : n;
  const std::unique_ptr<Kernel> reference = pairwise_kernel(fields, n, in, out, binary, op);
  verify(*reference, "test kernel");
  const std::vector<uint32_t> want = run(*reference, in, values, results);
  for (const TargetOps& target : {nothing_native(), nothing_native_but_int64(), everything_native()}) {
    const bool near_enough = approximate && !target.float_math;
    std::unique_ptr<Kernel> k = pairwise_kernel(fields, n, in, out, binary, op);
    legalize(*k, target);
    verify(*k, "legalize");
    std::vector<uint32_t> got;
    try {
      got = run(*k, in, values, results);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    int reported = 0;
    for (int r = 0; r < results; ++r) {
      const int64_t at = 2 * n + 2 * r;
      const uint64_t w = rt::load_element(want, at, out), g = rt::load_element(got, at, out);
      if (!(near_enough ? close(out, w, g) : same(out, w, g)) && reported++ < 5)
        ADD_FAILURE() << "result " << r << " (" << (binary ? r / n : r) << ", " << (binary ? r % n : r)
                      << "): before 0x" << std::hex << w << ", after 0x" << g;
    }
  }
}

TEST(Legalize, EveryBinaryOperationMeansTheSameAfterwards) {
  for (DataType t : kTypes) {
    for (BinaryOp op : {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div, BinaryOp::mod, BinaryOp::min,
                        BinaryOp::max, BinaryOp::pow, BinaryOp::atan2, BinaryOp::bit_and, BinaryOp::bit_or,
                        BinaryOp::bit_xor, BinaryOp::shl, BinaryOp::shr, BinaryOp::cmp_lt, BinaryOp::cmp_le,
                        BinaryOp::cmp_gt, BinaryOp::cmp_ge, BinaryOp::cmp_eq, BinaryOp::cmp_ne}) {
      if (is_float(t) && needs_integers(op)) continue;
      if (!is_float(t) && op == BinaryOp::atan2) continue;
      const DataType result = binary_result_type(op, t, t);
      const bool math = op == BinaryOp::atan2 || (op == BinaryOp::pow && t == DataType::f64);
      expect_same_meaning(
          std::string(type_name(t)) + " " + op_name(op), t, result == DataType::u1 ? DataType::u32 : t, true,
          [op, result](Builder& b, Stmt* x, Stmt* y) {
            Stmt* r = b.binary(op, x, y);
            return result == DataType::u1 ? b.cast(DataType::u32, r) : r;
          },
          math);
    }
  }
}

TEST(Legalize, EveryUnaryOperationMeansTheSameAfterwards) {
  for (DataType t : kTypes) {
    for (UnaryOp op : {UnaryOp::neg, UnaryOp::bit_not, UnaryOp::abs, UnaryOp::floor, UnaryOp::ceil, UnaryOp::round,
                       UnaryOp::sqrt, UnaryOp::rsqrt, UnaryOp::exp, UnaryOp::log, UnaryOp::atan, UnaryOp::asin,
                       UnaryOp::acos, UnaryOp::tanh, UnaryOp::popcnt, UnaryOp::clz, UnaryOp::ctz}) {
      if (is_float(t) && needs_integers(op)) continue;
      if (!is_float(t) && !needs_integers(op) && op != UnaryOp::neg && op != UnaryOp::abs && op != UnaryOp::floor &&
          op != UnaryOp::ceil && op != UnaryOp::round)
        continue;
      if (unary_type(op, t) != t) continue;  // computed in another type: type_check casts first
      expect_same_meaning(
          std::string(type_name(t)) + " " + op_name(op), t, t, false,
          [op](Builder& b, Stmt* x, Stmt*) { return b.unary(op, x); },
          op == UnaryOp::exp || op == UnaryOp::log || op == UnaryOp::atan || op == UnaryOp::asin ||
              op == UnaryOp::acos || op == UnaryOp::tanh);
    }
  }
}

// The math functions a target without them gets from legalize, over many
// arguments, against the host's libm (computed here, in double for f64):
// f32 within 3 ulp (sin, cos and tan also within what an error of 2^-26
// in the reduced argument makes: |f'(x)| 2^-26); f64 within 1e-4 of the
// result, absolute below 1 in magnitude (docs/ir.md, "Precision of math
// functions").
struct MathCase {
  const char* name;
  UnaryOp op;
  double lo, hi;  // arguments, spread evenly and some at random
  double (*want)(double);
  double (*slope)(double);  // |f'(x)|, for the argument reduction's error; null: none
};

double sin_slope(double x) { return std::fabs(std::cos(x)); }
double cos_slope(double x) { return std::fabs(std::sin(x)); }
double tan_slope(double x) { return 1 + std::tan(x) * std::tan(x); }

const MathCase kMathCases[] = {
    {"exp", UnaryOp::exp, -110, 100, [](double x) { return std::exp(x); }, nullptr},
    {"log", UnaryOp::log, 1e-40, 1e6, [](double x) { return std::log(x); }, nullptr},
    {"log near 1", UnaryOp::log, 0.5, 2, [](double x) { return std::log(x); }, nullptr},
    {"sin", UnaryOp::sin, -8192, 8192, [](double x) { return std::sin(x); }, sin_slope},
    {"sin small", UnaryOp::sin, -4, 4, [](double x) { return std::sin(x); }, sin_slope},
    {"cos", UnaryOp::cos, -8192, 8192, [](double x) { return std::cos(x); }, cos_slope},
    {"cos small", UnaryOp::cos, -4, 4, [](double x) { return std::cos(x); }, cos_slope},
    {"tan", UnaryOp::tan, -8192, 8192, [](double x) { return std::tan(x); }, tan_slope},
    {"tan small", UnaryOp::tan, -1.6, 1.6, [](double x) { return std::tan(x); }, tan_slope},
    {"sin wide", UnaryOp::sin, -1e9, 1e9, [](double x) { return std::sin(x); }, sin_slope},
    {"tan wide", UnaryOp::tan, -1e9, 1e9, [](double x) { return std::tan(x); }, tan_slope},
    {"asin", UnaryOp::asin, -1, 1, [](double x) { return std::asin(x); }, nullptr},
    {"acos", UnaryOp::acos, -1, 1, [](double x) { return std::acos(x); }, nullptr},
    {"atan", UnaryOp::atan, -100, 100, [](double x) { return std::atan(x); }, nullptr},
    {"tanh", UnaryOp::tanh, -12, 12, [](double x) { return std::tanh(x); }, nullptr},
    {"tanh small", UnaryOp::tanh, -0.7, 0.7, [](double x) { return std::tanh(x); }, nullptr},
};

TEST(Legalize, MathFunctionsAreWithinTheirPrecisionOnATargetWithoutThem) {
  FieldTable fields;
  for (DataType t : {DataType::f32, DataType::f64}) {
    for (const MathCase& c : kMathCases) {
      SCOPED_TRACE(std::string(type_name(t)) + " " + c.name);
      const double lo = c.lo, hi = c.hi;
      std::vector<uint64_t> values;
      uint64_t seed = 12345;
      for (int k = 0; k < 4000; ++k) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        const double u = k < 2000 ? k / 1999.0 : static_cast<double>(seed >> 11) * 0x1p-53;
        const double x = c.op == UnaryOp::log && c.lo < 1e-30 ? std::exp(std::log(lo) + u * (std::log(hi) - std::log(lo)))
                                                               : lo + u * (hi - lo);
        values.push_back(double_to_bits(t, x));
      }
      const int n = static_cast<int>(values.size());
      std::unique_ptr<Kernel> k = pairwise_kernel(fields, n, t, t, false,
                                                  [&c](Builder& b, Stmt* x, Stmt*) { return b.unary(c.op, x); });
      legalize(*k, nothing_native());
      verify(*k, "legalize");
      const std::vector<uint32_t> words = run(*k, t, values, n);
      double worst = 0, worst_x = 0;
      for (int r = 0; r < n; ++r) {
        const uint64_t bits = rt::load_element(words, 2 * n + 2 * r, t);
        const double x = bits_to_double(t, values[static_cast<size_t>(r)]);
        const double got = bits_to_double(t, bits);
        double err;  // in units of the bound: above 1 fails
        if (t == DataType::f32) {
          const float want = static_cast<float>(c.want(x));
          const double reduction = c.slope != nullptr ? c.slope(x) * 0x1p-26 : 0;
          const bool within_reduction = std::fabs(got - static_cast<double>(want)) <= reduction;
          err = within_reduction ? 0 : static_cast<double>(ulp_distance(static_cast<float>(got), want)) / 3;
        } else {
          const double want = c.want(x);
          err = std::fabs(got - want) / (1e-4 * std::max(1.0, std::fabs(want)));
        }
        if (!(err <= worst)) {  // NaN too
          worst = std::isnan(err) ? INFINITY : err;
          worst_x = x;
        }
      }
      std::printf("[ math     ] %s %-10s worst %.3f of the bound (at x = %.17g)\n", std::string(type_name(t)).c_str(),
                  c.name, worst, worst_x);
      EXPECT_LE(worst, 1.0) << "worst at x = " << worst_x;
    }
  }
}

TEST(Legalize, EveryCastMeansTheSameAfterwards) {
  for (DataType from : kTypes)
    for (DataType to : kTypes)
      expect_same_meaning(std::string(type_name(from)) + " -> " + std::string(type_name(to)), from, to, false,
                          [to](Builder& b, Stmt* x, Stmt*) { return b.cast(to, x); });
}

TEST(Legalize, F16StorageRoundsTheSameAfterwards) {
  // f32 values around every f16 (subnormals, the largest, past the range).
  std::vector<uint64_t> values;
  for (uint32_t bits = 0; bits < (1u << 14); ++bits) {
    const uint32_t exp = 100 + (bits >> 9) % 48;
    values.push_back((bits & 1u) << 31 | exp << 23 | (bits * 2654435761u & 0x7fffffu));
  }
  for (float f : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 65504.0f, 65520.0f,
                  -0.0f, 0.0f})
    values.push_back(std::bit_cast<uint32_t>(f));
  FieldTable fields;
  const int n = static_cast<int>(values.size());
  auto make = [&] {
    auto k = std::make_unique<Kernel>("k", std::vector<KernelArg>{}, &fields);
    k->stage = Stage::lowered;
    Builder b(k->body());
    Stmt* task = b.task(TaskKind::serial, -1, "serial");
    Builder t(task->body());
    Stmt* loop = t.range_for(t.const_int(DataType::i32, 0), t.const_int(DataType::i32, n));
    Builder l(loop->body());
    Stmt* i = l.cast(DataType::u32, l.loop_index(loop, 0));
    Stmt* two = l.const_int(DataType::u32, 2);
    Stmt* x = l.tree_load(0, DataType::f32, l.binary(BinaryOp::mul, i, two));
    Stmt* half_at = l.binary(BinaryOp::add, l.binary(BinaryOp::mul, i, two), l.const_int(DataType::u32, 2 * n));
    l.tree_store(0, DataType::f16, half_at, x);
    Stmt* back = l.tree_load(0, DataType::f16, half_at);
    l.tree_store(0, DataType::f32, l.binary(BinaryOp::add, half_at, l.const_int(DataType::u32, 1)), back);
    return k;
  };
  const std::vector<uint32_t> want = run(*make(), DataType::f32, values, n);
  std::unique_ptr<Kernel> k = make();
  legalize(*k, nothing_native());
  verify(*k, "legalize");
  const std::vector<uint32_t> got = run(*k, DataType::f32, values, n);
  for (int v = 0; v < n; ++v) {
    const size_t at = static_cast<size_t>(2 * n + 2 * v);
    EXPECT_EQ(got[at], want[at]) << "f16 bits of value " << v;
    EXPECT_TRUE(same(DataType::f32, want[at + 1], got[at + 1])) << "value " << v;
  }
}

TEST(Legalize, FloatAtomicMinAndMaxMeanTheSameAfterwards) {
  for (DataType t : {DataType::f32, DataType::f64})
    for (AtomicOp op : {AtomicOp::min, AtomicOp::max}) {
      // The running min/max of every edge value, and the old values seen.
      expect_same_meaning(std::string(type_name(t)) + " atomic " + op_name(op), t, t, false,
                          [op, t](Builder& b, Stmt* x, Stmt*) {
                            return b.tree_atomic(op, 0, t, b.const_int(DataType::u32, 0), x);
                          });
    }
}

// What a kernel prints, and the error its failed assertion raises, run
// by the interpreter before legalize (Print and Assert statements) and
// after it (records in the context that the runtime's ContextRecords
// formats, as on every device).
struct Said {
  std::string printed;
  std::string error;
};
Said interpret(const Kernel& k, std::span<const uint64_t> args) {
  Said said;
  Interpreter interp(k);
  InterpreterEnv env;
  std::vector<uint32_t> words(64, 0);
  env.buffer = [&](int, int) -> std::span<uint32_t> { return words; };
  env.print = [&](std::string_view s) { said.printed += s; };
  try {
    interp.run(args, env);
  } catch (const KernelError& e) {
    said.error = e.what();
  }
  return said;
}

TEST(Legalize, PrintsAndAssertionsSayTheSameAfterwards) {
  // Every scalar type, 64-bit values at odd and even places of a record,
  // many records (a loop), and an assertion whose values are of each width.
  ParsedModule m = parse_module(text(R"(
kernel @k(a: i32, b: f64, c: i64) stage lowered {
  task serial $-1 "serial" {
    %0 = arg i32 0
    %1 = arg f64 1
    %2 = arg i64 2
    %3 = cast i8 %0
    %4 = cast u16 %0
    %5 = cast u64 %2
    %6 = cast f32 %1
    %7 = const i32 0
    %8 = binary cmp_lt u1 %0 %7
    print "{} {} {} {} {} {} {} {}\n" %0 %1 %2 %3 %4 %5 %6 %8
    print "{} then {}\n" %2 %0
    print "nothing\n"
    %9 = const i32 300
    %10 = range_for %7 %9 {
      %11 = loop_index i32 %10 0
      %12 = cast f64 %11
      print "{}: {}\n" %11 %12
    }
    %13 = const i32 50
    %14 = binary cmp_lt u1 %0 %13
    assert %14 "a = {} with {}, {}, {} and {}\n" %0 %1 %3 %8 %5
    print "after\n"
  }
}
)"), "test");
  const Kernel& lowered = *m.kernels.front();
  std::unique_ptr<Kernel> copy;
  const Kernel& legal = legal_form(lowered, nothing_native(), copy);
  ASSERT_EQ(legal.stage, Stage::legal);
  ASSERT_EQ(legal.messages.size(), 6u);
  for (int32_t a : {-3, 7, 99, 1234567}) {
    const uint64_t args[3] = {static_cast<uint32_t>(a), std::bit_cast<uint64_t>(a * -0.75),
                              static_cast<uint64_t>(int64_t{a} * -1000000007LL)};
    const Said before = interpret(lowered, args);
    const Said after = interpret(legal, args);
    EXPECT_EQ(after.printed, before.printed) << "a = " << a;
    EXPECT_EQ(after.error, before.error) << "a = " << a;
    if (a == -3) {  // by hand: -3 * -0.75, -3 * -1000000007, (u16)-3
      EXPECT_EQ(after.printed.substr(0, 73), "-3 2.25 3000000021 -3 65533 3000000021 2.25 1\n3000000021 then -3\nnothing\n");
    }
    if (a == 99) {
      EXPECT_EQ(after.error, "kernel 'k': a = 99 with -74.25, 99, 0 and 18446743974709550923\n");
    }
    EXPECT_NE(before.printed.find("299: 299\n"), std::string::npos) << before.printed;
    EXPECT_EQ(before.error.empty(), a < 50) << before.error;
    EXPECT_EQ(before.printed.find("after") != std::string::npos, a < 50) << before.printed;
  }
}

}  // namespace
}  // namespace grove::ir
