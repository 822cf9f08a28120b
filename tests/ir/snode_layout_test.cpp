// tests/ir/snode_layout_test.cpp — the word layout of sibling containers
// (docs/memory.md, "Layout"): packed in declaration order, except that a
// container after a sibling of at least 64 KiB (16384 words) starts 1040
// words (4 KiB + 64 bytes) later, so that big arrays side by side never
// start a power of two apart.
#include <gtest/gtest.h>

#include "ir/snode.h"

namespace grove::ir {
namespace {

TEST(SNodeLayout, ContainersAfterABigSiblingAreStaggered) {
  SNodeForest forest;
  const int t = forest.add_tree();
  const int root = forest.tree(t).root;
  // Three big dense arrays of 2^16 f32 (256 KiB each), then two small ones.
  std::vector<int> dense;
  for (int f = 0; f < 5; ++f) {
    dense.push_back(forest.add_child(root, SNodeType::dense, {0}, {f < 3 ? int64_t{1} << 16 : int64_t{8}}));
    forest.add_place(dense.back(), f, DataType::f32, "f" + std::to_string(f));
  }
  forest.lay_out(t);
  auto start = [&](int n) { return forest.snode(n).component_offset; };
  const int64_t big = int64_t{1} << 16, stagger = 1024;
  EXPECT_EQ(start(dense[0]), 0);
  EXPECT_EQ(start(dense[1]), big + stagger);
  EXPECT_EQ(start(dense[2]), 2 * (big + stagger));
  EXPECT_EQ(start(dense[3]), 3 * big + 3 * stagger);  // after a big one
  EXPECT_EQ(start(dense[4]), 3 * big + 3 * stagger + 8);  // after a small one: packed
  // No two big arrays start a power of two apart, and equal indices of any
  // two lie at equal addresses modulo 4 KiB (1024 words).
  for (int a = 0; a < 3; ++a)
    for (int b = a + 1; b < 3; ++b) {
      const int64_t apart = start(dense[b]) - start(dense[a]);
      EXPECT_NE(apart & (apart - 1), 0) << a << " " << b;
      EXPECT_EQ(apart % 1024, 0) << a << " " << b;
    }
}

}  // namespace
}  // namespace grove::ir
