// Kernel plans as values: launch-time counts, the byte format (round trips,
// and every truncated or corrupted input refused with an error, never a
// crash) and the JSON form. Links grove_runtime alone.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "grove/error.h"
#include "runtime/core/plan.h"
#include "runtime/core/tree_layout.h"

namespace grove::rt {
namespace {

using Op = CountExpr::Op;

CountExpr expr(std::vector<CountExpr::Node> nodes) {
  CountExpr c;
  c.nodes = std::move(nodes);
  c.root = static_cast<int32_t>(c.nodes.size()) - 1;
  return c;
}

TEST(PlanTest, CountsEvaluateWithTheIRsIntegerSemantics) {
  // n * 2 + 1 for an i32 argument n.
  CountExpr c = expr({{Op::arg, DataType::i32, 0}, {Op::constant, DataType::i32, 2}, {Op::mul, DataType::i32, 0, 0, 1},
                      {Op::constant, DataType::i32, 1}, {Op::add, DataType::i32, 0, 2, 3}});
  std::vector<uint64_t> args = {20};
  EXPECT_EQ(c.evaluate(args), 41);
  args[0] = static_cast<uint32_t>(-5);  // i32 bits
  EXPECT_EQ(c.evaluate(args), -9);
  // i32 arithmetic wraps; division by zero gives 0; casts narrow.
  CountExpr wrap = expr({{Op::constant, DataType::i32, 2147483647}, {Op::constant, DataType::i32, 1},
                         {Op::add, DataType::i32, 0, 0, 1}});
  EXPECT_EQ(wrap.evaluate({}), -2147483648LL);
  CountExpr div = expr({{Op::constant, DataType::i32, 7}, {Op::constant, DataType::i32, 0}, {Op::div, DataType::i32, 0, 0, 1}});
  EXPECT_EQ(div.evaluate({}), 0);
  CountExpr cast = expr({{Op::constant, DataType::i64, 0x100000005LL}, {Op::cast, DataType::i32, 0, 0}});
  EXPECT_EQ(cast.evaluate({}), 5);
  EXPECT_FALSE(CountExpr{}.evaluate({}).has_value());
  CountExpr missing_arg = expr({{Op::arg, DataType::i32, 3}});
  EXPECT_FALSE(missing_arg.evaluate(args).has_value());
}

KernelPlan sample() {
  KernelPlan p;
  p.name = "step";
  p.args = {{"n", DataType::i32, 0, 1}, {"scale", DataType::f64, 1, 2}};
  p.arg_words = 3;
  p.slots = {{TreeSlotPlan::Kind::scratch, 0, -1}, {TreeSlotPlan::Kind::tree, 1, -1}, {TreeSlotPlan::Kind::tree, 1, 0}};
  TaskPlan serial;
  serial.kind = TaskKind::serial;
  serial.label = "serial";
  serial.slots = {0};
  serial.entry_point = "step.t0.serial";
  TaskPlan loop;
  loop.kind = TaskKind::struct_for;
  loop.label = "struct_for S2dense";
  loop.snode = 2;
  loop.tree_slot = 1;
  loop.modifies = {{1, 1}, {2, 2}};
  loop.parallel = true;
  loop.local_size = 256;
  loop.end = expr({{Op::arg, DataType::i32, 0}, {Op::constant, DataType::i32, 8}, {Op::mul, DataType::i32, 0, 0, 1}});
  loop.iterations_per_invocation = 16;
  loop.grid = {{-1, expr({{Op::constant, DataType::i32, 2}}), expr({{Op::arg, DataType::i32, 0}}), 4}};
  loop.slots = {1, 2};
  loop.entry_point = "step.t1.struct_for";
  loop.count_entry_point = "step.t1.struct_for.count";
  p.tasks = {serial, loop};
  p.messages = {{0, false, "x = {}\n", {DataType::f32}}, {1, true, "index {} out of bounds", {DataType::i32}}};
  p.features.shader_int64 = true;
  p.features.subgroup_arithmetic = true;
  p.may_allocate = true;
  p.scratch_words = 6;
  p.code = SpirvCode{{{0x07230203u, 1, 2, 3}, std::vector<uint32_t>(100, 0xabcdu)}, "desktop"};
  return p;
}

// The sample with the code of `backend`'s kind.
KernelPlan sample_for(std::string_view backend) {
  KernelPlan p = sample();
  if (backend == "cpu") p.code = ElfCode{{0x7f, 'E', 'L', 'F', 2, 1, 1, 0}, "x86_64-pc-linux-gnu, znver4", "+avx2,+fma,-sse4a"};
  if (backend == "cuda")
    p.code = PtxCode{".version 7.8\n.target sm_75\n", "nvptx64-nvidia-cuda, sm_75", {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x33},
                     "sm_90, driver 13000"};
  if (backend == "interp") p.code = NoCode{};
  return p;
}

std::string refusal(const std::vector<uint8_t>& bytes) {
  try {
    deserialize_plan(bytes, "plan.bin");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PlanTest, BytesRoundTripExactly) {
  const KernelPlan p = sample();
  const std::vector<uint8_t> bytes = serialize(p);
  const KernelPlan back = deserialize_plan(bytes);
  EXPECT_EQ(serialize(back), bytes);
  EXPECT_EQ(back.name, "step");
  ASSERT_EQ(back.tasks.size(), 2u);
  EXPECT_EQ(back.spirv().modules, p.spirv().modules);
  EXPECT_EQ(back.spirv().target, "desktop");
  EXPECT_EQ(back.tasks[1].count_entry_point, "step.t1.struct_for.count");
  EXPECT_EQ(back.tasks[1].modifies, (std::vector<TaskPlan::Modified>{{1, 1}, {2, 2}}));
  EXPECT_EQ(back.tasks[1].end.evaluate(std::vector<uint64_t>{5, 0}), 40);
  ASSERT_EQ(back.tasks[1].grid.size(), 1u);
  EXPECT_EQ(back.tasks[1].grid[0].local_size, 4u);
  EXPECT_EQ(back.tasks[1].grid[0].end.evaluate(std::vector<uint64_t>{5, 0}), 5);
  EXPECT_EQ(back.slots[2].param, 0);
  EXPECT_EQ(back.messages[1].format, "index {} out of bounds");
  EXPECT_TRUE(back.features.subgroup_arithmetic);
  EXPECT_EQ(to_json(back), to_json(p));
}

TEST(PlanTest, EachKindOfCodeRoundTripsAndIsAskedForByKind) {
  const KernelPlan cpu = deserialize_plan(serialize(sample_for("cpu")));
  EXPECT_EQ(cpu.elf().object, sample_for("cpu").elf().object);
  EXPECT_EQ(cpu.elf().target, "x86_64-pc-linux-gnu, znver4");
  EXPECT_EQ(cpu.elf().target_features, "+avx2,+fma,-sse4a");
  const KernelPlan cuda = deserialize_plan(serialize(sample_for("cuda")));
  EXPECT_EQ(cuda.ptx().ptx, ".version 7.8\n.target sm_75\n");
  EXPECT_EQ(cuda.ptx().target, "nvptx64-nvidia-cuda, sm_75");
  EXPECT_EQ(cuda.ptx().binary, sample_for("cuda").ptx().binary);
  EXPECT_EQ(cuda.ptx().binary_target, "sm_90, driver 13000");
  KernelPlan no_binary = sample_for("cuda");  // the common case
  no_binary.ptx().binary.clear();
  no_binary.ptx().binary_target.clear();
  EXPECT_EQ(deserialize_plan(serialize(no_binary)).ptx().binary_target, "");
  const KernelPlan interp = deserialize_plan(serialize(sample_for("interp")));
  EXPECT_TRUE(std::holds_alternative<NoCode>(interp.code));
  // A device asking for its kind of code gets an error naming both kinds.
  try {
    (void)cpu.spirv();
    FAIL() << "an ELF object was taken for SPIR-V";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "kernel 'step': its plan holds an ELF object, where SPIR-V was expected; compile it for this device");
  }
}

TEST(PlanTest, AnUnknownCodeKindOrAModulePerTaskMissingIsRefused) {
  // The code comes last, its kind first: a plan without code ends with it.
  std::vector<uint8_t> unknown = serialize(sample_for("interp"));
  ASSERT_EQ(unknown.back(), 0);
  unknown.back() = 9;
  EXPECT_NE(refusal(unknown).find("code kind 9 does not exist"), std::string::npos);
  KernelPlan short_of_one = sample();
  short_of_one.spirv().modules.pop_back();
  EXPECT_NE(refusal(serialize(short_of_one)).find("1 SPIR-V modules for 2 tasks"), std::string::npos);
  KernelPlan empty = sample();
  empty.spirv().modules[1].clear();
  EXPECT_NE(refusal(serialize(empty)).find("task 1 has no code"), std::string::npos);
}


// A grid's groups hold at most 1024 invocations in all (what Vulkan and
// CUDA devices take), along at most three axes, and only a parallel task
// has one.
TEST(PlanTest, AGridTooLargeOrOnASerialTaskIsRefused) {
  KernelPlan wide = sample();
  wide.tasks[1].grid[0].local_size = 8;  // 256 x 8
  EXPECT_NE(refusal(serialize(wide)).find("a grid of groups of 2048 invocations"), std::string::npos);
  KernelPlan deep = sample();
  deep.tasks[1].local_size = 1;
  deep.tasks[1].grid.assign(3, deep.tasks[1].grid[0]);
  EXPECT_NE(refusal(serialize(deep)).find("3 grid axes"), std::string::npos);
  KernelPlan serial = sample();
  serial.tasks[0].grid = serial.tasks[1].grid;
  EXPECT_NE(refusal(serialize(serial)).find("1 grid axes on a task of serial"), std::string::npos);
}

TEST(PlanTest, EveryTruncationIsRefused) {
  const std::vector<uint8_t> bytes = serialize(sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string m = refusal(std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)));
    EXPECT_NE(m, "") << "a plan cut to " << n << " of " << bytes.size() << " bytes was accepted";
    EXPECT_NE(m.find("plan.bin"), std::string::npos) << m;
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_NE(refusal(longer).find("after the end"), std::string::npos);
}

TEST(PlanTest, ABinaryComesWithItsTarget) {
  KernelPlan p = sample_for("cuda");
  p.ptx().binary_target.clear();
  EXPECT_NE(refusal(serialize(p)).find("a binary without its target"), std::string::npos);
}

TEST(PlanTest, AnotherVersionOrNoPlanAtAllIsRefusedSayingWhich) {
  std::vector<uint8_t> bytes = serialize(sample());
  std::vector<uint8_t> other = bytes;
  other[4] = static_cast<uint8_t>(kPlanVersion + 1);
  EXPECT_NE(refusal(other).find("format version " + std::to_string(kPlanVersion + 1)), std::string::npos);
  other = bytes;
  other[0] ^= 0xff;
  EXPECT_NE(refusal(other).find("not a Grove kernel plan"), std::string::npos);
  EXPECT_NE(refusal({}).find("truncated"), std::string::npos);
}

TEST(PlanTest, RandomCorruptionNeverCrashes) {
  const std::vector<uint8_t> bytes = serialize(sample());
  std::mt19937 rng(1234);
  int refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> b = bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) b[rng() % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    try {
      KernelPlan p = deserialize_plan(b);
      (void)serialize(p);  // whatever is accepted is a well-formed plan
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
}

TEST(PlanTest, JsonNamesEverything) {
  const std::string j = to_json(sample());
  for (const char* part : {"\"name\": \"step\"", "\"kind\": \"struct_for\"", "\"end\": \"mul(arg0, 8)\"",
                           "\"kind\": \"SPIR-V\", \"module_words\": [4, 100], \"target\": \"desktop\"",
                           "\"kind\": \"scratch\"", "\"shader_int64\": true", "\"format\": \"x = {}\\n\""})
    EXPECT_NE(j.find(part), std::string::npos) << part << " in\n" << j;
  const std::string cuda = to_json(sample_for("cuda"));
  for (const char* part : {"\"kind\": \"PTX\"", "\"binary_bytes\": 8", "\"binary_target\": \"sm_90, driver 13000\""})
    EXPECT_NE(cuda.find(part), std::string::npos) << part << " in\n" << cuda;
  const std::string cpu = to_json(sample_for("cpu"));
  EXPECT_NE(cpu.find("\"kind\": \"an ELF object\", \"object_bytes\": 8"), std::string::npos) << cpu;
}

// The numbers field path words give node kinds are the list's
// (grove/snode_kinds.def): the GLSL include that applications' shaders read
// them with says the same, and names each kind a path can hold.
TEST(SNodeKinds, TheGlslIncludeNumbersEveryKindOfAPathAsTheListDoes) {
  std::ifstream in(GROVE_SOURCE_DIR "/shaders/grove_tree.glsl");
  ASSERT_TRUE(in) << "cannot read shaders/grove_tree.glsl";
  std::stringstream text;
  text << in.rdbuf();
  for (int k = 0; k < kSNodeTypes; ++k) {
    const auto t = static_cast<SNodeType>(k);
    if (t == SNodeType::root || t == SNodeType::place) continue;  // never a level of a path
    std::string upper = snode_type_name(t);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const std::string line = "const uint GROVE_" + upper + " = " + std::to_string(k) + "u;";
    EXPECT_NE(text.str().find(line), std::string::npos) << "shaders/grove_tree.glsl lacks: " << line;
  }
  EXPECT_EQ(kSNodeTypes, 6);
  EXPECT_STREQ(snode_type_name(SNodeType::bitmasked), "bitmasked");
  EXPECT_STREQ(snode_type_name(static_cast<SNodeType>(kSNodeTypes)), "?");
}

}  // namespace
}  // namespace grove::rt
