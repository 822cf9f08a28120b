// tests/ir/fingerprint_test.cpp — ir::fingerprint: equal for kernels that
// print alike (parsed twice, so no address is shared), different for every
// one-thing change of a kernel (a constant, a type, an operator, an operand,
// the order of operands, a statement moved into a block, a text, a field's
// name, an argument's name, the stage), and for different `extra` bytes.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "pass_test_util.h"

namespace grove::ir {
namespace {

using test::text;

constexpr const char* kBase = R"(
field @x : i32[4]
field @y : i32[4]

kernel @k(a: i32, b: i32) stage typed {
  %0 = arg i32 0
  %1 = arg i32 1
  %2 = const i32 0
  %3 = const i32 4
  %4 = binary sub i32 %0 %1
  %5 = range_for %2 %3 {
    %6 = loop_index i32 %5 0
    %7 = binary cmp_lt u1 %6 %0
    if %7 {
      field_store @x[%6] %4
    } else {
    }
    print "{}" %6
  }
}
)";

// Each a one-thing change of kBase: (what it changes, the text from, to).
const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> kChanges = {
    {"a constant", {"const i32 4", "const i32 5"}},
    {"a type", {"binary sub i32 %0 %1", "binary sub i64 %0 %1"}},
    {"an operator", {"binary sub i32", "binary add i32"}},
    {"the order of operands", {"binary sub i32 %0 %1", "binary sub i32 %1 %0"}},
    {"an operand", {"cmp_lt u1 %6 %0", "cmp_lt u1 %6 %1"}},
    {"a statement moved into a block", {"    } else {\n    }\n    print \"{}\" %6\n", "    } else {\n      print \"{}\" %6\n    }\n"}},
    {"a text", {"print \"{}\" %6", "print \"{} \" %6"}},
    {"a field", {"field_store @x[%6]", "field_store @y[%6]"}},
    {"an argument's name", {"@k(a: i32, b: i32)", "@k(a: i32, c: i32)"}},
    {"the kernel's name", {"kernel @k(", "kernel @j("}},
    {"an argument's index", {"%1 = arg i32 1", "%1 = arg i32 0"}},
    {"a loop index's axis", {"loop_index i32 %5 0", "loop_index i32 %5 1"}},
};

Fingerprint of(const std::string& module, std::initializer_list<std::string_view> extra = {}) {
  ParsedModule m = parse_module(text(module), "test");
  EXPECT_EQ(m.kernels.size(), 1u);
  return fingerprint(*m.kernels.front(), extra);
}

TEST(Fingerprint, KernelsThatPrintAlikeHaveEqualFingerprints) {
  ParsedModule a = parse_module(text(kBase), "a"), b = parse_module(text(kBase), "b");
  ASSERT_EQ(print_kernel(*a.kernels[0]), print_kernel(*b.kernels[0]));
  EXPECT_EQ(fingerprint(*a.kernels[0]), fingerprint(*b.kernels[0]));
  EXPECT_EQ(fingerprint(*a.kernels[0], {"x", "y"}), fingerprint(*b.kernels[0], {"x", "y"}));
}

TEST(Fingerprint, EveryOneThingChangeChangesIt) {
  std::set<std::pair<uint64_t, uint64_t>> seen;
  const Fingerprint base = of(kBase);
  seen.insert({base.a, base.b});
  for (const auto& [what, change] : kChanges) {
    std::string changed = kBase;
    const size_t at = changed.find(change.first);
    ASSERT_NE(at, std::string::npos) << what;
    changed.replace(at, change.first.size(), change.second);
    ParsedModule m = parse_module(text(changed), what);  // parsed, not verified: types may not agree
    const Fingerprint f = fingerprint(*m.kernels.front());
    EXPECT_TRUE(seen.insert({f.a, f.b}).second) << "changing " << what << " left the fingerprint of another kernel";
  }
}

TEST(Fingerprint, ExtraBytesCount) {
  EXPECT_NE(of(kBase, {"debug"}), of(kBase, {"release"}));
  EXPECT_NE(of(kBase, {"ab", "c"}), of(kBase, {"a", "bc"}));
  EXPECT_NE(of(kBase, {}), of(kBase, {""}));
}

}  // namespace
}  // namespace grove::ir
