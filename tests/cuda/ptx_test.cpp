// tests/cuda/ptx_test.cpp — the CUDA backend's compile side on every
// machine: kernels written as IR text translated to PTX by the shared LLVM
// code generator (src/cuda/ptx.h), their entry points and parameters
// checked, and every module — these and those of the whole API suite —
// assembled by the CUDA toolkit's ptxas for sm_75, sm_80 and sm_90 with
// warnings as errors. Without a toolkit the ptxas tests skip, saying so.
// AOT modules for CUDA, made with no GPU for Config::cuda_sm, are assembled
// too; tests/api/aot_test.cpp runs them like every module where a GPU is.
#include "cuda/ptx.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "../support/scratch_dir.h"
#include "grove/aot.h"
#include "grove/error.h"
#include "grove/grove.h"
#include "grove/runtime.h"
#include "ir/parser.h"
#include "program/test_hooks.h"
#include "runtime/aot/module.h"
#include "runtime/cuda/device.h"

namespace grove::cuda {
namespace {

namespace fs = std::filesystem;

constexpr int kSms[] = {75, 80, 90};

// Two tasks: a serial one that prints and asserts, and a parallel loop with
// a bound read from the tree, tree atomics (integer, float, min, max,
// compare-and-swap, 64-bit), a float remainder and math functions.
const char* kTwoTasks = R"(
kernel @two_tasks(x: f32, n: i64) stage lowered {
  task serial $-1 "serial" {
    %0 = arg f32 0
    %1 = arg i64 1
    print "{} {}\n" %0 %1
    %2 = const i64 7
    %3 = binary cmp_lt u1 %1 %2
    assert %3 "n is {}\n" %1
  }
  task range_for $-1 "range_for" {
    %4 = const i32 10
    %5 = const u32 1
    %6 = tree_load atomic i32 @t1[%5]
    %7 = range_for %4 %6 {
      %8 = loop_index i32 %7 0
      %9 = binary mul i32 %8 %8
      %10 = cast u32 %8
      tree_store @t1[%10] %9 as i32
      %11 = const u32 0
      %12 = const i32 1
      %13 = tree_atomic add i32 @t1[%11] %12
      %14 = const u32 2
      %15 = tree_atomic max i32 @t1[%14] %8
      %16 = arg f32 0
      %17 = unary sin f32 %16
      %18 = binary mod f32 %17 %16
      %19 = binary pow f32 %18 %16
      %20 = const u32 4
      %21 = tree_atomic add f32 @t2[%20] %19
      %22 = tree_atomic min f32 @t2[%20] %19
      %23 = arg i64 1
      %24 = const u32 6
      %25 = tree_atomic add i64 @t2[%24] %23
      %26 = cast f64 %19
      %27 = unary exp f64 %26
      %28 = const u32 8
      %29 = tree_atomic add f64 @t2[%28] %27
      %30 = const u32 10
      %31 = const u32 0
      %32 = const u32 5
      %33 = tree_cas u32 @t2[%30] %31 %32
    }
  }
}
)";

PtxCode compile(const std::string& text, int sm, bool debug = false) {
  ir::ParsedModule m = ir::parse_module(text, "test");
  EXPECT_EQ(m.kernels.size(), 1u);
  PtxCompiler compiler(sm);
  return compiler.compile(*m.kernels.front(), debug);
}

// The number of `.param` lines of entry `name` in `ptx`.
int params_of(const std::string& ptx, const std::string& name) {
  const size_t at = ptx.find(".entry " + name + "(");
  if (at == std::string::npos) return -1;
  const size_t end = ptx.find(')', at);
  int n = 0;
  for (size_t p = ptx.find(".param", at); p != std::string::npos && p < end; p = ptx.find(".param", p + 1)) ++n;
  return n;
}

// The body of entry `name` (to the next entry).
std::string body_of(const std::string& ptx, const std::string& name) {
  const size_t at = ptx.find(".entry " + name + "(");
  if (at == std::string::npos) return "";
  const size_t next = ptx.find(".entry ", at + 1);
  return ptx.substr(at, next == std::string::npos ? std::string::npos : next - at);
}

TEST(Ptx, EachTaskIsAKernelEntryTakingContextTreesAndArguments) {
  PtxCode code = compile(kTwoTasks, 90);
  ASSERT_EQ(code.tasks.size(), 2u);
  EXPECT_EQ(code.tasks[0].entry, "two_tasks_t0_serial");
  EXPECT_EQ(code.tasks[1].entry, "two_tasks_t1_range_for");
  EXPECT_TRUE(code.tasks[1].count_entry.empty()) << "a GPU kernel finds its own count";
  EXPECT_NE(code.ptx.find(".target sm_90"), std::string::npos);
  // The serial task touches no tree: context + 2 arguments. The loop
  // touches trees 1 and 2: context + 2 trees + 2 arguments.
  EXPECT_TRUE(code.tasks[0].trees.empty());
  EXPECT_EQ(code.tasks[1].trees.size(), 2u);
  EXPECT_EQ(params_of(code.ptx, "two_tasks_t0_serial"), 3) << code.ptx;
  EXPECT_EQ(params_of(code.ptx, "two_tasks_t1_range_for"), 5) << code.ptx;
  // The loop strides over the grid; the serial task runs in one thread.
  const std::string loop = body_of(code.ptx, "two_tasks_t1_range_for");
  for (const char* reg : {"%tid.x", "%ctaid.x", "%ntid.x", "%nctaid.x"})
    EXPECT_NE(loop.find(reg), std::string::npos) << reg;
  EXPECT_EQ(body_of(code.ptx, "two_tasks_t0_serial").find("%tid.x"), std::string::npos);
  // Tree atomics are global-memory atomics (the float min a compare-and-swap loop).
  for (const char* op : {"atom.global.add.u32", "atom.global.max.s32", "atom.global.add.f32", "atom.global.add.u64",
                         "atom.global.add.f64", "atom.global.cas.b32"})
    EXPECT_NE(loop.find(op), std::string::npos) << op;
  // Math comes from libdevice, inlined: nothing is left to call.
  EXPECT_EQ(code.ptx.find("__nv_"), std::string::npos);
  EXPECT_EQ(code.ptx.find(".extern"), std::string::npos);
  // Print and assert records go to the context buffer, as on every backend.
  ASSERT_EQ(code.messages.size(), 2u);
  EXPECT_FALSE(code.messages[0].is_assert);
  EXPECT_TRUE(code.messages[1].is_assert);
}

// A for_range over a shape on a GPU (grid loops, docs/ir.md): the launch
// spreads the nest over y and z as well as x, the innermost loop on x, each
// loop striding along its own axis, so no thread divides to find its point.
const char* kGrids = R"(
kernel @grids(n: i32) stage lowered {
  task range_for $-1 "range_for" {
    %0 = const i32 0
    %1 = arg i32 0
    %2 = range_for %0 %1 {
      %3 = loop_index i32 %2 0
      %4 = range_for grid %0 %1 {
        %5 = loop_index i32 %4 0
        %6 = binary mul i32 %3 %1
        %7 = binary add i32 %6 %5
        %8 = cast u32 %7
        tree_store @t1[%8] %7 as i32
      }
    }
  }
  task range_for $-1 "range_for" {
    %9 = const i32 0
    %10 = const i32 4
    %11 = const i32 16
    %12 = range_for %9 %10 {
      %13 = loop_index i32 %12 0
      %14 = range_for grid %9 %10 {
        %15 = loop_index i32 %14 0
        %16 = range_for grid %9 %11 {
          %17 = loop_index i32 %16 0
          %18 = binary add i32 %15 %17
          %19 = cast u32 %18
          %20 = tree_atomic add i32 @t1[%19] %13
        }
      }
    }
  }
}
)";

TEST(Ptx, GridLoopsSpreadOverTheLaunchsYAndZ) {
  PtxCode code = compile(kGrids, 90);
  ASSERT_EQ(code.tasks.size(), 2u);
  // Counts from an argument: 64 threads along x, the rest of the block on y.
  ASSERT_EQ(code.tasks[0].grid.size(), 1u);
  EXPECT_EQ(code.tasks[0].local_size, 4u);
  EXPECT_EQ(code.tasks[0].grid[0].local_size, 64u);
  EXPECT_EQ(code.tasks[0].grid[0].static_iterations, -1);
  EXPECT_TRUE(code.tasks[0].grid[0].end.known());
  // Constant counts: a block covers them (4 x 4 x 16).
  ASSERT_EQ(code.tasks[1].grid.size(), 2u);
  EXPECT_EQ(code.tasks[1].local_size, 4u);
  EXPECT_EQ(code.tasks[1].grid[0].local_size, 4u);
  EXPECT_EQ(code.tasks[1].grid[1].local_size, 16u);
  EXPECT_EQ(code.tasks[1].grid[1].static_iterations, 16);
  const std::string two = body_of(code.ptx, "grids_t0_range_for");
  const std::string three = body_of(code.ptx, "grids_t1_range_for");
  for (const char* reg : {"%tid.x", "%tid.y", "%ctaid.y", "%ntid.y", "%nctaid.y"})
    EXPECT_NE(two.find(reg), std::string::npos) << reg << "\n" << two;
  EXPECT_EQ(two.find("%tid.z"), std::string::npos);
  for (const char* reg : {"%tid.x", "%tid.y", "%tid.z", "%ctaid.z"}) EXPECT_NE(three.find(reg), std::string::npos) << reg;
  for (const std::string& body : {two, three}) {
    EXPECT_EQ(body.find("div."), std::string::npos) << body;
    EXPECT_EQ(body.find("rem."), std::string::npos) << body;
  }
}

// Task 0: sums marked `accumulate` (ir::mark_reductions) of each width and
// kind, summed by a thread over its iterations, then across its warp with
// shuffles, and added by lane 0. Task 1: counters (a constant added to a
// constant address: a bump allocator's ticket, whose old value is used, and
// one whose old value nothing reads), added once by the lowest thread of
// the warp here, the others shuffling the old value where it is used; and
// an unmarked add of a value that differs per thread, one atomic each.
const char* kAdds = R"(
kernel @adds(n: i32) stage lowered {
  task range_for $-1 "range_for" {
    %0 = const i32 0
    %1 = arg i32 0
    %2 = range_for %0 %1 {
      %3 = loop_index i32 %2 0
      %4 = const u32 0
      %5 = tree_atomic accumulate add i32 @t1[%4] %3
      %6 = cast f32 %3
      %7 = const u32 2
      %8 = tree_atomic accumulate add f32 @t1[%7] %6
      %9 = cast i64 %3
      %10 = const u32 4
      %11 = tree_atomic accumulate add i64 @t1[%10] %9
      %12 = cast f64 %3
      %13 = const u32 6
      %14 = tree_atomic accumulate add f64 @t1[%13] %12
    }
  }
  task range_for $-1 "range_for" {
    %15 = const i32 0
    %16 = arg i32 0
    %17 = range_for %15 %16 {
      %18 = loop_index i32 %17 0
      %19 = const u32 0
      %20 = const u32 1
      %21 = tree_atomic add u32 @t1[%19] %20
      %22 = const u32 16
      %23 = binary add u32 %21 %22
      %24 = cast u32 %18
      tree_store @t1[%23] %24 as u32
      %25 = const u32 8
      %26 = tree_atomic add u32 @t1[%25] %24
      tree_store @t1[%26] %24 as u32
      %27 = const u32 12
      %28 = tree_atomic add u32 @t1[%27] %20
    }
  }
}
)";

// The number of times `what` occurs in `text`.
int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Ptx, SumsIntoOneCellAreAddedOncePerWarp) {
  PtxCode code = compile(kAdds, 90);
  ASSERT_EQ(code.tasks.size(), 2u);
  // The launch is capped so that a thread sums 16 iterations on average.
  EXPECT_EQ(code.tasks[0].iterations_per_invocation, 16u);
  EXPECT_EQ(code.tasks[1].iterations_per_invocation, 1u);
  const std::string sums = body_of(code.ptx, "adds_t0_range_for");
  // Five butterfly steps per 32-bit sum, ten per 64-bit one (two words).
  EXPECT_EQ(count_of(sums, "shfl.sync.bfly.b32"), 5 + 5 + 10 + 10) << sums;
  EXPECT_NE(sums.find("activemask"), std::string::npos) << sums;
  EXPECT_NE(sums.find("%laneid"), std::string::npos) << sums;
  for (const char* op : {"atom.global.add.u32", "atom.global.add.f32", "atom.global.add.u64", "atom.global.add.f64"})
    EXPECT_EQ(count_of(sums, op), 1) << op << "\n" << sums;
  // Unmarked adds are no sums: no butterfly.
  EXPECT_EQ(body_of(code.ptx, "adds_t1_range_for").find("shfl.sync.bfly"), std::string::npos);
}

TEST(Ptx, CountersAreAddedOncePerWarp) {
  PtxCode code = compile(kAdds, 90);
  const std::string body = body_of(code.ptx, "adds_t1_range_for");
  EXPECT_EQ(count_of(body, "activemask"), 2) << body;
  EXPECT_EQ(count_of(body, "shfl.sync.idx.b32"), 1) << body;
  EXPECT_NE(body.find("%lanemask_lt"), std::string::npos) << body;
  // One atomic for each counter (the warp's count), one for the other add
  // (the unused counter's may be a reduction, "red").
  EXPECT_EQ(count_of(body, "atom.global.add.u32") + count_of(body, "red.global.add.u32"), 3) << body;
}

TEST(Ptx, KernelNamesBecomePtxIdentifiers) {
  for (const auto& [name, entry] : std::vector<std::pair<std::string, std::string>>{
           {"my-kernel.v2", "my_kernel_v2_t0_serial"}, {"3d", "_3d_t0_serial"}}) {
    ir::ParsedModule m = ir::parse_module("kernel @k() stage lowered {\n  task serial $-1 \"serial\" {\n  }\n}\n", "test");
    ir::Kernel renamed(name, {}, nullptr);
    renamed.stage = ir::Stage::lowered;
    renamed.body()->append(m.kernels.front()->body()->take(0));
    PtxCode code = PtxCompiler(75).compile(renamed, false);
    ASSERT_EQ(code.tasks.size(), 1u);
    EXPECT_EQ(code.tasks[0].entry, entry);
    EXPECT_NE(code.ptx.find(".entry " + entry + "("), std::string::npos) << code.ptx;
  }
}

TEST(Ptx, TargetsLlvmCannotEmitAreRefused) {
  for (int sm : {70, 100}) {
    try {
      PtxCompiler c(sm);
      ADD_FAILURE() << "sm_" << sm << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("sm_75 to sm_90"), std::string::npos) << e.what();
    }
  }
}

TEST(Ptx, MathWithoutLibdeviceIsAClearError) {
  const fs::path empty = fs::temp_directory_path() / ("grove-no-toolkit-" + std::to_string(::getpid()));
  fs::create_directories(empty);
  const char* saved = std::getenv("CUDA_PATH");
  const std::string saved_value = saved ? saved : "";
  setenv("CUDA_PATH", empty.c_str(), 1);
  try {
    compile(kTwoTasks, 80);
    ADD_FAILURE() << "compiled without libdevice";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("two_tasks"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("libdevice"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CUDA_PATH"), std::string::npos) << e.what();
  }
  if (saved) setenv("CUDA_PATH", saved_value.c_str(), 1); else unsetenv("CUDA_PATH");
  fs::remove_all(empty);
}

// ---- ptxas ----

std::string ptxas() {
  const std::string root = find_cuda_toolkit();
  if (root.empty()) return "";
  const fs::path p = fs::path(root) / "bin" / "ptxas";
  return fs::exists(p) ? p.string() : "";
}

#define SKIP_WITHOUT_PTXAS()                                                                                    \
  if (ptxas().empty())                                                                                          \
  GTEST_SKIP() << "no CUDA toolkit with ptxas (looked at CUDA_PATH, CUDA_HOME, PATH and /usr/local/cuda)"

// ptxas's output for `file` assembled for `sm` (warnings are errors); ""
// when it says nothing and succeeds.
std::string assemble(const fs::path& file, int sm) {
  const fs::path out = fs::temp_directory_path() / ("grove-ptxas-" + std::to_string(::getpid()) + ".cubin");
  const std::string command = "'" + ptxas() + "' --warning-as-error -arch=sm_" + std::to_string(sm) + " -o '" +
                              out.string() + "' '" + file.string() + "' 2>&1";
  std::string said;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "cannot run " + command;
  std::array<char, 4096> buf;
  while (size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) said.append(buf.data(), n);
  const int status = pclose(pipe);
  std::error_code ec;
  fs::remove(out, ec);
  if (status != 0 && said.empty()) said = "ptxas exited with status " + std::to_string(status);
  return said;
}

TEST(Ptxas, AssemblesTheseKernelsForEveryTarget) {
  SKIP_WITHOUT_PTXAS();
  const fs::path dir = fs::temp_directory_path() / ("grove-ptx-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (int sm : kSms)
    for (bool debug : {false, true}) {
      for (const auto& [name, text] : {std::pair{"two_tasks", kTwoTasks}, std::pair{"grids", kGrids}, std::pair{"adds", kAdds}}) {
        const fs::path file = dir / (std::string(name) + "_" + std::to_string(sm) + (debug ? "_debug" : "") + ".ptx");
        std::ofstream(file) << compile(text, sm, debug).ptx;
        EXPECT_EQ(assemble(file, sm), "") << file;
      }
    }
  fs::remove_all(dir);
}

// Every kernel of the API suite (tests/api/suite_ptx.cpp wrote them, in
// the ctest fixture before this test), for one target.
class PtxasOfTheSuite : public ::testing::TestWithParam<int> {};

TEST_P(PtxasOfTheSuite, AssemblesEveryKernel) {
  SKIP_WITHOUT_PTXAS();
  const char* dir = std::getenv("GROVE_TEST_PTX_DIR");
  if (dir == nullptr || *dir == '\0')
    GTEST_SKIP() << "GROVE_TEST_PTX_DIR is unset: run through ctest in a build without sanitizers, which "
                    "writes the suite's PTX first";
  const int sm = GetParam();
  const fs::path sub = fs::path(dir) / ("sm_" + std::to_string(sm));
  ASSERT_TRUE(fs::is_directory(sub)) << sub;
  int files = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(sub)) {
    if (e.path().extension() != ".ptx") continue;
    ++files;
    EXPECT_EQ(assemble(e.path(), sm), "") << e.path();
  }
  // The suite compiles hundreds of distinct kernels; a handful means it
  // did not run.
  EXPECT_GT(files, 300) << sub;
  std::printf("sm_%d: ptxas assembled %d modules of the suite\n", sm, files);
}

INSTANTIATE_TEST_SUITE_P(Targets, PtxasOfTheSuite, ::testing::ValuesIn(kSms),
                         [](const ::testing::TestParamInfo<int>& info) { return "sm_" + std::to_string(info.param); });

// ---- AOT modules for CUDA ----

// Why Arch::Cuda cannot run here, "" where it can.
std::string no_cuda() {
  try {
    rt::cuda::enumerate_devices();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// A module of a sparse program (pointer blocks, an atomic sum, a print),
// saved from a Program on the interpreter for `sm` (0: Config's default).
std::vector<uint8_t> sparse_module(int sm, bool debug = false) {
  Config c;
  c.arch = Arch::Interp;
  c.cuda_sm = sm;
  c.debug = debug;
  Program prog(c);
  Field x = prog.field(f32, "x"), total = prog.field(f32, "total", {});
  prog.root().pointer(i, 16).dense(i, 8).place(x);
  Kernel fill = prog.kernel("fill", {arg(i32, "n")}, [&](Args a) {
    for_range(0, a["n"], [&](Expr k) { x(k * 5) = cast(f32, k) * 0.5f; });
  });
  Kernel sum = prog.kernel("sum", [&] {
    for_each(x, [&](Expr k) { atomic_add(total(), x(k)); });
    print("total", total());
  });
  aot::Module m(prog, Arch::Cuda);
  m.add_kernel("fill", fill);
  m.add_kernel("sum", sum);
  return m.bytes();
}

TEST(CudaAot, ModulesAreMadeWithoutAGpuForConfigCudaSmAndPtxasAssemblesThem) {
  const grove::testing::ScratchDir dir("grove_cuda_aot");
  std::vector<std::pair<fs::path, int>> files;
  for (int sm : {0, 75, 80, 90})
    for (bool debug : {false, true}) {
      const rt::aot::ModuleData m = rt::aot::read_module(sparse_module(sm, debug), "module");
      const int want = sm == 0 ? kMinSm : sm;  // 0: the oldest target, which every GPU loads
      EXPECT_EQ(m.backend, "cuda");
      EXPECT_NE(rt::aot::describe(m).find("device: a CUDA GPU of sm_" + std::to_string(want) + " or newer"),
                std::string::npos)
          << rt::aot::describe(m);
      for (const rt::KernelPlan& k : m.kernels) {
        EXPECT_EQ(k.ptx().target, "nvptx64-nvidia-cuda, sm_" + std::to_string(want)) << k.name;
        const std::string& ptx = k.ptx().ptx;
        EXPECT_NE(ptx.find(".target sm_" + std::to_string(want)), std::string::npos) << k.name;
        const fs::path file = dir / (k.name + "_" + std::to_string(sm) + (debug ? "_debug" : "") + ".ptx");
        std::ofstream(file) << ptx;
        files.emplace_back(file, want);
      }
    }
  EXPECT_EQ(files.size(), 4u * 2u * 5u);  // fill, sum, __write_root.x, __fill_root.x, __deactivate_all_root.S1pointer
  SKIP_WITHOUT_PTXAS();
  for (const auto& [file, sm] : files) EXPECT_EQ(assemble(file, sm), "") << file;
}

TEST(CudaAot, ConfigCudaSmOutsideTheTargetsIsRefusedOnEveryArch) {
  for (int sm : {-1, 70, 91, 100}) {
    Config c;
    c.arch = Arch::Interp;
    c.cuda_sm = sm;
    try {
      Program p(c);
      ADD_FAILURE() << "Config::cuda_sm " << sm << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("Config::cuda_sm is " + std::to_string(sm) + "; give a compute capability from 75 to 90"),
                std::string::npos)
          << e.what();
    }
  }
}

// Loading a CUDA module opens the GPU through the driver: without one it
// says so; with one, the module runs there (tests/api/aot_test.cpp runs the
// module suite on it).
TEST(CudaAot, LoadingOpensTheGpuOrSaysWhyNot) {
  const std::vector<uint8_t> bytes = sparse_module(0);
  runtime::Options external;
  external.external = runtime::VulkanHandles{};
  try {
    runtime::Module::load(bytes, "module 'sparse.grove'", external);
    ADD_FAILURE() << "a CUDA module was loaded on a Vulkan device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("module 'sparse.grove' is a CUDA module; Options::external"), std::string::npos)
        << e.what();
  }
  const std::string missing = no_cuda();
  if (!missing.empty()) {
    try {
      runtime::Module::load(bytes, "module 'sparse.grove'");
      ADD_FAILURE() << "a CUDA module was loaded without a driver";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), missing);
    }
    GTEST_SKIP() << "the module was made and refused as it should be; running it needs CUDA: " << missing;
  }
  runtime::Module m = runtime::Module::load(bytes, "module 'sparse.grove'");
  EXPECT_NE(m.device_name().find("CUDA, sm_"), std::string::npos) << m.device_name();
  try {
    m.vulkan();
    ADD_FAILURE() << "a CUDA module gave Vulkan handles";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not on a Vulkan device"), std::string::npos) << e.what();
  }
  runtime::Tree root = m.tree("root");
  m.launch("fill", {20});  // x[5k] = k / 2 for k < 20
  m.launch("sum", {});
  m.sync();
  EXPECT_EQ(root.read<float>("total", {}), 95.0f);  // (0 + ... + 19) / 2
  EXPECT_EQ(root.read<float>("x", {45}), 4.5f);
}

// A Program on CUDA saves the code it runs: its Config::cuda_sm (or its
// GPU's target), loaded and run by the runtime on the same GPU.
TEST(CudaAot, AProgramOnCudaSavesTheCodeItRuns) {
  if (const std::string missing = no_cuda(); !missing.empty()) GTEST_SKIP() << "no CUDA: " << missing;
  Config c;
  c.arch = Arch::Cuda;
  c.cuda_sm = 80;
  Program prog(c);
  Field x = prog.field(i32, "x", {64});
  Kernel fill = prog.kernel("fill", [&] { for_range(0, 64, [&](Expr k) { x(k) = k * k; }); });
  fill();
  aot::Module m(prog, Arch::Cuda);
  m.add_kernel("fill", fill);
  const std::vector<uint8_t> bytes = m.bytes();
  for (const rt::KernelPlan& k : rt::aot::read_module(bytes, "module").kernels)
    EXPECT_EQ(k.ptx().target, "nvptx64-nvidia-cuda, sm_80") << k.name;
  runtime::Module mod = runtime::Module::load(bytes, "module");
  mod.launch("fill", {});
  EXPECT_EQ(mod.tree("root").to_vector<int32_t>("x"), x.to_vector<int32_t>());
  EXPECT_EQ(mod.tree("root").read<int32_t>("x", {9}), 81);
}

// ---- the disk cache: plans with the driver's binary ----

// A second Program finds the kernel in the cache with the binary the
// driver made for this GPU, and loads it compiling nothing; a binary made
// for another driver is compiled again and the kernel still runs right.
TEST(CudaCache, ASecondProgramLoadsTheDriversBinaryAndCompilesNothing) {
  if (const std::string missing = no_cuda(); !missing.empty()) GTEST_SKIP() << "no CUDA: " << missing;
  const grove::testing::ScratchDir dir("grove_cuda_cache");
  Config c;
  c.arch = Arch::Cuda;
  c.cache_dir = dir.path().string();
  struct Squares {
    Field x;
    Kernel fill;
    explicit Squares(Program& prog) {
      x = prog.field(i32, "x", {256});
      fill = prog.kernel("fill", [this] { for_range(0, 256, [&](Expr k) { x(k) = k * k - 7; }); });
    }
    void run_and_check() {
      x.fill(0);
      fill();
      std::vector<int32_t> want(256);
      for (int k = 0; k < 256; ++k) want[static_cast<size_t>(k)] = k * k - 7;
      EXPECT_EQ(x.to_vector<int32_t>(), want);
    }
  };
  std::vector<uint8_t> first_plan;
  {
    Program a(c);
    Squares s(a);
    s.run_and_check();
    EXPECT_EQ(detail::cuda_ptx_compiles(a), 1);
    first_plan = detail::kernel_plan_bytes(a, "fill");
    const rt::KernelPlan p = rt::deserialize_plan(first_plan);
    EXPECT_FALSE(p.ptx().binary.empty());
    EXPECT_EQ(p.ptx().binary_target.rfind("sm_", 0), 0u) << p.ptx().binary_target;
  }
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) entries += e.path().extension() == ".grove-cuda";
  EXPECT_EQ(entries, 1u);
  Program b(c);
  Squares s(b);
  s.run_and_check();
  EXPECT_EQ(detail::cuda_ptx_compiles(b), 0);  // neither LLVM (the plan came whole) nor the driver's compiler
  EXPECT_EQ(detail::kernel_plan_bytes(b, "fill"), first_plan);
  // A binary made for another driver is not loaded: the PTX is compiled again.
  // (A damaged entry never gets this far: the cache's checksum refuses it.)
  rt::KernelPlan other = rt::deserialize_plan(first_plan);
  other.ptx().binary_target = "sm_75, driver 1000";
  detail::load_kernel_plan(b, "fill", rt::serialize(other));
  s.run_and_check();
  EXPECT_EQ(detail::cuda_ptx_compiles(b), 1);
}

// ---- the run side ----

// Without a driver, Arch::Cuda says so and Arch::Auto takes another
// backend; with one, a CUDA Program opens the device the runtime lists.
TEST(CudaRuntime, ArchCudaRunsWhereThereIsADriverAndSaysWhyNotElsewhere) {
  std::string missing;
  std::vector<rt::cuda::DeviceInfo> devices;
  try {
    devices = rt::cuda::enumerate_devices();
  } catch (const Error& e) {
    missing = e.what();
  }
  Config c;
  c.arch = Arch::Cuda;
  if (!missing.empty()) {
    EXPECT_TRUE(missing.find("no CUDA driver was found") != std::string::npos ||
                missing.find("no CUDA device") != std::string::npos)
        << missing;
    try {
      Program p(c);
      ADD_FAILURE() << "Arch::Cuda started without a driver";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), missing);
    }
    Program automatic;
    EXPECT_NE(automatic.arch(), Arch::Cuda);
    return;
  }
  ASSERT_FALSE(devices.empty());
  Program p(c);
  EXPECT_EQ(p.arch(), Arch::Cuda);
  EXPECT_NE(p.device_name().find(devices.front().name), std::string::npos) << p.device_name();
  c.cuda_device = "no such gpu";
  try {
    Program named(c);
    ADD_FAILURE() << "a device that does not exist was opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Config::cuda_device"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace grove::cuda
