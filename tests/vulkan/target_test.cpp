// tests/vulkan/target_test.cpp — Vulkan target descriptions
// (runtime/vulkan/target.h): their text, SPIR-V made for one with no
// device (byte for byte what the device it describes makes), and devices
// that refuse code for a target they do not cover.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../api/backend_fixture.h"
#include "grove/aot.h"
#include "grove/grove.h"
#include "grove/runtime.h"
#include "program/test_hooks.h"
#include "runtime/core/plan.h"
#include "runtime/vulkan/device.h"
#include "runtime/vulkan/target.h"

namespace grove {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using grove::testing::error_of;
using grove::testing::vulkan_unavailable_reason;

TEST(VulkanTarget, DescriptionsReadBackAsTheyAreWritten) {
  // The presets, spelled out by hand.
  EXPECT_EQ(vk::describe(vk::parse_target("vulkan1.1", "t")), "local_size=128,push_constants=128");
  EXPECT_EQ(vk::describe(vk::parse_target("desktop", "t")),
            "shader_int64,shader_float64,atomic_int64,subgroup_arithmetic,signed_zero_inf_nan_preserve,"
            "local_size=256,push_constants=128");
  EXPECT_EQ(vk::describe(vk::parse_target("lavapipe", "t")),
            "shader_int64,shader_float64,atomic_int64,atomic_float32_add,subgroup_arithmetic,"
            "signed_zero_inf_nan_preserve,local_size=256,push_constants=128,llvmpipe");
  // Items add to a preset, in any order, spaces around them allowed.
  const vk::Target t = vk::parse_target("vulkan1.1, shader_int64,local_size=64 ,push_constants=256", "t");
  EXPECT_TRUE(t.features.shader_int64);
  EXPECT_FALSE(t.features.shader_float64);
  EXPECT_EQ(t.local_size, 64u);
  EXPECT_EQ(t.push_constants, 256u);
  EXPECT_FALSE(t.llvmpipe);
  for (const char* text : {"vulkan1.1", "desktop", "lavapipe", "shader_float64,local_size=32,llvmpipe"}) {
    const vk::Target once = vk::parse_target(text, "t");
    EXPECT_TRUE(vk::parse_target(vk::describe(once), "t") == once) << text;
  }
}

TEST(VulkanTarget, AWrongDescriptionNamesTheItemAndTheOnesThereAre) {
  EXPECT_THAT(error_of([] { vk::parse_target("vulkan1.1,int64", "Config::vulkan_target"); }),
              AllOf(HasSubstr("Config::vulkan_target"), HasSubstr("no Vulkan target item 'int64'"),
                    HasSubstr("shader_int64"), HasSubstr("desktop")));
  EXPECT_THAT(error_of([] { vk::parse_target("local_size=0", "Config::vulkan_target"); }),
              HasSubstr("'local_size=0' takes a number from 1 to 1024"));
  EXPECT_THAT(error_of([] { vk::parse_target("push_constants=64", "x"); }),
              HasSubstr("'push_constants=64' takes a number from 128 to 4096"));
  EXPECT_THAT(error_of([] { vk::parse_target("", "Config::vulkan_target"); }),
              HasSubstr("Config::vulkan_target is empty"));
  // Through the Program: a target that cannot be read is refused when the
  // Program is made, whatever its arch.
  EXPECT_THAT(error_of([] { Program p({.arch = Arch::Interp, .vulkan_target = "desktop,subgroups"}); }),
              HasSubstr("Config::vulkan_target: no Vulkan target item 'subgroups'"));
}

// A kernel that uses what a target may lack: 64-bit values and atomics.
Kernel wide_kernel(Program& prog, Field& sum, Field& x) {
  return prog.kernel("wide", [&] {
    for_range(0, 100, [&](Expr i) {
      x(i) = cast(DataType::i64, i) * Expr::constant(DataType::i64, 3);
      atomic_add(sum(), cast(DataType::i64, i));
    });
  });
}

TEST(VulkanTarget, AKernelNeedingWhatTheTargetLacksNamesTheTarget) {
  Program prog({.arch = Arch::Interp, .vulkan_target = "vulkan1.1"});
  Field sum = prog.field(DataType::i64, "sum", {});
  Field x = prog.field(DataType::i64, "x", {100});
  Kernel k = wide_kernel(prog, sum, x);
  aot::Module m(prog, Arch::Vulkan);
  EXPECT_EQ(error_of([&] { m.add_kernel("wide", k); }),
            "kernel 'wide' uses i64 values, which the Vulkan target 'vulkan1.1' does not support (shaderInt64)");
  // Without a target, a Program on another arch cannot make Vulkan code.
  Program plain({.arch = Arch::Interp});
  EXPECT_THAT(error_of([&] { aot::Module none(plain, Arch::Vulkan); }), HasSubstr("needs Config::vulkan_target"));
}

class VulkanTargetOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = grove::testing::vulkan_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
  static bool on_llvmpipe(Program& prog) {
    return detail::vulkan_device(prog)->info().name.find("llvmpipe") != std::string::npos;
  }
};

// What a module holds: a pointer field written under a condition, a
// struct-for summing it into one cell, a print (32-bit values only, so that
// any device runs it).
std::vector<uint8_t> module_bytes(Program& prog) {
  Field v = prog.field(DataType::f32, "v");
  SNode& blocks = prog.root().pointer(axes({0}), {16});
  blocks.dense(axes({0}), {8}).place({v});
  Field total = prog.field(DataType::f32, "total", {});
  Kernel fill = prog.kernel("fill", [&] {
    for_range(0, 128, [&](Expr i) { if_(i % 3 == 0, [&] { v(i) = cast(DataType::f32, i) * 0.5f; }); });
  });
  Kernel sum = prog.kernel("sum", [&] {
    for_each(v, [&](Expr i) { atomic_add(total(), v(i)); });
    for_range(0, 1, [&](Expr) { print("total {}", total()); });
  });
  aot::Module m(prog, Arch::Vulkan);
  m.add_kernel("fill", fill);
  m.add_kernel("sum", sum);
  return m.bytes();
}

TEST_F(VulkanTargetOnDevice, AModuleMadeWithNoDeviceIsTheModuleTheDeviceMakes) {
  Program on_device({.arch = Arch::Vulkan});
  const std::string described = vk::describe(vk::target_of(detail::vulkan_device(on_device)->info()));
  const std::vector<uint8_t> a = module_bytes(on_device);
  Program nowhere({.arch = Arch::Interp, .vulkan_target = described});
  const std::vector<uint8_t> b = module_bytes(nowhere);
  EXPECT_EQ(a.size(), b.size());
  EXPECT_TRUE(a == b) << "the module for '" << described << "' differs from the one " << on_device.device_name()
                      << " made";
}

TEST_F(VulkanTargetOnDevice, AProgramOnVulkanCompilesForItsTargetAndTheDeviceRunsIt) {
  // What the device offers, with fewer invocations per group than it prefers.
  Program probe({.arch = Arch::Vulkan});
  const std::string target = vk::describe(vk::target_of(detail::vulkan_device(probe)->info())) + ",local_size=64";
  Program prog({.arch = Arch::Vulkan, .vulkan_target = target});
  Field sum = prog.field(DataType::i32, "sum", {});
  Field x = prog.field(DataType::i32, "x", {100});
  Kernel k = prog.kernel("narrow", [&] {
    for_range(0, 100, [&](Expr i) {
      x(i) = i * 3;
      atomic_add(sum(), i);
    });
  });
  k();
  EXPECT_EQ(sum.read<int32_t>({}), 4950);  // 0 + 1 + ... + 99
  EXPECT_EQ(x.read<int32_t>({99}), 297);
  const rt::KernelPlan plan = rt::deserialize_plan(detail::kernel_plan_bytes(prog, "narrow"));
  EXPECT_EQ(plan.spirv().target, vk::describe(vk::parse_target(target, "t")));
  for (const rt::TaskPlan& task : plan.tasks) {
    if (task.parallel) {
      EXPECT_EQ(task.local_size, 64u);
    }
  }
}

TEST_F(VulkanTargetOnDevice, ADeviceRefusesATargetItDoesNotCover) {
  Program probe({.arch = Arch::Vulkan});
  if (!on_llvmpipe(probe)) GTEST_SKIP() << "this checks llvmpipe's workarounds; the device is " << probe.device_name();
  // A Program asked to compile for a target without llvmpipe's workarounds.
  EXPECT_THAT(error_of([] { Program p({.arch = Arch::Vulkan, .vulkan_target = "desktop"}); }),
              AllOf(HasSubstr("Config::vulkan_target is 'desktop'"), HasSubstr("llvmpipe"),
                    HasSubstr("make it for the target 'lavapipe'")));
  // A device of Vulkan's least invocations per group, and a target of more.
  detail::VulkanTestProfile small;
  small.max_workgroup_invocations = 128;
  detail::set_vulkan_test_profile(small);
  EXPECT_THAT(error_of([] { Program p({.arch = Arch::Vulkan, .vulkan_target = "lavapipe"}); }),
              HasSubstr("runs at most 128 invocations per group, not local_size=256"));
  detail::set_vulkan_test_profile({});
  // A module made for one, loaded by grove_runtime on this device.
  Program nowhere({.arch = Arch::Interp, .vulkan_target = "desktop"});
  const std::vector<uint8_t> bytes = module_bytes(nowhere);
  EXPECT_THAT(error_of([&] { runtime::Module::load(bytes, "desktop.grove"); }),
              AllOf(HasSubstr("was made for the Vulkan target"), HasSubstr("is Mesa's llvmpipe")));
  // The same module for the lavapipe target loads and runs.
  Program lavapipe({.arch = Arch::Interp, .vulkan_target = "lavapipe"});
  runtime::Module m = runtime::Module::load(module_bytes(lavapipe), "lavapipe.grove");
  EXPECT_NO_THROW(m.launch("fill", std::vector<runtime::Arg>{}));
  EXPECT_NO_THROW(m.sync());
}

}  // namespace
}  // namespace grove
