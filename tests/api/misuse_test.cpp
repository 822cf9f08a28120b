// Misuse through the public API, as a careless or hostile user would write
// it: every case either gives the correct value or raises a grove::Error
// whose message names what is wrong; none crashes, corrupts memory or
// answers wrong without a word. (Numbers in the test names refer to the
// items of the hardening issue.)
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <type_traits>

#include "backend_fixture.h"
#include "ir/assert.h"
#include "ir/snode.h"
#include "program/program_impl.h"

using namespace grove;
using grove::testing::error_of;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

class Misuse : public grove::testing::BackendTest {};
GROVE_ALL_BACKENDS(Misuse);

// ---- 1. statistics are values ------------------------------------------------------

// Stats::find used to return a pointer into the Stats it was called on, so
// `prog.stats().find(...)` dangled at the end of the statement.
static_assert(!std::is_pointer_v<decltype(std::declval<Stats>().find(""))>,
              "Stats::find must return a copy, not a pointer into a temporary");

TEST_P(Misuse, 01_StatsOfOneSNodeOutliveTheirStats) {
  Program prog(config());
  Field x = prog.field(f32, "x");
  SNode& blocks = prog.root().pointer(i, 8);
  blocks.dense(i, 4).place(x);
  x.write({5}, 1.0f);
  std::optional<SNodeStats> found = prog.stats().find(blocks.name());
  SNodeStats at = prog.stats().at(blocks.name());
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->active_cells, 1);
  EXPECT_EQ(at.active_cells, 1);
  EXPECT_FALSE(prog.stats().find("S42pointer").has_value());
  EXPECT_THAT(error_of([&] { prog.stats().at("S42pointer"); }),
              AllOf(HasSubstr("'S42pointer'"), HasSubstr(blocks.name())));
}

// ---- 2. shape and size arithmetic --------------------------------------------------

TEST_P(Misuse, 02_ExtentsWhoseProductOverflowsAreRefused) {
  Program prog(config());
  // 65536^4 = 2^64 cells: the product wrapped to 0.
  EXPECT_THAT(error_of([&] { prog.root().dense(ijkl, 65536); }), AllOf(HasSubstr("S0root"), HasSubstr("2^40")));
  // 2^16 * 2^48 indices on one axis wrapped to 0 as well.
  SNode& outer = prog.root().dense(i, 1 << 16);
  EXPECT_THAT(error_of([&] { outer.dense(i, int64_t{1} << 48); }), AllOf(HasSubstr("axis 0"), HasSubstr("2^31-1")));
  EXPECT_THAT(error_of([&] { prog.root().dense(i, int64_t{1} << 62); }), HasSubstr("2^31-1"));
  // The program is still usable.
  Field x = prog.field(f32, "x");
  outer.dense(i, 4).place(x);
  x.write({3}, 2.0f);
  EXPECT_EQ(x.read<float>({3}), 2.0f);
}

TEST_P(Misuse, 02_HugeCapacitiesAreRefusedNamingTheSNode) {
  Program prog(config());
  Field x = prog.field(f32, "x");
  SNode& blocks = prog.root().pointer(i, 16);
  blocks.dense(i, 8).place(x);
  EXPECT_THAT(error_of([&] { blocks.capacity(int64_t{1} << 61); }),
              AllOf(HasSubstr(blocks.name()), HasSubstr("2^61"), HasSubstr("4294967294")));
  EXPECT_THAT(error_of([&] { blocks.capacity(0); }), HasSubstr(blocks.name()));
  x.write({5}, 1.0f);  // the default capacity still applies
  EXPECT_EQ(x.read<float>({5}), 1.0f);
}

// ---- 3. host access stays inside the tree's buffer ---------------------------------

TEST_P(Misuse, 03_HostWordsOutsideATreeAreAnErrorNotHeapCorruption) {
  Program prog(config());
  Field x = prog.field(i32, "x", {16});
  x.write({0}, 1);
  detail::ProgramImpl* p = prog.impl();
  const int tree = p->tree_of_field(x.component_ids()[0]);
  const int instance = p->own_instance_of_field(x.component_ids()[0]);
  const int64_t words = p->forest().tree(tree).total_words;
  uint32_t w[4] = {};
  rt::Device& device = p->context->device();
  EXPECT_THROW(device.read_words(instance, words - 1, 2, w), InternalError);
  EXPECT_THROW(device.read_words(instance, -1, 1, w), InternalError);
  EXPECT_THROW(device.write_words(instance, words, 1, w), InternalError);
  EXPECT_THROW(device.write_words(instance, int64_t{1} << 40, 4, w), InternalError);
  EXPECT_EQ(x.read<int>({0}), 1);
}

// ---- 4. kernels launched while a kernel is recorded --------------------------------

TEST_P(Misuse, 04_AKernelLaunchedInsideItsOwnBodyIsAnError) {
  Program prog(config());
  Kernel self;
  self = prog.kernel("self", [&] { self(); });
  EXPECT_THAT(error_of([&] { self(); }), AllOf(HasSubstr("kernel 'self'"), HasSubstr("itself")));
  Kernel ir_of_self;
  ir_of_self = prog.kernel("ir_of_self", [&] { (void)ir_of_self.ir(); });
  EXPECT_THAT(error_of([&] { ir_of_self(); }), HasSubstr("'ir_of_self'"));
}

TEST_P(Misuse, 04_AKernelLaunchedInsideAnotherKernelsBodyIsAnError) {
  Program prog(config());
  Field x = prog.field(i32, "x", {4});
  Kernel inner = prog.kernel("inner", [&] { x(0) = 7; });
  Kernel outer = prog.kernel("outer", [&] {
    x(1) = 1;
    inner();
  });
  EXPECT_THAT(error_of([&] { outer(); }), AllOf(HasSubstr("'outer'"), HasSubstr("'inner'")));
  EXPECT_EQ(x.read<int>({0}), 0);  // inner never ran on the host
  Kernel reads = prog.kernel("reads", [&] { x(2) = x.read<int>({0}); });
  EXPECT_THAT(error_of([&] { reads(); }), AllOf(HasSubstr("Field::read"), HasSubstr("'reads'")));
  Kernel writes = prog.kernel("writes", [&] { x.write({0}, 3); });
  EXPECT_THAT(error_of([&] { writes(); }), AllOf(HasSubstr("Field::write"), HasSubstr("'writes'")));
  Kernel syncs = prog.kernel("syncs", [&] { prog.sync(); });
  EXPECT_THAT(error_of([&] { syncs(); }), HasSubstr("'syncs'"));
  // The failed kernels recorded nothing; the good one still runs.
  inner();
  EXPECT_EQ(x.read<int>({0}), 7);
}

// ---- 5. a failed layout leaves the program as it was -------------------------------

TEST_P(Misuse, 05_AFailedLayoutLeavesTheProgramUsable) {
  Program prog(config());
  Field x = prog.field(f32, "x");
  SNode& blocks = prog.root().pointer(i, 1 << 20);
  blocks.dense(i, 64).place(x);
  blocks.capacity(int64_t{1} << 30);  // 2^36 words: more than any buffer
  std::string first = error_of([&] { x.write({3}, 1.0f); });
  EXPECT_THAT(first, HasSubstr(blocks.name()));
  // Used again, the same error (not an internal one about a half-made tree).
  EXPECT_EQ(error_of([&] { x.read<float>({3}); }), first);
  // The tree is not in use yet: a smaller capacity makes it fit.
  blocks.capacity(1000);
  x.write({3}, 1.0f);
  EXPECT_EQ(x.read<float>({3}), 1.0f);
  Field y = prog.field(f32, "y", {8});
  y.write({7}, 2.0f);
  EXPECT_EQ(y.read<float>({7}), 2.0f);
}

// ---- 6. handles that outlive their Program -----------------------------------------

TEST_P(Misuse, 06_HandlesOutlivingTheirProgramRaise) {
  Field x;
  Kernel k;
  {
    Program prog(config());
    x = prog.field(f32, "x", {1024});
    k = prog.kernel("k", [&] { for_range(0, 1024, [&](Expr n) { x(n) = 1.0f; }); });
    k();
    k();  // queued on Vulkan when the Program goes
  }
  EXPECT_THAT(error_of([&] { x.read<float>({0}); }), HasSubstr("destroyed"));
  EXPECT_THAT(error_of([&] { x.write({0}, 1.0f); }), HasSubstr("destroyed"));
  EXPECT_THAT(error_of([&] { x.to_vector<float>(); }), HasSubstr("destroyed"));
  EXPECT_THAT(error_of([&] { (void)x.name(); }), HasSubstr("destroyed"));
  EXPECT_THAT(error_of([&] { k(); }), HasSubstr("destroyed"));
  EXPECT_THAT(error_of([&] { (void)k.ir(); }), HasSubstr("destroyed"));
  Field empty;
  EXPECT_THAT(error_of([&] { empty.read<float>({0}); }), HasSubstr("empty"));
}

// ---- 7. appends that found no room are not counted ---------------------------------

TEST_P(Misuse, 07_AppendsThatFindNoChunkLeaveNoHoles) {
  Program prog(config());
  Field v = prog.field(i32, "v");
  Field count = prog.field(i32, "count", {});
  SNode& list = prog.root().dense(i, 1).dynamic(j, 64, 4);
  list.place(v);
  list.capacity(2);  // 2 chunks of 4: 8 elements fit, the other 12 appends cannot
  Field got = prog.field(i32, "got", {20});
  Kernel fill = prog.kernel("fill", [&] {
    for_range(0, 20, [&](Expr n) { got(n) = append(list, {0}, n + 1); });
  });
  EXPECT_THAT(error_of([&] { fill(); prog.sync(); }), HasSubstr("ran out of pool memory"));
  Kernel visit = prog.kernel("visit", [&] {
    for_each(v, [&](Expr a, Expr b) {
      count() += 1;
      v(a, b) = v(a, b) * 100;  // the value an append wrote, never a 0 that no one wrote
    });
  });
  Kernel len = prog.kernel("len", [&] { count() = length(list, {0}); });
  len();
  const int length_after = count.read<int>();
  count.write({}, 0);
  visit();
  EXPECT_EQ(count.read<int>(), length_after);
  EXPECT_LE(length_after, 8);
  std::set<int> values;
  for (int k = 0; k < length_after; ++k) {
    int value = v.read<int>({0, k});
    EXPECT_GE(value, 100) << "element " << k << " was counted but never written";
    values.insert(value);
  }
  EXPECT_EQ(static_cast<int>(values.size()), length_after);
  if (GetParam() == Arch::Interp) {
    // One valid order: appends 0..7 fill both chunks, the rest fail.
    EXPECT_EQ(length_after, 8);
    std::vector<int> returned = got.to_vector<int>();
    for (int n = 0; n < 20; ++n) EXPECT_EQ(returned[static_cast<size_t>(n)], n < 8 ? n : -1) << n;
  }
}

TEST_P(Misuse, 07_AWriteWhoseChunkFindsNoRoomDoesNotExtendTheLength) {
  Program prog(config());
  Field v = prog.field(i32, "v");
  SNode& list = prog.root().dense(i, 2).dynamic(j, 64, 4);
  list.place(v);
  list.capacity(1);
  Field lengths = prog.field(i32, "lengths", {2});
  Kernel k = prog.kernel("k", [&] {
    v(0, 2) = 5;   // takes the only chunk
    v(1, 40) = 6;  // finds none
  });
  EXPECT_THAT(error_of([&] { k(); prog.sync(); }), HasSubstr("ran out of pool memory"));
  Kernel len = prog.kernel("len", [&] { for_range(0, 2, [&](Expr n) { lengths(n) = length(list, {n}); }); });
  len();
  EXPECT_EQ(lengths.read<int>({0}), 3);
  EXPECT_EQ(lengths.read<int>({1}), 0);
}

TEST_P(Misuse, 07_AppendsRacingADeactivationNeverWrapTheLength) {
  Program prog(config());
  Field v = prog.field(i32, "v");
  SNode& list = prog.root().dense(i, 1).dynamic(j, 128, 8);
  list.place(v);
  Field count = prog.field(i32, "count", {});
  Kernel race = prog.kernel("race", [&] {
    for_range(0, 20000, [&](Expr n) {
      if_(n % 97 == 0, [&] { deactivate(list, {0}); }).else_([&] { append(list, {0}, n + 1); });
    });
  });
  // Appends past the maximum length are dropped and reported; the list
  // itself stays consistent.
  (void)error_of([&] { race(); prog.sync(); });
  Kernel visit = prog.kernel("visit", [&] {
    for_each(v, [&](Expr a, Expr b) { count() += select(v(a, b) == 0, 1000000, 1); });
  });
  visit();
  EXPECT_LE(count.read<int>(), 128);  // no zero element is visited, and no more than the maximum
}

// ---- 8. handles of another Program -------------------------------------------------

TEST_P(Misuse, 08_HandlesOfAnotherProgramAreRefusedNamingBoth) {
  Program a(config());
  Program b(config());
  Field xa = a.field(f32, "x", {8});
  SNode& sa = a.root().pointer(i, 4);
  Field ya = a.field(f32, "y");
  sa.place(ya);
  Field xb = b.field(f32, "x", {8});
  const std::string pa = a.impl()->label(), pb = b.impl()->label();
  ASSERT_NE(pa, pb);
  Kernel k1 = b.kernel("loops_over_a", [&] { for_each(xa, [&](Expr n) { xb(n) = 1.0f; }); });
  EXPECT_THAT(error_of([&] { k1(); }), AllOf(HasSubstr("'loops_over_a'"), HasSubstr("field 'x'"), HasSubstr(pa), HasSubstr(pb)));
  Kernel k2 = b.kernel("activates_in_a", [&] { activate(sa, {1}); });
  EXPECT_THAT(error_of([&] { k2(); }), AllOf(HasSubstr(sa.name()), HasSubstr(pa), HasSubstr(pb)));
  Kernel k3 = b.kernel("reads_a", [&] { xb(0) = xa(0); });
  EXPECT_THAT(error_of([&] { k3(); }), AllOf(HasSubstr(pa), HasSubstr(pb)));
  Kernel k4 = b.kernel("loops_over_sa", [&] { for_each(sa, [&](Expr) {}); });
  EXPECT_THAT(error_of([&] { k4(); }), AllOf(HasSubstr(pa), HasSubstr(pb)));
  EXPECT_THAT(error_of([&] { b.root().dense(i, 4).place(ya); }), AllOf(HasSubstr(pa), HasSubstr(pb)));
  for (float f : xb.to_vector<float>()) EXPECT_EQ(f, 0.0f);
}

// ---- 9. argument conversion --------------------------------------------------------

TEST_P(Misuse, 09_ArgumentsThatDoNotConvertExactlyAreRefused) {
  Program prog(config());
  Field out = prog.field(f64, "out", {});
  Kernel ki = prog.kernel("ki", {arg(i32, "n")}, [&](Args a) { out() = cast(f64, a[0]); });
  Kernel ku = prog.kernel("ku", {arg(u32, "n")}, [&](Args a) { out() = cast(f64, a[0]); });
  Kernel k8 = prog.kernel("k8", {arg(i8, "n")}, [&](Args a) { out() = cast(f64, a[0]); });
  Kernel kf = prog.kernel("kf", {arg(f32, "x")}, [&](Args a) { out() = cast(f64, a[0]); });
  Kernel kh = prog.kernel("kh", {arg(f16, "x")}, [&](Args a) { out() = cast(f64, a[0]); });
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto refused = [&](auto&& launch, const char* kernel, const char* arg_name) {
    std::string m = error_of(launch);
    EXPECT_THAT(m, AllOf(HasSubstr(std::string("kernel '") + kernel + "'"), HasSubstr(std::string("'") + arg_name + "'")));
    return m;
  };
  refused([&] { ki(nan); }, "ki", "n");
  refused([&] { ki(inf); }, "ki", "n");
  refused([&] { ki(-inf); }, "ki", "n");
  refused([&] { ki(3e9); }, "ki", "n");
  refused([&] { ki(std::numeric_limits<uint64_t>::max()); }, "ki", "n");
  refused([&] { ki(int64_t{1} << 31); }, "ki", "n");
  refused([&] { ku(-1); }, "ku", "n");
  refused([&] { k8(200); }, "k8", "n");
  refused([&] { kf(1e300); }, "kf", "x");
  refused([&] { kh(70000.0f); }, "kh", "x");
  // A fraction is no integer: refused, naming both types.
  EXPECT_THAT(refused([&] { ki(2.9); }, "ki", "n"),
              AllOf(HasSubstr("i32)"), HasSubstr("2.9 (f64), which is not a whole number")));
  refused([&] { ki(-0.5f); }, "ki", "n");
  // What keeps its value converts.
  ki(-2.0);
  EXPECT_EQ(out.read<double>(), -2.0);
  ki(std::numeric_limits<int32_t>::min());
  EXPECT_EQ(out.read<double>(), -2147483648.0);
  ku(4294967295u);
  EXPECT_EQ(out.read<double>(), 4294967295.0);
  ku(int64_t{4294967295});
  EXPECT_EQ(out.read<double>(), 4294967295.0);
  k8(-128);
  EXPECT_EQ(out.read<double>(), -128.0);
  kf(nan);
  EXPECT_TRUE(std::isnan(out.read<double>()));
  kf(0.1);
  EXPECT_EQ(out.read<double>(), static_cast<double>(0.1f));
  kh(0.1);
  EXPECT_EQ(out.read<double>(), 0.0999755859375);  // rounded to f16 first
}

TEST_P(Misuse, 09_DuplicateArgumentNamesAreRefused) {
  Program prog(config());
  EXPECT_THAT(error_of([&] { prog.kernel("dup", {arg(i32, "n"), arg(f32, "n")}, [](Args) {}); }),
              AllOf(HasSubstr("'dup'"), HasSubstr("'n'")));
  // Unnamed arguments get distinct names; one named like them clashes.
  EXPECT_THAT(error_of([&] { prog.kernel("dup2", {arg(i32), arg(i32, "arg0")}, [](Args) {}); }),
              HasSubstr("'arg0'"));
}

// ---- 10. print output is delivered, or its loss counted exactly ---------------------

TEST_P(Misuse, 10_EveryPrintedLineIsDeliveredOrCountedExactly) {
  Program prog(config());
  constexpr int kLines = 200000;
  int lines = 0;
  std::string warning;
  prog.set_print_sink([&](std::string_view text) {
    if (text.find("[grove]") != std::string_view::npos) warning = std::string(text);
    else ++lines;
  });
  Kernel p = prog.kernel("chatty", [&] { for_range(0, kLines, [&](Expr n) { print("n = ", n); }); });
  p();
  if (lines < kLines) {
    // A first launch may drop what its buffer cannot hold: the warning says
    // exactly how many, and the buffer grows for the next launch.
    EXPECT_THAT(warning, AllOf(HasSubstr("'chatty'"), HasSubstr(std::to_string(kLines) + " lines"),
                               HasSubstr(std::to_string(kLines - lines) + " of them were dropped")));
    lines = 0;
    warning.clear();
    p();
  }
  EXPECT_EQ(lines, kLines);
  EXPECT_EQ(warning, "");
}

// ---- 11. values kept across tasks ---------------------------------------------------

// Kernels that keep `values` values from a serial task to a parallel one.
Kernel keeping(Program& prog, const std::string& name, Field out, int values) {
  return prog.kernel(name, [&prog, out, values] {
    (void)prog;
    std::vector<Var> kept;
    kept.reserve(static_cast<size_t>(values));  // a Var copied on growth would be a new variable
    for (int n = 0; n < values; ++n) kept.emplace_back(out(n % 4) + n);
    for_range(0, 4, [&](Expr i) {
      Var sum(i32, 0);
      for (const Var& v : kept) sum += v;
      out(i) = sum + i;
    });
  });
}

TEST_P(Misuse, 11_ManyKernelsKeepingValuesDoNotExhaustAScratchBudget) {
  Program prog(config());
  Field out = prog.field(i32, "out", {4});
  // 96 kernels x 100 values x 2 words: past the 16 K words once shared by
  // all. (Many small kernels rather than fewer large ones: lavapipe's LLVM
  // takes time superlinear in a shader's live values, 3 s for each of 400
  // with a cold shader cache, as CI has.)
  for (int k = 0; k < 96; ++k) {
    Kernel kernel = keeping(prog, "keep" + std::to_string(k), out, 100);
    out.from_vector(std::vector<int>{0, 0, 0, 0});
    kernel();
    EXPECT_EQ(out.read<int>({2}), 100 * 99 / 2 + 2) << k;
  }
}

TEST_P(Misuse, 11_OneKernelKeepingMoreThan8192Values) {
  Program prog(config());
  if (prog.impl()->context->device().name().find("llvmpipe") != std::string::npos)
    GTEST_SKIP() << "lavapipe's LLVM spends minutes on a shader with 10,000 live values (measured: over "
                    "5 min for 4,000); the interpreter and GPU drivers run this test";
  Field out = prog.field(i32, "out", {4});
  Kernel kernel = keeping(prog, "many", out, 10000);
  kernel();
  EXPECT_EQ(out.read<int>({1}), 10000 * 9999 / 2 + 1);
}

// ---- 12. no internal error through the public API ----------------------------------

TEST_P(Misuse, 12_AVarOfUnknownTypeIsAUserError) {
  Program prog(config());
  Kernel k = prog.kernel("v", [&] { Var v(DataType::unknown); });
  EXPECT_THAT(error_of([&] { k(); }), AllOf(HasSubstr("kernel 'v'"), HasSubstr("data type")));
  Kernel k2 = prog.kernel("v2", [&] { Var v(DataType::unknown, 1); });
  EXPECT_THAT(error_of([&] { k2(); }), HasSubstr("kernel 'v2'"));
}

TEST_P(Misuse, 12_AValueUsedOutsideTheLoopThatComputedItIsAUserError) {
  Program prog(config());
  Field x = prog.field(i32, "x", {4});
  Kernel k = prog.kernel("escapes", [&] {
    Expr last = 0;
    for_range(0, 4, [&](Expr n) { last = n * 2; });
    x(0) = last;
  });
  EXPECT_THAT(error_of([&] { k(); }), AllOf(HasSubstr("kernel 'escapes'"), HasSubstr("Var")));
  Kernel branch = prog.kernel("branch", [&] {
    Expr inner = 0;
    if_(x(1) > 0, [&] { inner = x(1) + 1; });
    x(0) = inner;
  });
  EXPECT_THAT(error_of([&] { branch(); }), HasSubstr("kernel 'branch'"));
  // The same through a Var declared outside is how it is done (in a serial
  // loop: the iterations of a kernel's outermost loop run in parallel, so
  // which one writes last is not defined there).
  Kernel ok = prog.kernel("ok", [&] {
    for_range(0, 1, [&](Expr) {
      Var last = 0;
      for_range(0, 4, [&](Expr n) { last = n * 2; });
      x(0) = last;
    });
  });
  ok();
  EXPECT_EQ(x.read<int>({0}), 6);
}

TEST_P(Misuse, 12_ValuesOfAnotherKernelAreAUserError) {
  Program prog(config());
  Field x = prog.field(i32, "x", {4});
  std::optional<Expr> kept;
  Kernel first = prog.kernel("first", [&] {
    kept = x(1) + 1;
    x(0) = *kept;
  });
  first();
  ASSERT_TRUE(kept.has_value());
  Kernel second = prog.kernel("second", [&] { x(2) = *kept; });
  EXPECT_THAT(error_of([&] { second(); }), HasSubstr("kernel 'second'"));
}

TEST_P(Misuse, 12_ElifAfterOtherStatementsWouldReorderThemAndIsRefused) {
  Program prog(config());
  Field x = prog.field(i32, "x", {4});
  Kernel k = prog.kernel("k", [&] {
    IfBuilder b = if_(x(1) > 0, [&] { x(2) = 1; });
    x(0) = 5;
    b.elif_(x(1) < 0, [&] { x(2) = 2; });
  });
  EXPECT_THAT(error_of([&] { k(); }), AllOf(HasSubstr("kernel 'k'"), HasSubstr("elif_")));
}

TEST_P(Misuse, 12_ConstantsAndPrintsTheUserCanWrite) {
  Program prog(config());
  Field x = prog.field(f32, "x", {});
  Kernel k = prog.kernel("unknown_constant", [&] { x() = Expr::constant(DataType::unknown, 1.5); });
  EXPECT_THAT(error_of([&] { k(); }), HasSubstr("kernel 'unknown_constant'"));
  // Constants keep their value or are refused: 1e19 as a u64 once came out
  // as 9223372036854775808.
  Field big = prog.field(u64, "big", {2});
  Kernel exact = prog.kernel("exact", [&] {
    big(0) = Expr::constant(u64, 1e19);
    big(1) = Expr::constant(u64, ~uint64_t{0} - 2047);
  });
  exact();
  EXPECT_EQ(big.read<uint64_t>({0}), 10000000000000000000ull);
  EXPECT_EQ(big.read<uint64_t>({1}), ~uint64_t{0} - 2047);
  auto refused = [&](const std::string& name, const std::function<Expr()>& c) {
    Kernel bad = prog.kernel(name, [&, c] { x() = cast(f32, c()); });
    return error_of([&] { bad(); });
  };
  EXPECT_THAT(refused("i8_300", [] { return Expr::constant(i8, 300); }),
              AllOf(HasSubstr("kernel 'i8_300'"), HasSubstr("Expr::constant(i8, ...) was given 300 (i64)"),
                    HasSubstr("out of the range of i8")));
  EXPECT_THAT(refused("i32_frac", [] { return Expr::constant(i32, 2.5); }), HasSubstr("not a whole number"));
  EXPECT_THAT(refused("u64_neg", [] { return Expr::constant(u64, -1); }), HasSubstr("out of the range of u64"));
  EXPECT_THAT(refused("i32_nan", [] { return Expr::constant(i32, std::nan("")); }), HasSubstr("Expr::constant(i32"));
  EXPECT_THAT(refused("f32_huge", [] { return Expr::constant(f32, 1e300); }), HasSubstr("out of the range of f32"));
  std::string out;
  prog.set_print_sink([&](std::string_view t) { out += t; });
  x.write({}, 2.0f);
  Kernel braces = prog.kernel("braces", [&] { print("{} {", x(), "}"); });
  braces();
  EXPECT_EQ(out, "{} {2}\n");
}

TEST_P(Misuse, 12_ShapesAreCheckedBeforeTheFieldExists) {
  Program prog(config());
  EXPECT_THAT(error_of([&] { prog.vector_field(2, f32, "v", {2, 2, 2, 2, 2, 2, 2, 2, 2}); }),
              AllOf(HasSubstr("'v'"), HasSubstr("at most 8 axes")));
  EXPECT_THAT(error_of([&] { prog.field(f32, "x", {4, 0}); }), AllOf(HasSubstr("'x'"), HasSubstr("axis 1")));
  // The names are still free.
  Field v = prog.vector_field(2, f32, "v", {2});
  Field x = prog.field(f32, "x", {4, 1});
  EXPECT_EQ(x.shape(), (Shape{4, 1}));
  EXPECT_EQ(v.shape(), (Shape{2}));
}

TEST_P(Misuse, 12_ADynamicListShorterThanTheDefaultChunk) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& list = prog.root().dense(i, 2).dynamic(j, 16);  // chunks of 16, not 32
  list.place(x);
  Kernel k = prog.kernel("k", [&] { for_range(0, 20, [&](Expr n) { append(list, {1}, n); }); });
  EXPECT_THAT(error_of([&] { k(); prog.sync(); }), HasSubstr("past the maximum length 16"));
  Field len = prog.field(i32, "len", {});
  Kernel l = prog.kernel("l", [&] { len() = length(list, {1}); });
  l();
  EXPECT_EQ(len.read<int>(), 16);
}

// ---- 14. sparse runtime bounds ------------------------------------------------------

TEST_P(Misuse, 14_AFullPoolDoesNotGrowItsTicketCounter) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& blocks = prog.root().pointer(i, 4096);
  blocks.dense(i, 4).place(x);
  blocks.capacity(16);
  Kernel k = prog.kernel("k", [&] { for_range(0, 4096 * 4, [&](Expr n) { x(n) = 1; }); });
  for (int round = 0; round < 3; ++round) EXPECT_THAT(error_of([&] { k(); prog.sync(); }), HasSubstr(blocks.name()));
  detail::ProgramImpl* p = prog.impl();
  const ir::SNodeDecl& s = p->forest().snode(blocks.id());
  const uint32_t tickets = p->context->read_word(p->trees.own_instance(s.tree), s.state_offset + ir::kTickets);
  EXPECT_EQ(tickets, 16u) << "every failed allocation took a ticket";
  const SNodeStats st = prog.stats().at(blocks.name());
  EXPECT_EQ(st.pool_used, st.active_cells);
  EXPECT_LE(st.pool_used, 16);
}

TEST_P(Misuse, 14_AStructForTooLargeForOneLoopIsRefused) {
  Program prog(config());
  Field x = prog.field(i32, "x");
  SNode& list = prog.root().dense(i, 65536).dynamic(j, 65536, 1024);
  list.place(x);
  list.capacity(64);
  Field count = prog.field(i32, "count", {});
  Kernel add = prog.kernel("add", [&] { append(list, {5}, 1); });
  add();
  Kernel visit = prog.kernel("visit", [&] { for_each(x, [&](Expr, Expr) { count() += 1; }); });
  EXPECT_THAT(error_of([&] { visit(); }), AllOf(HasSubstr("kernel 'visit'"), HasSubstr(list.name()), HasSubstr("2^31-1")));
}

TEST_P(Misuse, 14_PoolFailuresOfALaunchThatFailsACheckAreStillReported) {
  Program prog(debug_config());
  Field x = prog.field(i32, "x");
  SNode& blocks = prog.root().pointer(i, 64);
  blocks.dense(i, 4).place(x);
  blocks.capacity(2);
  Field y = prog.field(i32, "y", {4});
  Kernel k = prog.kernel("k", {arg(i32, "at")}, [&](Args a) {
    for_range(0, 64, [&](Expr n) { x(n * 4) = 1; });  // finds the pool full
    for_range(0, 1, [&](Expr) { y(a[0]) = 1; });       // out of bounds
  });
  EXPECT_THAT(error_of([&] { k(9); prog.sync(); }), HasSubstr("out of bounds"));
  EXPECT_THAT(error_of([&] { prog.sync(); }), HasSubstr("ran out of pool memory"));
}

// Absurd Config values are refused by name whatever the arch (Auto would
// otherwise pass over the backend they belong to without a word), and the
// next Program with sound values works.
TEST_P(Misuse, 15_AbsurdConfigValuesAreRefusedNamingTheField) {
  auto built = [](Arch a) {
    for (Arch b : compiled_backends()) if (a == b) return true;
    return false;
  };
  auto refusal = [&](const std::function<void(Config&)>& change) {
    Config c = config();
    change(c);
    return error_of([&] { Program p(c); });
  };
  if (built(Arch::Cpu)) {
    // INT_MAX died inside oneTBB at the first launch; 10^8 threw std::bad_alloc.
    EXPECT_THAT(refusal([](Config& c) { c.cpu_threads = std::numeric_limits<int>::max(); }),
                HasSubstr("Config::cpu_threads is 2147483647; give the number of threads, 1 to 4096"));
    EXPECT_THAT(refusal([](Config& c) { c.cpu_threads = 100000000; }), HasSubstr("Config::cpu_threads is 100000000"));
  }
  if (built(Arch::Vulkan)) {
    EXPECT_THAT(refusal([](Config& c) { c.vulkan_target = "desktop,fast"; }),
                HasSubstr("Config::vulkan_target: no Vulkan target item 'fast'"));
  }
  EXPECT_THAT(refusal([](Config& c) { c.device_memory = std::numeric_limits<int64_t>::max(); }),
              HasSubstr("Config::device_memory is 9223372036854775807 bytes; give Grove 1 MiB to 2^48 bytes"));
  EXPECT_THAT(refusal([](Config& c) { c.arch = static_cast<Arch>(42); }),
              AllOf(HasSubstr("Config::arch is 42, which is no Arch"), HasSubstr("interp")));
  Program prog(config());
  Field x = prog.field(i32, "x", {4});
  Kernel k = prog.kernel("k", [&] { for_range(0, 4, [&](Expr n) { x(n) = n * 2; }); });
  k();
  EXPECT_EQ(x.read<int32_t>({3}), 6);
}

// A dense field too large for any buffer is refused where it is declared,
// and the Program goes on as if it had not been: the field declared before
// it (in the same implicit tree) and those declared after work, and its
// name is free. It once stayed in the implicit tree and made every later
// field of the Program fail with the same error.
TEST_P(Misuse, 16_AFieldTooLargeForABufferLeavesTheProgramUsable) {
  Program prog(config());
  Field before = prog.field(f32, "before", {4});
  EXPECT_THAT(error_of([&] { prog.field(f32, "big", {1 << 20, 1 << 20}); }),
              AllOf(HasSubstr("field 'big'"), HasSubstr("1099511627776")));
  EXPECT_THAT(error_of([&] { prog.vector_field(3, f64, "big3", {1 << 16, 1 << 16}); }), HasSubstr("field 'big3'"));
  Field after = prog.field(f32, "after", {4});
  Field big = prog.field(i32, "big", {2});
  Kernel k = prog.kernel("k", [&] {
    for_range(0, 4, [&](Expr n) {
      after(n) = before(n) + 1.0f;
      if_(n < 2, [&] { big(n) = 5; });
    });
  });
  before.write({2}, 3.0f);
  k();
  EXPECT_EQ(after.read<float>({2}), 4.0f);
  EXPECT_EQ(big.read<int32_t>({1}), 5);
}

// Declaring fields and kernels costs the same whatever number came before
// (name lookups were linear: 100,000 fields took about 250 s). This runs
// in well under a second; the quadratic cost ran into ctest's timeout.
TEST_P(Misuse, 17_ManyFieldsAndKernelsAreDeclaredInLinearTime) {
  Program prog(config());
  for (int n = 0; n < 100000; ++n) prog.field(i32, "f" + std::to_string(n), {});
  for (int n = 0; n < 20000; ++n) prog.kernel("k" + std::to_string(n), [] {});
  EXPECT_THAT(error_of([&] { prog.field(i32, "f99999", {}); }), HasSubstr("a field named 'f99999' already exists"));
  EXPECT_THAT(error_of([&] { prog.kernel("k19999", [] {}); }), HasSubstr("a kernel named 'k19999' already exists"));
  Field last = prog.field(i32, "last", {2});
  last.write({1}, 7);
  EXPECT_EQ(last.read<int32_t>({1}), 7);
}

// Blocks nest at most ir::kMaxNesting deep: every pass and emitter walks
// them recursively, and 20,000 nested if_ overflowed the CPU emitter's
// stack. The limit is raised where the kernel is recorded, naming it; a
// nest at the limit compiles and runs everywhere.
TEST_P(Misuse, 18_BlocksNestedPastTheLimitAreRefusedNamingTheKernel) {
  Program prog(config());
  Field x = prog.field(i32, "x", {2});
  auto nest = [&](const std::string& name, int depth) {
    return prog.kernel(name, [&, depth] {
      for_range(0, 2, [&](Expr n) {
        std::function<void(int)> go = [&](int d) {
          if (d == depth) {
            x(n) = n + 7;
            return;
          }
          if_(n + d >= 0, [&] { go(d + 1); });
        };
        go(1);  // the for_range is the first level
      });
    });
  };
  EXPECT_THAT(error_of([&] { nest("deep", 20000)(); }),
              AllOf(HasSubstr("kernel 'deep'"), HasSubstr("nested more than 256 deep")));
  EXPECT_THAT(error_of([&] { nest("deeper", 257)(); }), HasSubstr("kernel 'deeper'"));
  Kernel k = nest("at_the_limit", 256);
  k();
  EXPECT_EQ(x.read<int32_t>({1}), 8);
}

// Destroying the Program from inside its own kernel body, or from its
// print sink during a launch, a sync or a host read, is safe: the call that
// ran the user's code holds the Program until it returns (the recording
// once kept a raw pointer after dropping its owner). Later uses of its
// handles are errors naming what happened.
TEST_P(Misuse, 19_DestroyingTheProgramFromItsOwnCallbacksIsSafe) {
  {
    auto prog = std::make_unique<Program>(config());
    Field x = prog->field(i32, "x", {4});
    Kernel k = prog->kernel("suicide", [&] {
      prog.reset();
      for_range(0, 4, [&](Expr n) { x(n) = n + 1; });
    });
    k();
    EXPECT_EQ(prog, nullptr);
    EXPECT_THAT(error_of([&] { (void)x.read<int32_t>({1}); }), HasSubstr("Program that was destroyed"));
    EXPECT_THAT(error_of([&] { k(); }), HasSubstr("Program that was destroyed"));
  }
  for (int where = 0; where < 3; ++where) {
    SCOPED_TRACE(where);
    auto prog = std::make_unique<Program>(config());
    Field x = prog->field(i32, "x", {4});
    Kernel k = prog->kernel("talk", [&] { for_range(0, 1, [&](Expr n) { print("n =", n); x(n) = 5; }); });
    std::string said;
    prog->set_print_sink([&](std::string_view text) {
      said += text;
      prog.reset();
    });
    Program& p = *prog;
    if (where == 0) k();
    if (where == 1) {
      k();
      if (prog) p.sync();
    }
    if (where == 2) {
      k();
      if (prog) (void)x.read<int32_t>({0});
    }
    if (prog) p.sync();
    EXPECT_EQ(prog, nullptr);
    EXPECT_EQ(said, "n =0\n");
    EXPECT_THAT(error_of([&] { (void)x.read<int32_t>({0}); }), HasSubstr("Program that was destroyed"));
  }
}

}  // namespace
