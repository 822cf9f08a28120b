// tests/spirv/codegen_test.cpp — the SPIR-V code generator on lowered kernels
// written as IR text: every module passes the validator, capabilities appear
// only where a kernel needs them, and the layout (entry points, LocalSize,
// bindings, push constants) is what codegen.h documents. Running the code is
// tests/vulkan's job.
#include "spirv/codegen.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/parser.h"
#include "spirv/validate.h"

namespace grove::spirv {
namespace {

std::string text(std::string_view s) {
  if (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return std::string(s);
}

DeviceFeatures desktop() {
  DeviceFeatures f;
  f.shader_int64 = f.shader_float64 = f.atomic_int64 = f.atomic_float32_add = true;
  return f;
}

KernelModules generate(std::string_view module, DeviceFeatures features, uint32_t loop_limit = 0) {
  ir::ParsedModule m = ir::parse_module(text(module), "test");
  EXPECT_EQ(m.kernels.size(), 1u);
  ir::SNodeForest forest;
  CodegenOptions options;
  options.features = features;
  options.validate = true;
  options.max_loop_iterations = loop_limit;
  return generate_kernel(*m.kernels.front(), forest, options);
}

bool has(const TaskModule& t, std::string_view needle) { return disassemble(t.words).find(needle) != std::string::npos; }

// Narrow integers, f16 storage, u1, control flow, print and assert: 32-bit
// words only, so Shader is the only capability.
const char* kNarrow = R"(
kernel @narrow(a: i8, h: f32) stage lowered {
  task serial $-1 "serial" {
    %0 = arg i8 0
    %1 = const i8 100
    %2 = binary add i8 %0 %1
    %3 = binary mul i8 %2 %2
    %4 = binary div i8 %3 %0
    %5 = binary mod i8 %3 %0
    %6 = binary pow i8 %4 %5
    %7 = binary shl i8 %6 %0
    %8 = cast u16 %7
    %9 = unary bit_not u16 %8
    %10 = const u32 4
    tree_store @t1[%10] %9 as u16
    %11 = arg f32 1
    tree_store @t1[%10] %11 as f16
    %12 = tree_load f32 @t1[%10] as f16
    %13 = binary cmp_lt u1 %12 %11
    %14 = alloca i32
    while {
      %15 = local_load i32 %14
      %16 = const i32 10
      %17 = binary cmp_ge u1 %15 %16
      if %17 {
        break
      } else {
      }
      %18 = const i32 1
      %19 = binary add i32 %15 %18
      local_store %14 %19
      if %13 {
        continue
      } else {
      }
    }
    print "{} {}\n" %12 %13
    assert %13 "h was {}" %11
  }
}
)";

TEST(Codegen, NarrowTypesNeedOnlyShader) {
  KernelModules k = generate(kNarrow, DeviceFeatures{});
  ASSERT_EQ(k.tasks.size(), 1u);
  const TaskModule& t = k.tasks[0];
  EXPECT_EQ(t.entry_point, "narrow.t0.serial");
  EXPECT_EQ(t.local_size, 1u);
  EXPECT_FALSE(t.parallel);
  EXPECT_EQ(t.trees, (std::vector<spirv::TreeKey>{{1, -1}}));
  for (const char* cap : {"Int8", "Int16", "Int64", "Float16", "Float64", "Int64Atomics", "AtomicFloat32AddEXT"})
    EXPECT_FALSE(has(t, std::string("OpCapability ") + cap)) << cap;
  EXPECT_TRUE(has(t, "OpCapability Shader"));
  EXPECT_TRUE(has(t, "OpName %context \"context\""));
  EXPECT_TRUE(has(t, "OpName %tree1 \"tree1\""));
  EXPECT_TRUE(has(t, "OpDecorate %args Block") || has(t, "PushConstant"));
  EXPECT_EQ(k.arg_offsets, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(k.arg_words, 2u);
  ASSERT_EQ(k.messages.size(), 2u);
  EXPECT_FALSE(k.messages[0].is_assert);
  EXPECT_EQ(k.messages[0].types, (std::vector<DataType>{f32, u1}));
  EXPECT_TRUE(k.messages[1].is_assert);
}

const char* kWide = R"(
kernel @wide(a: i64, d: f64) stage lowered {
  task range_for $-1 "range_for" {
    %0 = const i32 0
    %1 = const i32 1000
    %2 = range_for %0 %1 {
      %3 = loop_index i32 %2 0
      %4 = cast u32 %3
      %5 = const u32 2
      %6 = binary mul u32 %4 %5
      %7 = arg i64 0
      %8 = tree_atomic add i64 @t1[%6] %7
      %9 = arg f64 1
      %10 = tree_atomic max f64 @t2[%6] %9
      %11 = tree_cas i64 @t1[%6] %8 %7
      %12 = const f32 1.5
      %13 = tree_atomic add f32 @t2[%4] %12
      %14 = tree_atomic min f32 @t2[%4] %12
      tree_store @t1[%6] %11 as i64
    }
  }
}
)";

TEST(Codegen, WideTypesAndAtomicsAddTheirCapabilities) {
  KernelModules k = generate(kWide, desktop());
  ASSERT_EQ(k.tasks.size(), 1u);
  const TaskModule& t = k.tasks[0];
  EXPECT_TRUE(t.parallel);
  EXPECT_EQ(t.local_size, 128u);
  EXPECT_EQ(t.static_iterations, 1000);
  EXPECT_EQ(t.trees, (std::vector<spirv::TreeKey>{{1, -1}, {2, -1}}));
  EXPECT_TRUE(has(t, "OpCapability Int64"));
  EXPECT_TRUE(has(t, "OpCapability Float64"));
  EXPECT_TRUE(has(t, "OpCapability Int64Atomics"));
  EXPECT_TRUE(has(t, "OpCapability AtomicFloat32AddEXT"));
  EXPECT_TRUE(has(t, "SPV_EXT_shader_atomic_float_add"));
  EXPECT_TRUE(has(t, "LocalSize 128 1 1"));
  EXPECT_EQ(k.arg_offsets, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(k.arg_words, 4u);
}

// Float controls: the modes are declared where the device offers them (the
// validator checks each module); a device
// without DenormPreserve gets no such mode (Vulkan may then flush f32
// denormals, docs/ir.md), and the plan says which the module needs.
TEST(Codegen, FloatControlsAreDeclaredWhereTheDeviceHasThem) {
  DeviceFeatures f = desktop();
  f.signed_zero_inf_nan_preserve = f.denorm_preserve = true;
  KernelModules both = generate(kWide, f);
  EXPECT_TRUE(has(both.tasks[0], "OpCapability DenormPreserve"));
  EXPECT_TRUE(has(both.tasks[0], "DenormPreserve 32"));
  EXPECT_TRUE(has(both.tasks[0], "SignedZeroInfNanPreserve 32"));
  EXPECT_TRUE(both.tasks[0].denorm_preserve);
  EXPECT_TRUE(both.tasks[0].signed_zero_inf_nan_preserve);
  f.denorm_preserve = false;
  KernelModules none = generate(kWide, f);
  EXPECT_FALSE(has(none.tasks[0], "DenormPreserve"));
  EXPECT_FALSE(none.tasks[0].denorm_preserve);
}

TEST(Codegen, FloatAtomicsWithoutTheExtensionAreCompareAndSwapLoops) {
  DeviceFeatures f = desktop();
  f.atomic_float32_add = false;
  KernelModules k = generate(kWide, f);
  EXPECT_FALSE(has(k.tasks[0], "AtomicFloat32AddEXT"));
  EXPECT_TRUE(has(k.tasks[0], "OpAtomicCompareExchange"));
}

TEST(Codegen, MissingFeaturesAreUserErrorsNamingTheKernel) {
  auto error = [](DeviceFeatures f) {
    try {
      generate(kWide, f);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  DeviceFeatures f = desktop();
  f.shader_int64 = false;
  EXPECT_EQ(error(f), "kernel 'wide' uses i64 values, which this Vulkan device does not support (shaderInt64)");
  f = desktop();
  f.shader_float64 = false;
  EXPECT_EQ(error(f), "kernel 'wide' uses f64 values, which this Vulkan device does not support (shaderFloat64)");
  f = desktop();
  f.atomic_int64 = false;
  EXPECT_EQ(error(f), "kernel 'wide' uses 64-bit atomics (atomic add on i64), which this Vulkan device does not "
                      "support (shaderBufferInt64Atomics)");
}

TEST(Codegen, LoopLimitCountsAndReports) {
  KernelModules k = generate(kNarrow, DeviceFeatures{}, 12345);
  EXPECT_TRUE(has(k.tasks[0], "uint_12345"));
  bool found = false;
  for (const Message& m : k.messages) found |= m.is_assert && m.format.find("12345 loop iterations") != std::string::npos;
  EXPECT_TRUE(found);
  KernelModules plain = generate(kNarrow, DeviceFeatures{});
  EXPECT_FALSE(has(plain.tasks[0], "uint_12345"));
}

// A sum marked `accumulate` (ir::mark_reductions) is summed in registers,
// 16 iterations per invocation, and added once per subgroup; one marked
// `reduce` is added once per subgroup in each iteration; an unmarked add
// stays one atomic per iteration, so the task needs no loop.
TEST(Codegen, MarkedReductionsAreSummedBeforeTheAtomic) {
  ir::SNodeForest forest;
  auto task_for = [&](const std::string& mark) {
    const std::string src = R"(
kernel @count() stage lowered {
  task range_for $-1 "range_for" {
    %0 = const i32 0
    %1 = const i32 100000
    %2 = range_for %0 %1 {
      %3 = const u32 12
      %4 = const i32 1
      %5 = tree_atomic )" + mark + R"(add i32 @t0[%3] %4
    }
  }
}
)";
    ir::ParsedModule m = ir::parse_module(src, "test");
    CodegenOptions options;
    options.features = desktop();
    options.features.subgroup_arithmetic = true;
    options.validate = true;
    KernelModules k = generate_kernel(*m.kernels.front(), forest, options);
    EXPECT_EQ(k.tasks.size(), 1u);
    return k.tasks.front();
  };
  const TaskModule accumulate = task_for("accumulate ");
  EXPECT_EQ(accumulate.iterations_per_invocation, 16u);
  EXPECT_TRUE(has(accumulate, "OpGroupNonUniformIAdd"));
  EXPECT_TRUE(has(accumulate, "OpLoopMerge"));
  const TaskModule reduce = task_for("reduce ");
  EXPECT_EQ(reduce.iterations_per_invocation, 1u);
  EXPECT_TRUE(has(reduce, "OpGroupNonUniformIAdd"));
  const TaskModule plain = task_for("");
  EXPECT_EQ(plain.iterations_per_invocation, 1u);
  EXPECT_FALSE(has(plain, "OpLoopMerge"));
  EXPECT_FALSE(has(plain, "OpGroupNonUniformIAdd"));
  EXPECT_TRUE(has(plain, "OpAtomicIAdd"));
}

// subgroup_first and subgroup_elect (the sparse runtime's activations of
// one slot by a subgroup) are the device's non-uniform operations where it
// has subgroup operations, and need the plan's subgroup feature; without
// them each invocation is a subgroup of its own: the operand, and true.
TEST(Codegen, SubgroupOperationsWhereTheDeviceHasThem) {
  ir::SNodeForest forest;
  const std::string src = R"(
kernel @lead() stage lowered {
  task range_for $-1 "range_for" {
    %0 = const i32 0
    %1 = const i32 1000
    %2 = range_for %0 %1 {
      %3 = loop_index i32 %2 0
      %4 = cast u32 %3
      %5 = const u32 4
      %6 = binary div u32 %4 %5
      %7 = subgroup_first u32 %6
      %8 = subgroup_elect
      if %8 {
        tree_store @t0[%7] %4 as u32
      } else {
      }
    }
  }
}
)";
  ir::ParsedModule m = ir::parse_module(src, "test");
  for (const bool subgroups : {true, false}) {
    CodegenOptions options;
    options.features = desktop();
    options.features.subgroup_arithmetic = subgroups;
    options.validate = true;
    KernelModules k = generate_kernel(*m.kernels.front(), forest, options);
    ASSERT_EQ(k.tasks.size(), 1u);
    EXPECT_EQ(has(k.tasks[0], "OpGroupNonUniformBroadcastFirst"), subgroups);
    EXPECT_EQ(has(k.tasks[0], "OpGroupNonUniformElect"), subgroups);
    EXPECT_EQ(has(k.tasks[0], "GroupNonUniformBallot"), subgroups);
    EXPECT_EQ(k.tasks[0].subgroup_operations, subgroups) << "the plan asks the device for subgroup operations";
  }
}

// A loop whose bound is read from a tree gets a second entry point that
// writes the group counts (for an indirect dispatch), and runs one
// iteration per invocation over a grid in x and y; a loop that stores
// before it, or whose bounds are constants, gets none.
TEST(Codegen, BoundsReadFromATreeAreCountedByASecondEntryPoint) {
  ir::SNodeForest forest;
  auto task_for = [&](const std::string& before, const std::string& body) {
    const std::string src = R"(
kernel @k() stage lowered {
  task range_for $-1 "range_for" {
    %0 = const i32 0
    %1 = const u32 4
    %2 = tree_load i32 @t0[%1]
)" + before + R"(
    %3 = range_for %0 %2 {
      %4 = loop_index i32 %3 0
      %5 = cast u32 %4
      tree_store @t0[%5] %4 as i32
)" + body + R"(
    }
  }
}
)";
    ir::ParsedModule m = ir::parse_module(src, "test");
    CodegenOptions options;
    options.validate = true;
    KernelModules k = generate_kernel(*m.kernels.front(), forest, options);
    EXPECT_EQ(k.tasks.size(), 1u);
    return k.tasks.front();
  };
  const TaskModule flat = task_for("", "");
  EXPECT_EQ(flat.count_entry_point, "k.t0.range_for.count");
  EXPECT_TRUE(has(flat, "OpEntryPoint GLCompute %k_t0_range_for_count \"k.t0.range_for.count\""));
  EXPECT_TRUE(has(flat, "OpExecutionMode %k_t0_range_for_count LocalSize 1 1 1"));
  EXPECT_FALSE(has(flat, "OpLoopMerge"));  // one iteration per invocation
  const TaskModule with_continue = task_for("", "      continue\n");
  EXPECT_EQ(with_continue.count_entry_point, "k.t0.range_for.count");
  EXPECT_TRUE(has(with_continue, "OpLoopMerge"));  // the grid-stride loop
  const TaskModule after_store = task_for("    tree_store @t0[%1] %0 as i32\n", "");
  EXPECT_EQ(after_store.count_entry_point, "");
  EXPECT_TRUE(has(after_store, "OpLoopMerge"));
}

// Grid loops (docs/ir.md) spread over LocalSize (x, y, z), the innermost
// on x, with no loop and no division: a constant count that fits 65535
// groups reads only its invocation's id; one from an argument adds the
// dispatch's base, a push-constant word after the message base. A
// `continue` ends the point (a loop that runs once); a loop that sums in
// registers sums a point per invocation and adds once after it.
TEST(Codegen, GridLoopsSpreadOverTheLaunchWithNoDivision) {
  auto task_of = [](const std::string& bound, const std::string& body) {
    const std::string src = R"(
kernel @k(n: i32) stage lowered {
  task range_for $-1 "range_for" {
    %0 = const i32 0
    %1 = const i32 4
    %2 = )" + bound + R"(
    %3 = range_for %0 %1 {
      %4 = loop_index i32 %3 0
      %5 = range_for grid %0 %1 {
        %6 = loop_index i32 %5 0
        %7 = range_for grid %0 %2 {
          %8 = loop_index i32 %7 0
          %9 = binary add i32 %4 %6
          %10 = binary add i32 %9 %8
          %11 = cast u32 %10
)" + body + R"(
        }
      }
    }
  }
}
)";
    ir::ParsedModule m = ir::parse_module(src, "test");
    ir::SNodeForest forest;
    CodegenOptions options;
    options.validate = true;
    options.local_size = 256;
    KernelModules k = generate_kernel(*m.kernels.front(), forest, options);
    EXPECT_EQ(k.tasks.size(), 1u);
    return k.tasks.front();
  };
  const TaskModule constant = task_of("const i32 16", "          tree_store @t0[%11] %10 as i32");
  EXPECT_TRUE(has(constant, "LocalSize 16 4 4")) << disassemble(constant.words);
  ASSERT_EQ(constant.grid.size(), 2u);
  EXPECT_EQ(constant.local_size, 4u);
  EXPECT_EQ(constant.grid[1].static_iterations, 16);
  for (const char* op : {"OpUDiv", "OpUMod", "OpSDiv", "OpLoopMerge", "PushConstant"})
    EXPECT_FALSE(has(constant, op)) << op << "\n" << disassemble(constant.words);
  const TaskModule from_arg = task_of("arg i32 0", "          tree_store @t0[%11] %10 as i32");
  EXPECT_TRUE(has(from_arg, "LocalSize 64 4 1")) << disassemble(from_arg.words);
  ASSERT_EQ(from_arg.grid.size(), 2u);
  EXPECT_EQ(from_arg.grid[1].static_iterations, -1);
  EXPECT_TRUE(from_arg.grid[1].end.known());
  EXPECT_TRUE(has(from_arg, "PushConstant"));
  EXPECT_FALSE(has(from_arg, "OpUDiv"));
  const TaskModule continues = task_of("const i32 16", R"(          %12 = const i32 3
          %13 = binary cmp_eq u1 %8 %12
          if %13 {
            continue
          } else {
          }
          tree_store @t0[%11] %10 as i32)");
  EXPECT_EQ(continues.grid.size(), 2u);
  EXPECT_TRUE(has(continues, "OpLoopMerge"));  // the point's one-pass loop
  const TaskModule sums = task_of("const i32 16", R"(          %12 = const u32 0
          %13 = tree_atomic accumulate add i32 @t0[%12] %10)");
  EXPECT_EQ(sums.grid.size(), 2u);
  EXPECT_EQ(sums.iterations_per_invocation, 1u);
  EXPECT_TRUE(has(sums, "LocalSize 16 4 4"));
  EXPECT_FALSE(has(sums, "OpLoopMerge"));
  EXPECT_FALSE(sums.subgroup_operations);  // the device has no subgroup arithmetic here
}

TEST(Codegen, OnlyLoweredKernels) {
  ir::ParsedModule m = ir::parse_module(text(R"(
kernel @k() stage typed {
}
)"), "test");
  ir::SNodeForest forest;
  EXPECT_THROW(generate_kernel(*m.kernels.front(), forest, CodegenOptions{}), InternalError);
}

}  // namespace
}  // namespace grove::spirv
