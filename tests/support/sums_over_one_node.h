// tests/support/sums_over_one_node.h — two kernels whose struct-fors visit
// the same pointer node, so that their list tasks (clear_list, listgen) are
// the same code: the backends that make such code once per device or Jit
// test that the second kernel makes none of it, and that both still sum
// the right cells (x(3n) = n for n < 40).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "grove/grove.h"

namespace grove::testing {

struct SumsOverOneNode {
  explicit SumsOverOneNode(const Config& config) : prog(config) {
    prog.root().pointer(i, 16).dense(i, 8).place(x);
    fill = prog.kernel("fill", [&] { for_range(0, 40, [&](Expr n) { x(n * 3) = n; }); });
    sum = prog.kernel("sum", [&] { for_each(x, [&](Expr c) { total() += x(c); }); });
    sum_twice = prog.kernel("sum_twice", [&] { for_each(x, [&](Expr c) { twice() += x(c) * 2; }); });
  }
  void expect_sums() {
    EXPECT_EQ(total.read<int32_t>(), 39 * 40 / 2);
    EXPECT_EQ(twice.read<int32_t>(), 39 * 40);
  }
  Program prog;
  Field x = prog.field(i32, "x");
  Field total = prog.field(i32, "total", {}), twice = prog.field(i32, "twice", {});
  Kernel fill, sum, sum_twice;
};

}  // namespace grove::testing
