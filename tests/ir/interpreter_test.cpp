// The interpreter as the oracle of the passes: a kernel gives the same field
// contents when interpreted at the frontend stage, after type_check and
// simplify, and after offload and lower_access (the final IR).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grove/error.h"
#include "ir/eval.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/passes/lower_access.h"
#include "ir/passes/offload.h"
#include "ir/passes/simplify.h"
#include "ir/passes/type_check.h"
#include "ir/printer.h"
#include "ir/snode.h"
#include "ir/verifier.h"

namespace grove::ir {
namespace {

enum class Upto { frontend, simplified, lowered };

// Runs the (single) kernel of `module` with `args` after the passes up to
// `upto`, every field on its own dense tree, and returns each field's
// elements (as f64, row-major), fields in id order.
std::vector<std::vector<double>> run(const std::string& module, const std::vector<uint64_t>& args, Upto upto,
                                     std::string* output = nullptr) {
  ParsedModule m = parse_module(module, "test");
  Kernel& k = *m.kernels.at(0);
  SNodeForest forest;
  std::vector<std::vector<uint32_t>> trees;
  for (int f = 0; f < m.fields->size(); ++f) {
    const FieldDecl& d = m.fields->get(f);
    int t = forest.add_tree();
    int parent = forest.tree(t).root;
    if (d.ndim() > 0) {
      std::vector<int> axes;
      for (int a = 0; a < d.ndim(); ++a) axes.push_back(a);
      parent = forest.add_child(parent, SNodeType::dense, axes, d.shape);
    }
    forest.add_place(parent, f, d.dtype, d.name);
    forest.lay_out(t);
    trees.push_back(forest.initial_buffer(t));
  }
  int scratch = forest.add_scratch_tree(256);
  trees.push_back(std::vector<uint32_t>(256, 0));
  if (upto != Upto::frontend) {
    type_check(k);
    simplify(k);
  }
  if (upto == Upto::lowered) {
    k.forest = &forest;
    OffloadOptions o;
    o.scratch_tree = scratch;
    o.scratch_words = 256;
    offload(k, o);
    lower_access(k);
    simplify(k);
    verify(k, "test pipeline");
  }
  Interpreter interp(k);
  InterpreterEnv env;
  env.snodes = &forest;
  env.buffer = [&trees](int tree, int) -> std::span<uint32_t> { return trees.at(static_cast<size_t>(tree)); };
  env.print = [&](std::string_view s) {
    if (output) *output += s;
  };
  interp.run(args, env);
  std::vector<std::vector<double>> out;
  for (int f = 0; f < m.fields->size(); ++f) {
    const FieldDecl& d = m.fields->get(f);
    int64_t total = 1;
    for (int64_t e : d.shape) total *= e;
    std::vector<double> values;
    std::vector<int64_t> idx(kMaxAxes, 0);
    const auto& w = trees[static_cast<size_t>(f)];
    for (int64_t n = 0; n < total; ++n) {
      int64_t a = forest.find_element(f, idx.data(), [&](int64_t x) { return w[static_cast<size_t>(x)]; });
      values.push_back(bits_to_double(compute_type(d.dtype), load_element(w, a, d.dtype)));
      for (size_t ax = d.shape.size(); ax-- > 0;) {
        if (++idx[ax] < d.shape[ax]) break;
        idx[ax] = 0;
      }
    }
    out.push_back(values);
  }
  return out;
}

void expect_same_at_every_stage(const std::string& module, const std::vector<uint64_t>& args) {
  std::string o1, o2, o3;
  auto a = run(module, args, Upto::frontend, &o1);
  auto b = run(module, args, Upto::simplified, &o2);
  auto c = run(module, args, Upto::lowered, &o3);
  EXPECT_EQ(a, b) << "type_check + simplify changed the results";
  EXPECT_EQ(a, c) << "offload + lower_access changed the results";
  EXPECT_EQ(o1, o2);
  EXPECT_EQ(o1, o3);
}

TEST(Interpreter, MixedTypesAtTheFrontendStageMatchTheTypedKernel) {
  const std::string module = R"(field @r : f64[4]

kernel @k(n: i32, x: f32) stage frontend {
  %0 = arg i32 0
  %1 = arg f32 1
  %2 = binary add f32 %0 %1
  %3 = const i32 0
  %4 = cast f64 %2
  field_store @r[%3] %4
  %5 = const i32 7
  %6 = binary div i32 %0 %5
  %7 = const i32 1
  field_store @r[%7] %6
  %8 = binary cmp_lt u1 %1 %0
  %9 = const i32 2
  field_store @r[%9] %8
  %10 = const f32 0.5
  %11 = binary mul f32 %10 %10
  %12 = binary add f32 %11 %1
  %13 = const i32 3
  field_store @r[%13] %12
}
)";
  uint32_t x = 0x40200000u;  // 2.5f
  auto r = run(module, {uint64_t{23}, x}, Upto::frontend);
  EXPECT_EQ(r[0], (std::vector<double>{25.5, 3, 1, 2.75}));
  expect_same_at_every_stage(module, {uint64_t{23}, x});
}

TEST(Interpreter, LoopsBranchesAndAtomicsAgreeAcrossStages) {
  const std::string module = R"(field @h : i32[8]
field @s : i64[]

kernel @k(n: i32) stage frontend {
  %0 = arg i32 0
  %1 = const i32 0
  %2 = range_for %1 %0 {
    %3 = loop_index i32 %2 0
    %4 = const i32 8
    %5 = binary mod i32 %3 %4
    %6 = const i32 1
    %7 = field_atomic add i32 @h[%5] %6
    %8 = binary mul i32 %3 %3
    %9 = cast i64 %8
    %10 = field_atomic add i64 @s[] %9
    %11 = const i32 3
    %12 = binary cmp_eq u1 %5 %11
    if %12 {
      print "three: {} {}\n" %3 %7
    } else {
    }
  }
}
)";
  auto r = run(module, {uint64_t{20}}, Upto::lowered);
  EXPECT_EQ(r[0], (std::vector<double>{3, 3, 3, 3, 2, 2, 2, 2}));
  EXPECT_EQ(r[1], (std::vector<double>{2470}));
  expect_same_at_every_stage(module, {uint64_t{20}});
}

TEST(Interpreter, WhileBreakAndLocalsAgreeAcrossStages) {
  const std::string module = R"(field @r : i32[]

kernel @k(n: i32) stage frontend {
  %0 = arg i32 0
  %1 = alloca i32
  %2 = alloca i32
  local_store %1 %0
  while {
    %3 = local_load i32 %1
    %4 = const i32 1
    %5 = binary cmp_le u1 %3 %4
    if %5 {
      break
    } else {
    }
    %6 = const i32 2
    %7 = binary mod i32 %3 %6
    %8 = const i32 0
    %9 = binary cmp_eq u1 %7 %8
    %10 = binary div i32 %3 %6
    %11 = const i32 3
    %12 = binary mul i32 %3 %11
    %13 = binary add i32 %12 %4
    %14 = select i32 %9 %10 %13
    local_store %1 %14
    %15 = local_load i32 %2
    %16 = binary add i32 %15 %4
    local_store %2 %16
  }
  %17 = local_load i32 %2
  field_store @r[] %17
}
)";
  auto r = run(module, {uint64_t{27}}, Upto::frontend);
  EXPECT_EQ(r[0], (std::vector<double>{111}));  // Collatz steps of 27
  expect_same_at_every_stage(module, {uint64_t{27}});
}

TEST(Interpreter, StructForOverADenseFieldAgreesAcrossStages) {
  const std::string module = R"(field @x : f32[3, 5]
field @c : i32[]

kernel @k() stage frontend {
  %0 = struct_for @x {
    %1 = loop_index i32 %0 0
    %2 = loop_index i32 %0 1
    %3 = const i32 10
    %4 = binary mul i32 %1 %3
    %5 = binary add i32 %4 %2
    %6 = cast f32 %5
    field_store @x[%1, %2] %6
    %7 = const i32 1
    %8 = field_atomic add i32 @c[] %7
  }
}
)";
  auto r = run(module, {}, Upto::lowered);
  EXPECT_EQ(r[1], (std::vector<double>{15}));
  EXPECT_EQ(r[0][7], 12.0);  // x[1, 2]
  expect_same_at_every_stage(module, {});
}

TEST(Interpreter, FailedAssertionNamesTheKernel) {
  const std::string module = R"(field @r : i32[]

kernel @checked(n: i32) stage frontend {
  %0 = arg i32 0
  %1 = const i32 10
  %2 = binary cmp_lt u1 %0 %1
  assert %2 "n is {} but must be below {}" %0 %1
  field_store @r[] %0
}
)";
  EXPECT_NO_THROW(run(module, {uint64_t{3}}, Upto::lowered));
  try {
    run(module, {uint64_t{12}}, Upto::lowered);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "kernel 'checked': n is 12 but must be below 10");
  }
}

}  // namespace
}  // namespace grove::ir
