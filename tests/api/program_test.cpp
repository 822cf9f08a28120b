// Program-level behaviour: IR stages, print_ir, GROVE_DUMP_DIR, trees, stats.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../support/scratch_dir.h"
#include "backend_fixture.h"

using namespace grove;
using ::testing::HasSubstr;

namespace {

class ProgramTest : public grove::testing::BackendTest {};
GROVE_ALL_BACKENDS(ProgramTest);

TEST_P(ProgramTest, KernelIrAtEachStage) {
  Program prog(config());
  Field x = prog.field(f32, "x", {8});
  Kernel k = prog.kernel("scale", {arg(f32, "s")}, [&](Args a) {
    for_range(0, 8, [&](Expr n) { x(n) = x(n) * a[0] + 0.0f * 2.0f; });
  });
  std::string frontend = k.ir("frontend");
  EXPECT_THAT(frontend, HasSubstr("kernel @scale(s: f32)"));
  EXPECT_THAT(frontend, HasSubstr("field @x : f32[8]"));
  EXPECT_THAT(frontend, HasSubstr("range_for"));
  EXPECT_THAT(k.ir("simplify"), HasSubstr("stage typed"));
  EXPECT_THAT(k.ir("offload"), HasSubstr("task range_for"));
  EXPECT_THAT(k.ir("mark_reductions"), HasSubstr("stage lowered"));
  std::string final_ir = k.ir();
  // A code generator's kernel is legalized for its target; the interpreter
  // runs the lowered one.
  EXPECT_THAT(final_ir, HasSubstr(GetParam() == Arch::Interp ? "stage lowered" : "stage legal"));
  EXPECT_THAT(final_ir, HasSubstr("tree_load f32"));
  EXPECT_THAT(final_ir, ::testing::Not(HasSubstr("task serial")));  // nothing left to run serially
  EXPECT_THAT(final_ir, ::testing::Not(HasSubstr("const f32 2")));   // 0.0f * 2.0f folded
  EXPECT_THROW(k.ir("nonsense"), Error);
}

// A compile prints only the last stage's IR; asking for another runs the
// passes again from the recorded IR, not the body, and gives what a dump
// of the first compile wrote.
TEST_P(ProgramTest, AStagesIrComesFromTheRecordedIrNotTheBodyAgain) {
  const grove::testing::ScratchDir dir("grove_stages_program_test");
  setenv("GROVE_DUMP_DIR", dir.path().c_str(), 1);
  Program dumped(config());
  unsetenv("GROVE_DUMP_DIR");
  Program prog(config());
  int bodies = 0;
  auto make = [&](Program& p) {
    Field x = p.field(i32, "x", {8});
    return p.kernel("twice", [&, x] {
      ++bodies;
      for_range(0, 8, [&](Expr n) { x(n) = x(n) * 2 + n; });
    });
  };
  Kernel once = make(dumped);
  setenv("GROVE_DUMP_DIR", dir.path().c_str(), 1);
  once();
  unsetenv("GROVE_DUMP_DIR");
  Kernel k = make(prog);
  k();
  EXPECT_EQ(bodies, 2);
  std::ifstream file(dir / "twice.04_offload.ir");
  std::stringstream written;
  written << file.rdbuf();
  ASSERT_FALSE(written.str().empty());
  EXPECT_EQ(k.ir("offload"), written.str());
  EXPECT_THAT(k.ir("frontend"), HasSubstr("kernel @twice"));
  EXPECT_EQ(bodies, 2);  // the body ran once per Program
  EXPECT_EQ(k.compile_count(), 1);
}

TEST_P(ProgramTest, PrintIrShowsEveryStage) {
  Config c = config();
  c.print_ir = true;
  Program prog(c);
  Field x = prog.field(i32, "x", {4});
  Kernel k = prog.kernel("shown", [&] { for_range(0, 4, [&](Expr n) { x(n) = n; }); });
  ::testing::internal::CaptureStdout();
  k();
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_THAT(out, HasSubstr("kernel 'shown' after frontend"));
  EXPECT_THAT(out, HasSubstr("kernel 'shown' after type_check"));
  EXPECT_THAT(out, HasSubstr("kernel 'shown' after simplify"));
}

TEST_P(ProgramTest, DumpDirReceivesEveryStage) {
  const grove::testing::ScratchDir dir("grove_dump_" + std::string(arch_name(GetParam())));
  setenv("GROVE_DUMP_DIR", dir.path().c_str(), 1);
  Program prog(config());
  Field x = prog.field(i32, "x", {4});
  Kernel k = prog.kernel("dumped", [&] { for_range(0, 4, [&](Expr n) { x(n) = n; }); });
  k();
  unsetenv("GROVE_DUMP_DIR");
  std::ifstream in(dir / "dumped.00_frontend.ir");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("kernel @dumped"));
  EXPECT_TRUE(std::filesystem::exists(dir / "dumped.02_simplify.ir"));
}

TEST_P(ProgramTest, FieldsDeclaredAfterAKernelRanGoIntoANewTree) {
  Program prog(config());
  Field a = prog.field(i32, "a");
  SNode& first_root = prog.root();
  first_root.dense(i, 4).place(a);
  Kernel k1 = prog.kernel("k1", [&] { for_range(0, 4, [&](Expr n) { a(n) = n; }); });
  k1();
  EXPECT_THROW(first_root.dense(i, 2), Error);  // frozen
  Field b = prog.field(i32, "b");
  SNode& second_root = prog.root();
  EXPECT_NE(first_root.id(), second_root.id());
  second_root.dense(i, 4).place(b);
  Kernel k2 = prog.kernel("k2", [&] { for_range(0, 4, [&](Expr n) { b(n) = a(n) * 10; }); });
  k2();
  EXPECT_EQ(b.to_vector<int32_t>(), (std::vector<int32_t>{0, 10, 20, 30}));
  EXPECT_EQ(a.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST_P(ProgramTest, StatsDescribeEverySNode) {
  Program prog(config());
  Field x = prog.field(f32, "x");
  SNode& blocks = prog.root().dense(ij, {4, 4});
  blocks.dense(ij, {8, 8}).place(x);
  Kernel k = prog.kernel("k", [&] { for_each(x, [&](Expr i, Expr j) { x(i, j) = 1.0f; }); });
  k();
  Stats s = prog.stats();
  std::optional<SNodeStats> b = s.find(blocks.name());
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(s.find("S99dense").has_value());
  EXPECT_EQ(b->kind, SNodeKind::dense);
  EXPECT_EQ(b->active_cells, 16);
  EXPECT_EQ(s.kernels_compiled, 1);
  EXPECT_EQ(s.kernel_launches, 1);
  EXPECT_GE(s.tree_words, 32 * 32);  // the values, plus header and lists
  EXPECT_LT(s.tree_words, 32 * 32 + 256);
  EXPECT_EQ(blocks.shape(), (Shape{4, 4}));
  EXPECT_EQ(blocks.parent()->kind(), SNodeKind::root);
}

TEST_P(ProgramTest, ArchIsNeverAuto) {
  Program prog(config());
  EXPECT_NE(prog.arch(), Arch::Auto);
  Arch parsed;
  EXPECT_TRUE(parse_arch("vulkan", &parsed));
  EXPECT_EQ(parsed, Arch::Vulkan);
  EXPECT_FALSE(parse_arch("metal", &parsed));
}

}  // namespace
