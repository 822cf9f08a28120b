// tests/llvm/codegen_test.cpp — the LLVM code generator on lowered kernels
// written as IR text, compiled for this CPU, loaded as the runtime's CPU
// device loads them (runtime/cpu/library.h) and called through the task ABI
// (src/llvm/codegen.h) on plain word arrays. Operands arrive as kernel
// arguments, so LLVM cannot fold the operations away; expected values come
// from plain C++ in the test (docs/ir.md's rules written out) or by hand.
#include "llvm_cpu/jit.h"

#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "../support/scratch_dir.h"
#include "grove/error.h"
#include "ir/parser.h"
#include "ir/plan_builder.h"
#include "runtime/cpu/device.h"
#include "runtime/cpu/library.h"

namespace grove::llvm_backend {
namespace {

Jit& jit() {
  static Jit j;
  return j;
}

// A kernel's code and its task functions, loaded.
struct JitKernel : CpuCode {
  JitKernel() = default;
  explicit JitKernel(CpuCode c, rt::cpu::Library::Via via = rt::cpu::Library::Via::memory_file)
      : CpuCode(std::move(c)) {
    lib = std::make_shared<rt::cpu::Library>(library, "test", via);
    for (const TaskCode& t : tasks) {
      functions.push_back(reinterpret_cast<rt::cpu::TaskFn>(lib->symbol(t.entry)));
      counts.push_back(t.parallel && !t.count_entry.empty()
                           ? reinterpret_cast<rt::cpu::CountFn>(lib->symbol(t.count_entry))
                           : nullptr);
    }
  }
  std::shared_ptr<rt::cpu::Library> lib;
  std::vector<rt::cpu::TaskFn> functions;
  std::vector<rt::cpu::CountFn> counts;  // null where the host counts (host_counts)
  // Per task, as the plan gives the backend: a parallel loop's count when
  // its bounds are constants (these kernels take no arguments).
  std::vector<std::optional<int64_t>> host_counts;

  // Task `i`'s iteration count, as the CPU backend finds it.
  int32_t count(size_t i, uint32_t* const* buffers) const {
    if (counts[i] != nullptr) return counts[i](buffers, nullptr);
    EXPECT_TRUE(host_counts[i].has_value()) << "task " << i << " has no count function and no constant count";
    return static_cast<int32_t>(host_counts[i].value_or(0));
  }
};

std::vector<std::optional<int64_t>> constant_counts(const ir::Kernel& kernel) {
  std::vector<std::optional<int64_t>> out;
  for (size_t i = 0; i < kernel.body()->size(); ++i) {
    const ir::Block* body = kernel.body()->at(i)->body();
    const ir::Stmt* loop = body->empty() ? nullptr : body->at(body->size() - 1);
    const bool counted = loop != nullptr && loop->kind() == ir::StmtKind::RangeFor && ir::counted_on_host(loop);
    out.push_back(counted ? std::optional<int64_t>(ir::constant_iterations(loop)) : std::nullopt);
  }
  return out;
}

// Compiled afresh, with its texts kept.
JitKernel compile(const std::string& text) {
  ir::ParsedModule m = ir::parse_module(text, "test");
  EXPECT_EQ(m.kernels.size(), 1u);
  CodegenOptions options;
  options.keep_text = true;
  JitKernel k(jit().add(*m.kernels.front(), options));
  k.host_counts = constant_counts(*m.kernels.front());
  return k;
}

// The context buffer and one tree of zeroed words.
struct Buffers {
  explicit Buffers(size_t words) : context(64, 0), tree(words, 0) {}
  std::vector<uint32_t> context, tree;
  uint32_t* pointers[2] = {nullptr, nullptr};
  uint32_t* const* get() {
    pointers[0] = context.data();
    pointers[1] = tree.data();
    return pointers;
  }
};

// Runs task 0 (parallel, no arguments) as the CPU backend does, but by
// hand: its count function, then iterations [0, count) in chunks of
// `chunk`, dealt in turn to four threads running at once. Returns the count.
int32_t run_on_four_threads(const JitKernel& k, Buffers& buf, int32_t chunk) {
  uint32_t* const* buffers = buf.get();
  const uint64_t* no_args = nullptr;
  const int32_t count = k.count(0, buffers);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int32_t lo = t * chunk; lo < count; lo += 4 * chunk) k.functions[0](buffers, no_args, lo, lo + chunk);
    });
  }
  for (std::thread& t : threads) t.join();
  return count;
}

// How often `what` occurs in `text`.
size_t test_count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// ---- one binary operation on arguments a, b of type `t` -------------------------

std::string type_text(DataType t) { return std::string(type_name(t)); }

bool is_compare(const std::string& op) { return op.rfind("cmp_", 0) == 0; }

// A serial kernel storing `op(a, b)` at word 0 (64-bit results at words 0,
// 1), compiled once and run on any operands.
class Binary {
 public:
  Binary(const std::string& op, DataType t) {
    const std::string ts = type_text(t);
    const std::string rs = type_text(is_compare(op) ? DataType::u1 : t);
    kernel_ = compile("kernel @b(a: " + ts + ", b: " + ts + ") stage lowered {\n"
                      "  task serial $-1 \"serial\" {\n"
                      "    %0 = arg " + ts + " 0\n"
                      "    %1 = arg " + ts + " 1\n"
                      "    %2 = binary " + op + " " + rs + " %0 %1\n"
                      "    %3 = const u32 0\n"
                      "    tree_store @t1[%3] %2 as " + rs + "\n"
                      "  }\n"
                      "}\n");
  }
  uint64_t operator()(uint64_t a, uint64_t b) {
    Buffers buf(2);
    const uint64_t args[2] = {a, b};
    kernel_.functions[0](buf.get(), args, 0, 1);
    return buf.tree[0] | (uint64_t{buf.tree[1]} << 32);
  }

 private:
  JitKernel kernel_;
};

// docs/ir.md's integer rules, written out: wrapping, x / 0 == x % 0 == 0,
// MIN / -1 == 0, x % -1 == 0, shift counts modulo the width, a negative
// power 0 (1 for 1, +-1 for -1).
template <typename T>
T model(const std::string& op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  constexpr int w = sizeof(T) * 8;
  const U ua = static_cast<U>(a), ub = static_cast<U>(b);
  auto wide_mul = [](U x, U y) { return static_cast<U>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)); };
  if (op == "add") return static_cast<T>(static_cast<U>(ua + ub));
  if (op == "sub") return static_cast<T>(static_cast<U>(ua - ub));
  if (op == "mul") return static_cast<T>(wide_mul(ua, ub));
  if (op == "div") {
    if (b == 0) return 0;
    if (std::is_signed_v<T> && a == std::numeric_limits<T>::min() && b == T(-1)) return 0;
    return static_cast<T>(a / b);
  }
  if (op == "mod") {
    if (b == 0 || (std::is_signed_v<T> && b == T(-1))) return 0;
    return static_cast<T>(a % b);
  }
  if (op == "min") return b < a ? b : a;
  if (op == "max") return a < b ? b : a;
  if (op == "bit_and") return static_cast<T>(ua & ub);
  if (op == "bit_or") return static_cast<T>(ua | ub);
  if (op == "bit_xor") return static_cast<T>(ua ^ ub);
  if (op == "shl") return static_cast<T>(static_cast<U>(ua << (ub % w)));
  if (op == "shr") return static_cast<T>(a >> (ub % w));
  if (op == "pow") {
    if (std::is_signed_v<T> && b < 0) return a == 1 ? T(1) : a == T(-1) ? (b % 2 != 0 ? T(-1) : T(1)) : T(0);
    U r = 1, base = ua;
    for (U e = ub; e; e >>= 1) {
      if (e & 1) r = wide_mul(r, base);
      base = wide_mul(base, base);
    }
    return static_cast<T>(r);
  }
  if (op == "cmp_lt") return a < b;
  if (op == "cmp_le") return a <= b;
  if (op == "cmp_gt") return a > b;
  if (op == "cmp_ge") return a >= b;
  if (op == "cmp_eq") return a == b;
  if (op == "cmp_ne") return a != b;
  ADD_FAILURE() << "no model for " << op;
  return 0;
}

const char* const kIntOps[] = {"add", "sub", "mul", "div", "mod", "min", "max", "bit_and", "bit_or", "bit_xor",
                               "shl", "shr", "pow", "cmp_lt", "cmp_le", "cmp_gt", "cmp_ge", "cmp_eq", "cmp_ne"};

template <typename T>
void check_integer_ops(DataType t) {
  std::vector<T> values = {0, 1, 2, 3, 7, 31, 33, 100, std::numeric_limits<T>::max(),
                           static_cast<T>(std::numeric_limits<T>::max() - 1)};
  if constexpr (std::is_signed_v<T>) {
    for (T v : {T(-1), T(-2), T(-7), T(-100), std::numeric_limits<T>::min()}) values.push_back(v);
  }
  // One kernel per op (compiling is the slow part); all pairs through it.
  for (const char* op : kIntOps) {
    Binary run(op, t);
    for (T a : values) {
      for (T b : {T(0), T(-1), T(3), T(33), std::numeric_limits<T>::min(), std::numeric_limits<T>::max()}) {
        const uint64_t got = run(static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(a)),
                                 static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(b)));
        const T want = model<T>(op, a, b);
        const uint64_t mask = sizeof(T) == 8 ? ~uint64_t{0} : (uint64_t{1} << (sizeof(T) * 8)) - 1;
        const uint64_t want_bits = is_compare(op) ? static_cast<uint64_t>(want)
                                                  : static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(want));
        EXPECT_EQ(got & (is_compare(op) ? 1u : mask), want_bits)
            << op << " " << type_name(t) << " " << +a << ", " << +b;
      }
    }
  }
}

TEST(LlvmCodegen, IntegerOperationsFollowTheIrRules) {
  check_integer_ops<int32_t>(DataType::i32);
  check_integer_ops<uint32_t>(DataType::u32);
  check_integer_ops<int64_t>(DataType::i64);
  check_integer_ops<uint8_t>(DataType::u8);
  check_integer_ops<int16_t>(DataType::i16);
}

TEST(LlvmCodegen, FloatOperationsMatchTheCLibrary) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float values[] = {0.0f, -0.0f, 1.5f, -2.25f, 3.0f, 1e30f, inf, -inf, nan};
  auto f32 = [](float v) { return uint64_t{std::bit_cast<uint32_t>(v)}; };
  std::map<std::string, Binary> ops;
  for (const char* op : {"add", "mul", "div", "mod", "min", "max", "pow", "cmp_ne", "cmp_lt"})
    ops.emplace(op, Binary(op, DataType::f32));
  for (float a : values) {
    for (float b : values) {
      auto check = [&](const char* op, float want) {
        const auto got = std::bit_cast<float>(static_cast<uint32_t>(ops.at(op)(f32(a), f32(b))));
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got)) << op << " " << a << ", " << b;
        } else {
          EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << op << " " << a << ", " << b;
        }
      };
      check("add", a + b);
      check("mul", a * b);
      check("div", a / b);
      check("mod", std::fmod(a, b));
      check("min", b < a ? b : a);
      check("max", a < b ? b : a);
      check("pow", std::pow(a, b));
      EXPECT_EQ(ops.at("cmp_ne")(f32(a), f32(b)) & 1, a != b ? 1u : 0u) << a << " != " << b;
      EXPECT_EQ(ops.at("cmp_lt")(f32(a), f32(b)) & 1, a < b ? 1u : 0u) << a << " < " << b;
    }
  }
}

// The runtime loads a kernel's shared object from a memory file, or from a
// temporary file where it has none; both run the same code, libm's pow
// (resolved against the process) included, and the temporary file is gone
// with the library.
TEST(LlvmCodegen, KernelsLoadFromATemporaryFileToo) {
  ir::ParsedModule m = ir::parse_module("kernel @p(a: f32, b: f32) stage lowered {\n"
                                        "  task serial $-1 \"serial\" {\n"
                                        "    %0 = arg f32 0\n"
                                        "    %1 = arg f32 1\n"
                                        "    %2 = binary pow f32 %0 %1\n"
                                        "    %3 = const u32 0\n"
                                        "    tree_store @t1[%3] %2 as f32\n"
                                        "  }\n"
                                        "}\n",
                                        "test");
  const CpuCode code = jit().add(*m.kernels.front());
  // The temporary files go to a directory of this process's own (TMPDIR),
  // where no other test process creates or removes any.
  const grove::testing::ScratchDir tmp("grove-temporary-files");
  const char* old_tmpdir = std::getenv("TMPDIR");
  const std::string restore = old_tmpdir != nullptr ? old_tmpdir : "";
  setenv("TMPDIR", tmp.path().c_str(), 1);
  auto temporary_files = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(tmp.path()))
      n += e.path().filename().string().rfind("grove-kernel-", 0) == 0;
    return n;
  };
  const int before = temporary_files();
  for (auto via : {rt::cpu::Library::Via::memory_file, rt::cpu::Library::Via::temporary_file}) {
    {
      JitKernel k(code, via);
      if (via == rt::cpu::Library::Via::temporary_file) {
        EXPECT_EQ(temporary_files(), before + 1);
      }
      Buffers buf(1);
      const uint64_t args[2] = {std::bit_cast<uint32_t>(2.5f), std::bit_cast<uint32_t>(1.5f)};
      k.functions[0](buf.get(), args, 0, 1);
      EXPECT_EQ(buf.tree[0], std::bit_cast<uint32_t>(std::pow(2.5f, 1.5f)));
    }
    EXPECT_EQ(temporary_files(), before);
  }
  if (old_tmpdir != nullptr) {
    setenv("TMPDIR", restore.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
}

// Casts: float to integer truncates toward zero and saturates, NaN gives 0;
// integer to integer wraps; f16 storage rounds to nearest even.
TEST(LlvmCodegen, CastsSaturateWrapAndRound) {
  auto run = [](const std::string& from, const std::string& to, uint64_t a, const std::string& storage = "") {
    const std::string st = storage.empty() ? to : storage;
    JitKernel k = compile("kernel @c(a: " + from + ") stage lowered {\n  task serial $-1 \"serial\" {\n"
                          "    %0 = arg " + from + " 0\n    %1 = cast " + to + " %0\n    %2 = const u32 0\n"
                          "    tree_store @t1[%2] %1 as " + st + "\n    %3 = tree_load " + to + " @t1[%2] as " + st +
                          "\n    %4 = const u32 2\n    tree_store @t1[%4] %3 as " + to + "\n  }\n}\n");
    Buffers buf(4);
    const uint64_t args[1] = {a};
    k.functions[0](buf.get(), args, 0, 1);
    return buf.tree[2] | (uint64_t{buf.tree[3]} << 32);
  };
  auto f32 = [](float v) { return uint64_t{std::bit_cast<uint32_t>(v)}; };
  EXPECT_EQ(static_cast<int32_t>(run("f32", "i32", f32(1e10f))), INT32_MAX);
  EXPECT_EQ(static_cast<int32_t>(run("f32", "i32", f32(-1e10f))), INT32_MIN);
  EXPECT_EQ(static_cast<int32_t>(run("f32", "i32", f32(std::numeric_limits<float>::quiet_NaN()))), 0);
  EXPECT_EQ(static_cast<int32_t>(run("f32", "i32", f32(-2.75f))), -2);
  EXPECT_EQ(run("f32", "u32", f32(-5.0f)), 0u);
  // Every float-to-integer pair at the edges of the target's range, against
  // a saturating conversion written here in long double.
  auto f64 = [](double v) { return std::bit_cast<uint64_t>(v); };
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (const char* to : {"i32", "u32", "i64", "u64"}) {
    const bool sign = to[0] == 'i';
    const int bits = to[1] == '3' ? 32 : 64;
    const long double lo = sign ? -std::ldexp(1.0L, bits - 1) : 0.0L, past = std::ldexp(1.0L, sign ? bits - 1 : bits);
    auto want = [&](double v) -> uint64_t {
      if (std::isnan(v)) return 0;
      const long double t = std::trunc(static_cast<long double>(v));
      const long double c = t < lo ? lo : t >= past ? past - 1 : t;
      const uint64_t u = sign ? static_cast<uint64_t>(static_cast<int64_t>(c)) : static_cast<uint64_t>(c);
      return bits == 32 ? u & 0xffffffffu : u;
    };
    const std::vector<double> edges = {0.0, -0.0, 0.75, -0.75, -1.0, 1.5, static_cast<double>(past), static_cast<double>(-past),
                                       static_cast<double>(past) * 0.999, static_cast<double>(lo), static_cast<double>(lo) - 4096.0,
                                       1e30, -1e30, inf, -inf, nan};
    for (double v : edges) {
      const uint64_t mask = bits == 32 ? 0xffffffffu : ~uint64_t{0};
      EXPECT_EQ(run("f64", to, f64(v)) & mask, want(v)) << "f64 " << v << " -> " << to;
      const auto fv = static_cast<float>(v);
      EXPECT_EQ(run("f32", to, f32(fv)) & mask, want(static_cast<double>(fv))) << "f32 " << fv << " -> " << to;
    }
  }
  EXPECT_EQ(static_cast<uint32_t>(run("i32", "u8", 300)), 44u);                   // 300 mod 256
  EXPECT_EQ(static_cast<uint32_t>(run("i32", "i8", 200)), 0xc8u);  // -56: its word holds the low 8 bits
  EXPECT_EQ(static_cast<int64_t>(run("i32", "i64", 0xffffffffu)), -1);
  EXPECT_EQ(run("u32", "u64", 0xffffffffu), 0xffffffffu);
  // 1 + 2^-11 is halfway between two halves: rounds to even (1.0).
  EXPECT_EQ(std::bit_cast<float>(static_cast<uint32_t>(run("f32", "f32", f32(1.0f + 0x1p-11f), "f16"))), 1.0f);
  EXPECT_EQ(std::bit_cast<float>(static_cast<uint32_t>(run("f32", "f32", f32(1.0f + 0x1p-10f), "f16"))),
            1.0f + 0x1p-10f);
}

// A parallel task: its count function runs the statements before the loop
// (the bound read from the tree), and chunks [lo, hi) of [0, count) can run
// on several threads at once; atomics count every iteration exactly once.
TEST(LlvmCodegen, ParallelTasksRunInChunksOnManyThreads) {
  JitKernel k = compile(R"(
kernel @p() stage lowered {
  task range_for $-1 "range_for" {
    %0 = const i32 10
    %1 = const u32 1
    %2 = tree_load atomic i32 @t1[%1]
    %3 = range_for %0 %2 {
      %4 = loop_index i32 %3 0
      %5 = binary mul i32 %4 %4
      %6 = const i32 4
      %7 = binary add i32 %4 %6
      %8 = cast u32 %7
      tree_store @t1[%8] %5 as i32
      %9 = const u32 0
      %10 = const i32 1
      %11 = tree_atomic add i32 @t1[%9] %10
      %12 = const u32 2
      %13 = tree_atomic max i32 @t1[%12] %4
    }
  }
}
)");
  ASSERT_EQ(k.tasks.size(), 1u);
  EXPECT_TRUE(k.tasks[0].parallel);
  EXPECT_EQ(k.tasks[0].count_entry, k.tasks[0].entry + ".count");
  EXPECT_EQ(k.tasks[0].entry.rfind("p.", 0), 0u) << k.tasks[0].entry;
  const int32_t end = 200010;
  Buffers buf(static_cast<size_t>(end) + 8);
  buf.tree[1] = static_cast<uint32_t>(end);
  const int32_t count = run_on_four_threads(k, buf, 7919);  // a prime: chunks end anywhere
  ASSERT_EQ(count, end - 10);
  EXPECT_EQ(buf.tree[0], static_cast<uint32_t>(count));
  EXPECT_EQ(static_cast<int32_t>(buf.tree[2]), end - 1);
  for (int32_t i = 10; i < end; ++i)
    ASSERT_EQ(buf.tree[static_cast<size_t>(i) + 4], static_cast<uint32_t>(i) * static_cast<uint32_t>(i)) << i;
  // Nothing below the loop's first index was written.
  for (size_t w = 4; w < 14; ++w) EXPECT_EQ(buf.tree[w], 0u) << w;
}

// f32 atomic adds to consecutive words, with values between them, become
// one compare-and-swap of the group (TargetHooks::cas_words: 128 bits on
// x86-64 with cmpxchg16b and AArch64, else 64): four words at an aligned
// address, the same four one word off (the unaligned path, add by add), a
// pair, and a lone add. Four threads hit 8 cells; the sums are exact.
TEST(LlvmCodegen, AdjacentFloatAddsShareOneCompareAndSwap) {
  JitKernel k = compile(R"(
kernel @g() stage lowered {
  task range_for $-1 "range_for" {
    %0 = const i32 0
    %1 = const i32 40000
    %2 = range_for %0 %1 {
      %3 = loop_index i32 %2 0
      %4 = const i32 8
      %5 = binary mod i32 %3 %4
      %6 = cast u32 %5
      %7 = const u32 16
      %8 = binary mul u32 %6 %7
      %9 = const f32 1
      %10 = const f32 2
      %11 = const f32 3
      %12 = const f32 4
      %13 = tree_atomic add f32 @t1[%8] %9
      %14 = const u32 1
      %15 = binary add u32 %8 %14
      %16 = tree_atomic add f32 @t1[%15] %10
      %17 = const u32 2
      %18 = binary add u32 %8 %17
      %19 = binary add f32 %9 %10
      %20 = tree_atomic add f32 @t1[%18] %19
      %21 = const u32 3
      %22 = binary add u32 %8 %21
      %23 = tree_atomic add f32 @t1[%22] %12
      %24 = const u32 5
      %25 = binary add u32 %24 %8
      %26 = binary add u32 %25 %14
      %27 = binary add u32 %25 %17
      %28 = binary add u32 %25 %21
      %29 = tree_atomic add f32 @t1[%25] %9
      %30 = tree_atomic add f32 @t1[%26] %10
      %31 = tree_atomic add f32 @t1[%27] %11
      %32 = tree_atomic add f32 @t1[%28] %12
      %33 = const u32 10
      %34 = binary add u32 %8 %33
      %35 = binary add u32 %34 %14
      %36 = tree_atomic add f32 @t1[%34] %11
      %37 = tree_atomic add f32 @t1[%35] %12
      %38 = binary add u32 %34 %17
      %39 = tree_atomic add f32 @t1[%38] %9
    }
  }
}
)");
  const std::string features = "," + jit().features() + ",";
  const bool wide = features.find(",+cx16,") != std::string::npos || jit().target().find("aarch64") != std::string::npos;
  const std::string group = wide ? "i128" : "i64";
  EXPECT_EQ(test_count(k.ir_before, "cmpxchg ptr"), wide ? 3u : 5u) << k.ir_before;
  EXPECT_NE(k.ir_before.find(", " + group + " %"), std::string::npos) << jit().target();
  Buffers buf(8 * 16 + 4);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(buf.tree.data()) % 16, 0u);  // (malloc's alignment)
  ASSERT_EQ(run_on_four_threads(k, buf, 613), 40000);
  auto at = [&](size_t w) { return std::bit_cast<float>(buf.tree[w]); };
  for (size_t c = 0; c < 8; ++c) {
    SCOPED_TRACE(c);
    const size_t b = c * 16;
    const float want[16] = {1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 3, 4, 1, 0, 0, 0};
    for (size_t w = 0; w < 16; ++w) EXPECT_EQ(at(b + w), want[w] * 5000.0f) << "word " << w;
  }
}

// A sum marked `accumulate` (ir::mark_reductions) is kept in a local over a
// chunk's iterations and added once after them: one atomic in the code.
TEST(LlvmCodegen, MarkedSumsAreAddedOncePerChunk) {
  JitKernel k = compile(R"(
kernel @s() stage lowered {
  task range_for $-1 "range_for" {
    %0 = const i32 0
    %1 = const i32 100000
    %2 = range_for %0 %1 {
      %3 = loop_index i32 %2 0
      %4 = const u32 0
      %5 = const i32 3
      %6 = binary mod i32 %3 %5
      %7 = tree_atomic accumulate add i32 @t1[%4] %6
    }
  }
}
)");
  size_t atomics = 0;
  for (size_t at = k.ir_before.find("atomicrmw"); at != std::string::npos; at = k.ir_before.find("atomicrmw", at + 1))
    ++atomics;
  EXPECT_EQ(atomics, 1u) << k.ir_before;
  Buffers buf(1);
  ASSERT_EQ(run_on_four_threads(k, buf, 25000), 100000);
  uint32_t want = 0;
  for (int i = 0; i < 100000; ++i) want += static_cast<uint32_t>(i % 3);
  EXPECT_EQ(buf.tree[0], want);
}

// A loop that adds a sum of many values computed before it: the code
// generator's loop strength reduction took minutes over such sums (1,000
// values: 33 s), so the optimised code cuts them into parts of at most 64
// values with a freeze, which scalar evolution does not look through. The
// sum of 200 values needs such cuts; the values are still right.
TEST(LlvmCodegen, LongSumsBeforeALoopAreCutForTheCodeGenerator) {
  constexpr int kValues = 200, kEnd = 1000;
  std::string text = "kernel @long() stage lowered {\n  task range_for $-1 \"range_for\" {\n";
  int next = 0;
  auto value = [&] { return "%" + std::to_string(next++); };
  std::string sum;
  for (int v = 0; v < kValues; ++v) {
    const std::string at = value(), load = value();
    text += "    " + at + " = const u32 " + std::to_string(v) + "\n    " + load + " = tree_load i32 @t1[" + at + "]\n";
    if (sum.empty()) {
      sum = load;
    } else {
      const std::string added = value();
      text += "    " + added + " = binary add i32 " + sum + " " + load + "\n";
      sum = added;
    }
  }
  const std::string lo = value(), hi = value(), loop = value(), i = value(), out = value(), offset = value(),
                    at = value(), where = value();
  text += "    " + lo + " = const i32 0\n    " + hi + " = const i32 " + std::to_string(kEnd) + "\n    " + loop +
          " = range_for " + lo + " " + hi + " {\n      " + i + " = loop_index i32 " + loop + " 0\n      " + out +
          " = binary add i32 " + i + " " + sum + "\n      " + offset + " = const i32 " + std::to_string(kValues) +
          "\n      " + at + " = binary add i32 " + i + " " + offset + "\n      " + where + " = cast u32 " + at +
          "\n      tree_store @t1[" + where + "] " + out + " as i32\n    }\n  }\n}\n";
  JitKernel k = compile(text);
  EXPECT_NE(k.ir_after.find(" = freeze i32 "), std::string::npos) << k.ir_after;
  Buffers buf(kValues + kEnd);
  int32_t total = 0;
  for (int v = 0; v < kValues; ++v) {
    buf.tree[static_cast<size_t>(v)] = static_cast<uint32_t>(v * 7 - 300);
    total += v * 7 - 300;
  }
  ASSERT_EQ(run_on_four_threads(k, buf, 97), kEnd);
  for (int n = 0; n < kEnd; ++n)
    ASSERT_EQ(static_cast<int32_t>(buf.tree[static_cast<size_t>(kValues + n)]), n + total) << n;
}

// A short sum is left alone: no freeze in code like the examples'.
TEST(LlvmCodegen, ShortSumsAreNotCut) {
  JitKernel k = compile(R"(
kernel @short() stage lowered {
  task range_for $-1 "range_for" {
    %0 = const u32 0
    %1 = tree_load i32 @t1[%0]
    %2 = const u32 1
    %3 = tree_load i32 @t1[%2]
    %4 = binary add i32 %1 %3
    %5 = const i32 0
    %6 = const i32 10
    %7 = range_for %5 %6 {
      %8 = loop_index i32 %7 0
      %9 = binary add i32 %8 %4
      %10 = const i32 2
      %11 = binary add i32 %8 %10
      %12 = cast u32 %11
      tree_store @t1[%12] %9 as i32
    }
  }
}
)");
  EXPECT_EQ(k.ir_after.find("freeze"), std::string::npos) << k.ir_after;
}

// Serial loops, while with break and continue, if/else and local variables:
// the sum of the odd numbers below 10 that are not 5 (1 + 3 + 7 + 9 = 20),
// and the number of range_for iterations that continue skips.
TEST(LlvmCodegen, ControlFlowAndLocals) {
  JitKernel k = compile(R"(
kernel @c(n: i32) stage lowered {
  task serial $-1 "serial" {
    %0 = arg i32 0
    %1 = alloca i32
    %2 = alloca i32
    %3 = alloca i32
    while {
      %4 = local_load i32 %1
      %5 = binary cmp_ge u1 %4 %0
      if %5 {
        break
      } else {
      }
      %6 = const i32 1
      %7 = binary add i32 %4 %6
      local_store %1 %7
      %8 = const i32 2
      %9 = binary mod i32 %4 %8
      %10 = const i32 0
      %11 = binary cmp_eq u1 %9 %10
      %12 = const i32 5
      %13 = binary cmp_eq u1 %4 %12
      %14 = binary logic_or u1 %11 %13
      if %14 {
        continue
      } else {
        %15 = local_load i32 %2
        %16 = binary add i32 %15 %4
        local_store %2 %16
      }
    }
    %17 = const i32 0
    %18 = range_for %17 %0 {
      %19 = loop_index i32 %18 0
      %20 = const i32 3
      %21 = binary cmp_lt u1 %19 %20
      if %21 {
        continue
      } else {
      }
      %22 = local_load i32 %3
      %23 = const i32 1
      %24 = binary add i32 %22 %23
      local_store %3 %24
    }
    %25 = const u32 0
    %26 = local_load i32 %2
    tree_store @t1[%25] %26 as i32
    %27 = const u32 1
    %28 = local_load i32 %3
    tree_store @t1[%27] %28 as i32
  }
}
)");
  Buffers buf(2);
  const uint64_t args[1] = {10};
  k.functions[0](buf.get(), args, 0, 1);
  EXPECT_EQ(buf.tree[0], 20u);
  EXPECT_EQ(buf.tree[1], 7u);
}

TEST(LlvmCodegen, CompareAndSwapAnd64BitWords) {
  JitKernel k = compile(R"(
kernel @w(a: u64, b: f64) stage lowered {
  task serial $-1 "serial" {
    %0 = arg u64 0
    %1 = arg f64 1
    %2 = const u32 2
    tree_store @t1[%2] %0 as u64
    %3 = const u32 4
    %4 = tree_atomic add f64 @t1[%3] %1
    %5 = tree_atomic add f64 @t1[%3] %1
    %6 = const u32 0
    %7 = const u32 0
    %8 = const u32 9
    %9 = tree_cas u32 @t1[%6] %7 %8
    %10 = tree_cas u32 @t1[%6] %7 %8
    %11 = const u32 1
    tree_store @t1[%11] %10 as u32
  }
}
)");
  Buffers buf(6);
  const uint64_t args[2] = {0x123456789abcdef0u, std::bit_cast<uint64_t>(1.25)};
  k.functions[0](buf.get(), args, 0, 1);
  EXPECT_EQ(buf.tree[0], 9u);  // the first swap happened
  EXPECT_EQ(buf.tree[1], 9u);  // the second saw 9 and swapped nothing
  EXPECT_EQ(buf.tree[2], 0x9abcdef0u);
  EXPECT_EQ(buf.tree[3], 0x12345678u);
  double sum = 0;
  std::memcpy(&sum, &buf.tree[4], 8);
  EXPECT_EQ(sum, 2.5);
}

TEST(LlvmCodegen, PrintsAndAssertionsWriteTheContextRecords) {
  // runtime/core/context_layout.h, written out: the ring starts at word 32
  // (its capacity at word 20, its head at 18), the assertion record at word
  // 0 (flag), 1 (message id), 2.. (values, two words each); ids are the
  // message's number plus word 21.
  ir::ParsedModule m = ir::parse_module(R"(
kernel @talk(a: i32, b: i64) stage lowered {
  task serial $-1 "serial" {
    %0 = arg i32 0
    %1 = arg i64 1
    print "{} {}\n" %0 %1
    %2 = const i32 7
    %3 = binary cmp_lt u1 %0 %2
    assert %3 "a is {}\n" %0
    print "after\n"
  }
}
)",
                                        "test");
  JitKernel k(jit().add(*m.kernels.front()));
  ASSERT_EQ(k.messages.size(), 3u);
  EXPECT_EQ(k.messages[0].id, 0u);
  EXPECT_FALSE(k.messages[0].is_assert);
  EXPECT_EQ(k.messages[0].types, (std::vector<DataType>{DataType::i32, DataType::i64}));
  EXPECT_TRUE(k.messages[1].is_assert);
  EXPECT_EQ(k.messages[1].types, std::vector<DataType>{DataType::i32});
  auto run = [&](int32_t a, int64_t b) {
    std::vector<uint32_t> context(32 + 16, 0u);
    context[20] = 16;
    context[21] = 40;
    uint32_t* buffers[1] = {context.data()};
    const uint64_t args[2] = {static_cast<uint32_t>(a), static_cast<uint64_t>(b)};
    k.functions[0](buffers, args, 0, 1);
    return context;
  };
  const std::vector<uint32_t> ok = run(3, -2);
  EXPECT_EQ(ok[18], 4u + 2u);  // [40][3][lo][hi], then [42][padding]
  EXPECT_EQ(ok[32], 40u);
  EXPECT_EQ(ok[33], 3u);
  EXPECT_EQ(ok[34], 0xfffffffeu);
  EXPECT_EQ(ok[35], 0xffffffffu);
  EXPECT_EQ(ok[36], 42u);
  EXPECT_EQ(ok[0], 0u);
  const std::vector<uint32_t> failed = run(9, 5);
  EXPECT_EQ(failed[18], 4u);  // what follows the failed assertion did not run
  EXPECT_EQ(failed[0], 1u);
  EXPECT_EQ(failed[1], 41u);
  EXPECT_EQ(failed[2], 9u);
  EXPECT_EQ(failed[3], 0u);  // a one-word value's second word
}

TEST(LlvmCodegen, OptimisedCodeUsesTheHostVectorUnits) {
  // A dense loop over contiguous words vectorises at -O3 for this CPU.
  JitKernel k = compile(R"(
kernel @v() stage lowered {
  task serial $-1 "serial" {
    %0 = const i32 0
    %1 = const i32 4096
    %2 = range_for %0 %1 {
      %3 = loop_index i32 %2 0
      %4 = cast u32 %3
      %5 = tree_load f32 @t1[%4]
      %6 = const f32 2
      %7 = binary mul f32 %5 %6
      tree_store @t1[%4] %7 as f32
    }
  }
}
)");
  EXPECT_NE(k.ir_after.find(" x float>"), std::string::npos) << jit().target();
  EXPECT_EQ(k.ir_before.find(" x float>"), std::string::npos);
}

}  // namespace
}  // namespace grove::llvm_backend
