// tests/ir/stmt_map_test.cpp — ir::StmtMap against std::map over the
// statements of a kernel large enough to make the table grow several times
// (the passes count uses through it), and ir::Numbering: a statement the
// current numbering has not reached reads as unnumbered, whatever an
// earlier numbering (a print of another kernel) left in it.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/stmt_map.h"
#include "pass_test_util.h"

namespace grove::ir {
namespace {

// A kernel of 1 + 3n statements: a constant and n links of two binaries and
// a print, each using the constant and the link before.
std::string chain_kernel(int n) {
  std::string s = "kernel @k() stage typed {\n  %0 = const i32 1\n";
  for (int i = 0; i < n; ++i) {
    const int a = 1 + 2 * i, b = a + 1;
    s += "  %" + std::to_string(a) + " = binary add i32 %0 %" + std::to_string(i == 0 ? 0 : a - 1) + "\n";
    s += "  %" + std::to_string(b) + " = binary mul i32 %" + std::to_string(a) + " %0\n";
    s += "  print \"{} {}\" %0 %" + std::to_string(b) + "\n";
  }
  return s + "}\n";
}

std::vector<const Stmt*> statements(const Kernel& k) {
  std::vector<const Stmt*> out;
  walk(const_cast<Block*>(k.body()), [&](Stmt* s) { out.push_back(s); });
  return out;
}

TEST(StmtMap, CountsUsesAsAStdMapDoesThroughGrowthAndClear) {
  ParsedModule m = parse_module(chain_kernel(700), "chain");
  const std::vector<const Stmt*> stmts = statements(*m.kernels[0]);
  ASSERT_EQ(stmts.size(), 2101u);
  StmtMap<int> uses;
  std::map<const Stmt*, int> model;
  for (int round = 0; round < 2; ++round) {
    for (const Stmt* s : stmts) {
      for (const Stmt* op : s->operands()) {
        ++uses[op];
        ++model[op];
      }
    }
    EXPECT_EQ(model[stmts[0]], 3 * 700 + 1);  // every add, mul and print, and the first add twice
    for (const Stmt* s : stmts) {
      const int* found = uses.find(s);
      const auto it = model.find(s);
      if (it == model.end()) {
        EXPECT_EQ(found, nullptr);
      } else {
        ASSERT_NE(found, nullptr);
        EXPECT_EQ(*found, it->second);
      }
    }
    uses.clear();
    model.clear();
    EXPECT_TRUE(uses.empty());
    for (const Stmt* s : stmts) EXPECT_EQ(uses.find(s), nullptr);
  }
}

TEST(Numbering, AStatementTheNumberingHasNotReachedIsUnnumbered) {
  ParsedModule a = parse_module(chain_kernel(3), "a"), b = parse_module(chain_kernel(3), "b");
  const std::vector<const Stmt*> in_a = statements(*a.kernels[0]), in_b = statements(*b.kernels[0]);
  const std::string text_b = print_kernel(*b.kernels[0]);
  Numbering first;
  for (uint32_t i = 0; i < in_a.size(); ++i) first.set(in_a[i], i);
  Numbering second;  // numbers only b
  for (uint32_t i = 0; i < in_b.size(); ++i) second.set(in_b[i], 100 + i);
  for (uint32_t i = 0; i < in_a.size(); ++i) {
    EXPECT_TRUE(first.has(in_a[i]));
    EXPECT_EQ(first.get(in_a[i]), i);
    EXPECT_FALSE(second.has(in_a[i]));
  }
  print_kernel(*a.kernels[0]);  // a third numbering, of a
  EXPECT_FALSE(first.has(in_a[0]));
  EXPECT_TRUE(second.has(in_b[0]));
  // Printing and fingerprinting one kernel leaves another's text and
  // fingerprint as they were.
  const Fingerprint fp_b = fingerprint(*b.kernels[0]);
  fingerprint(*a.kernels[0]);
  EXPECT_EQ(print_kernel(*b.kernels[0]), text_b);
  EXPECT_EQ(fingerprint(*b.kernels[0]), fp_b);
}

}  // namespace
}  // namespace grove::ir
