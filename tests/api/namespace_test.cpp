// `using namespace grove::dsl;` takes the kernel language and nothing else:
// a program that has its own Args, Config, Field, Kernel, Program, Shape,
// Stats and Tree (names Grove's host classes have too) still compiles, and
// writes its kernels without `grove::` in front of every word of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "grove/grove.h"

// The program's own names.
struct Args {
  int frames = 3;
};
struct Config {
  bool verbose = false;
};
struct Stats {
  int64_t steps = 0;
};
struct Field {};
struct Kernel {};
struct Program {};
struct Tree {};
using Shape = std::string;

using namespace grove::dsl;

namespace {

TEST(Namespaces, TheKernelLanguageLivesBesideAProgramsOwnNames) {
  Args args;
  Config config;
  Stats stats;
  Shape shape = "round";
  Field field;
  Kernel kernel;
  Program program;
  Tree tree;
  (void)config, (void)field, (void)kernel, (void)program, (void)tree;
  EXPECT_EQ(args.frames + stats.steps, 3);
  EXPECT_EQ(shape, "round");

  grove::Program prog({.arch = grove::Arch::Interp});
  grove::Field x = prog.field(f32, "x", {8});
  grove::Field m = prog.matrix_field(2, 2, f32, "m", {8});
  grove::Field blocks_x = prog.field(i32, "blocks_x");
  prog.root().pointer(i, 4).dense(i, 4).place(blocks_x);
  grove::Kernel step = prog.kernel("step", {arg(f32, "scale")}, [&](grove::Args a) {
    for_range(0, 8, [&](Expr n) {
      Var v = Vec{cast(f32, n), a["scale"]};
      Mat r = outer(Vec{1.0f, 0.0f}, Vec{0.0f, 1.0f}) + Mat::identity(2);
      x(n) = dot(v.vec(), v.vec()) + min(cast(f32, n), 3.0f) + abs(-1.0f) * sqrt(4.0f) + trace(r);
      m(n) = transpose(r);
      if_(n % 2 == 0, [&] { blocks_x(n * 2) = n; });
    });
  });
  step(2.0f);
  // n^2 + 4 + min(n, 3) + 2 + 2.
  const std::vector<float> got = x.to_vector<float>();
  for (int n = 0; n < 8; ++n) EXPECT_EQ(got[static_cast<size_t>(n)], n * n + 4.0f + std::min(n, 3) + 4.0f) << n;
  // transpose([[1, 1], [0, 1]]) = [[1, 0], [1, 1]].
  const std::vector<float> mats = m.to_vector<float>();
  EXPECT_EQ(std::vector<float>(mats.begin(), mats.begin() + 4), (std::vector<float>{1, 0, 1, 1}));
  EXPECT_EQ(blocks_x.read<int32_t>({12}), 6);
  EXPECT_EQ(blocks_x.read<int32_t>({13}), 0);
}

}  // namespace
