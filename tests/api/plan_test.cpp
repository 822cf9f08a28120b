// tests/api/plan_test.cpp — kernels run from their plans alone, on every
// backend whose plans carry code (Vulkan: SPIR-V per task; the CPU: one
// shared object per kernel). Plans are made by one Program, which is then
// destroyed (its code unloaded), and loaded into another: what the second
// runs is only what the plan's bytes hold. The results must be those of the
// kernels compiled in place.
#include <sstream>
#include <string>
#include <vector>

#include "backend_fixture.h"

#include <algorithm>
#include <initializer_list>
#include <utility>
#include "grove/grove.h"
#include "program/test_hooks.h"

namespace grove {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using grove::testing::error_of;

class PlanTest : public grove::testing::BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (GetParam() == Arch::Interp) GTEST_SKIP() << "the interpreter runs IR; its plans carry no code to load";
  }
};

using Plans = std::vector<std::pair<std::string, std::vector<uint8_t>>>;  // in the order compiled

Plans plans_of(Program& prog, std::initializer_list<const char*> kernels) {
  Plans out;
  for (const char* name : kernels) out.emplace_back(name, detail::kernel_plan_bytes(prog, name));
  return out;
}

void load_plans(Program& prog, const Plans& plans) {
  for (const auto& [name, bytes] : plans) detail::load_kernel_plan(prog, name, bytes);
}

// "" when equal, else both texts from a little before their first difference.
std::string difference(const std::string& a, const std::string& b) {
  if (a == b) return "";
  const size_t at = static_cast<size_t>(std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(std::min(a.size(), b.size())), b.begin()).first - a.begin());
  const size_t from = at < 40 ? 0 : at - 40;
  return "at character " + std::to_string(at) + ":\n  " + a.substr(from, 120) + "\n  " + b.substr(from, 120);
}

// A sparse workload: activation from arguments, a struct-for (listgen), a
// deactivation (gc) and a print.
struct SparseWorkload {
  explicit SparseWorkload(const Config& config) : prog(config) {
    x = prog.field(f32, "x");
    total = prog.field(f32, "total", {});
    blocks = &prog.root().pointer(ij, {32, 32});
    blocks->dense(ij, {8, 8}).place(x);
    prog.set_print_sink([&](std::string_view t) { printed += t; });
    paint = prog.kernel("paint", {arg(i32, "n"), arg(f32, "value")}, [&](Args a) {
      for_range(0, a[0] * 3 + 1, [&](Expr i) { x(i * 5 % 256, i * 7 % 256) = a[1] + cast(f32, i); });
    });
    sum = prog.kernel("sum", [&] { for_each(x, [&](Expr i, Expr j) { total() += x(i, j) * 0.5f; }); });
    prune = prog.kernel("prune", [&] {
      for_each(*blocks, [&](Expr i, Expr j) { if_((i + j) % 3 == 0, [&] { deactivate(*blocks, {i, j}); }); });
    });
    report = prog.kernel("report", [&] { print("total = ", total()); });
  }
  Plans plans() { return plans_of(prog, {"paint", "sum", "prune", "report"}); }
  // Everything the host can observe.
  std::string run() {
    paint(40, 1.5f);
    sum();
    prune();
    total.write({}, 0.0f);
    sum();
    report();
    std::ostringstream out;
    for (float v : x.to_vector<float>()) out << v << ' ';
    Stats st = prog.stats();
    out << "| " << st.at(blocks->name()).active_cells << ' ' << st.at(blocks->name()).pool_used << " | " << printed;
    return out.str();
  }

  Program prog;
  Field x, total;
  SNode* blocks = nullptr;
  std::string printed;
  Kernel paint, sum, prune, report;
};

TEST_P(PlanTest, KernelsRunFromTheirPlanAloneWithTheSameResults) {
  const std::string direct = SparseWorkload(config()).run();
  Plans plans = SparseWorkload(config()).plans();  // that Program is gone, and its code with it
  SparseWorkload planned(config());
  load_plans(planned.prog, plans);
  EXPECT_EQ(difference(planned.run(), direct), "");
  EXPECT_NE(direct.find("total = "), std::string::npos);
}

// A print names its message by id. Code numbers its messages from a base
// the device passes at each launch (the context's word on the CPU, a push
// constant on Vulkan), and a device numbers a plan's messages when it loads
// it, so plans load in any order and print their own text.
TEST_P(PlanTest, PlansLoadedInAnotherOrderPrintTheirOwnMessages) {
  Plans plans = SparseWorkload(config()).plans();
  std::reverse(plans.begin(), plans.end());
  SparseWorkload planned(config());
  load_plans(planned.prog, plans);
  // The printed total, worked out here: cells (5i, 7i) mod 256 hold
  // 1.5 + i for i <= 120 (distinct cells), and the prune leaves those
  // whose 8x8 block (bi, bj) has (bi + bj) % 3 != 0; the sum halves them.
  double total = 0;
  for (int i = 0; i <= 120; ++i)
    if ((i * 5 % 256 / 8 + i * 7 % 256 / 8) % 3 != 0) total += 0.5 * (1.5 + i);
  std::ostringstream want;
  want << "| total = " << static_cast<float>(total) << "\n";
  EXPECT_THAT(planned.run(), HasSubstr(want.str()));
}

// The same kinds of kernels on two instances of one tree type, taken as
// tree parameters: a plan names its slots by parameter, so one plan runs on
// any instance it is given.
struct TreeTypeWorkload {
  explicit TreeTypeWorkload(const Config& config) : prog(config) {
    grid = prog.tree_type("grid", [&](TreeTypeBuilder& b) {
      Field x = b.field(f32, "x");
      blocks = &b.root().pointer(ij, {16, 16});
      blocks->dense(ij, {4, 4}).place(x);
    });
    a = prog.instantiate(grid, "a");
    b = prog.instantiate(grid, "b");
    total = prog.field(f32, "total", {});
    paint = prog.kernel("paint", {arg(grid, "tr"), arg(i32, "n"), arg(f32, "value")}, [&](Args args) {
      Field x = args.tree("tr").field("x");
      for_range(0, args["n"], [&](Expr i) { x(i * 5 % 64, i * 7 % 64) = args["value"] + cast(f32, i); });
    });
    sum = prog.kernel("sum", {arg(grid, "tr")}, [&](Args args) {
      Field x = args.tree("tr").field("x");
      for_each(x, [&](Expr i, Expr j) { total() += x(i, j); });
    });
    prune = prog.kernel("prune", {arg(grid, "tr")}, [&](Args args) {
      SNodeRef cells = args.tree("tr")[*blocks];
      for_each(cells, [&](Expr i, Expr j) { if_((i + j) % 3 == 0, [&] { deactivate(cells, {i, j}); }); });
    });
  }
  Plans plans() { return plans_of(prog, {"paint", "sum", "prune"}); }
  std::string run() {
    std::ostringstream out;
    paint(a, 40, 1.5f);
    paint(b, 25, -2.0f);
    for (const Tree& t : {a, b}) {
      total.write({}, 0.0f);
      sum(t);
      out << total.read<float>() << ' ';
    }
    prune(b);
    total.write({}, 0.0f);
    sum(b);
    out << total.read<float>() << " |";
    for (const Tree& t : {a, b}) {
      for (float v : t.field("x").to_vector<float>()) out << ' ' << v;
      out << " | " << t.stats().at(blocks->name()).active_cells << ' ' << t.stats().at(blocks->name()).pool_used;
    }
    out << " | compiled " << paint.compile_count() << sum.compile_count() << prune.compile_count();
    return out.str();
  }

  Program prog;
  SNode* blocks = nullptr;
  TreeType grid;
  Tree a, b;
  Field total;
  Kernel paint, sum, prune;
};

TEST_P(PlanTest, KernelsWithTreeParametersRunFromTheirPlanOnAnyInstance) {
  const std::string direct = TreeTypeWorkload(config()).run();
  Plans plans = TreeTypeWorkload(config()).plans();
  TreeTypeWorkload planned(config());
  load_plans(planned.prog, plans);
  EXPECT_EQ(difference(planned.run(), direct), "");
  // The sums, known by hand: 40 values 1.5 + i, and 25 values -2 + i
  // (i * 5 % 64, i * 7 % 64 are distinct for i < 64).
  const float sum_a = 40 * 1.5f + 39 * 40 / 2.0f, sum_b = 25 * -2.0f + 24 * 25 / 2.0f;
  std::ostringstream want;
  want << sum_a << ' ' << sum_b << ' ';
  EXPECT_EQ(direct.rfind(want.str(), 0), 0u) << direct.substr(0, 40);
  EXPECT_NE(direct.find("compiled 111"), std::string::npos) << direct;
}

TEST_P(PlanTest, PlansFromAnotherBackendOrDamagedAreRefused) {
  Program prog(config());
  Field x = prog.field(i32, "x", {8});
  Kernel k = prog.kernel("k", [&] { for_range(0, 8, [&](Expr n) { x(n) = n; }); });
  std::vector<uint8_t> bytes = detail::kernel_plan_bytes(prog, "k");
  std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2));
  EXPECT_THAT(error_of([&] { detail::load_kernel_plan(prog, "k", cut); }),
              AllOf(HasSubstr("kernel plan of 'k'"), HasSubstr("truncated")));
  k();  // the kernel was left as it was
  EXPECT_EQ(x.read<int>({7}), 7);
  // Every other backend refuses it, naming the backend it was made for.
  for (Arch other_arch : compiled_backends()) {
    if (other_arch == GetParam()) continue;
    Config c;
    c.arch = other_arch;
    std::unique_ptr<Program> other;
    try {
      other = std::make_unique<Program>(c);
    } catch (const Error&) {
      continue;  // no such device here (Vulkan without a driver)
    }
    Field y = other->field(i32, "x", {8});
    Kernel k2 = other->kernel("k", [&] { for_range(0, 8, [&](Expr n) { y(n) = n; }); });
    const std::string made_for = "'" + std::string(arch_name(GetParam())) + "'";
    EXPECT_THAT(error_of([&] { detail::load_kernel_plan(*other, "k", bytes); }),
                other_arch == Arch::Interp ? HasSubstr("interpreter") : HasSubstr(made_for))
        << arch_name(other_arch);
  }
}

GROVE_ALL_BACKENDS(PlanTest);

}  // namespace
}  // namespace grove
