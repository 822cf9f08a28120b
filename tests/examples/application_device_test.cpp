// A Program on the application's own Vulkan device (Config::vulkan_external):
// the device a renderer or a window made, with Grove compiling and running
// kernels there, dense and sparse, and leaving the device to its owner.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "examples/vulkan_embed/app.h"
#include "grove/grove.h"

namespace {

using namespace grove;
using vulkan_embed::App;

class ApplicationDevice : public ::testing::Test {
 protected:
  void SetUp() override { app.open(""); }
  void TearDown() override { app.close(); }
  Config config(Arch arch = Arch::Auto) const {
    Config c;
    c.arch = arch;
    c.vulkan_external = app.handles();
    return c;
  }
  App app;
};

TEST_F(ApplicationDevice, AProgramComputesOnItAndLeavesItToItsOwner) {
  for (int round = 0; round < 2; ++round) {  // a second Program on the same device
    Program prog(config());
    EXPECT_EQ(prog.arch(), Arch::Vulkan);
    EXPECT_NE(prog.device_name().find(app.name), std::string::npos) << prog.device_name();
    // Dense: a range-for; sparse: cells activated by a kernel, summed by a
    // struct-for over the active ones.
    const int n = 1000;
    Field sq = prog.field(i32, "sq", {n});
    Field y = prog.field(i32, "y");
    Field total = prog.field(i32, "total", {});
    prog.root().pointer(i, 256).dense(i, 16).place(y);  // 4096 cells in blocks of 16
    prog.kernel("square", [&] { for_range(0, n, [&](Expr k) { sq(k) = k * k + round; }); })();
    prog.kernel("scatter", [&] { for_range(0, n, [&](Expr k) { y(k * 3) = k; }); })();
    prog.kernel("sum", [&] { for_each(y, [&](Expr k) { atomic_add(total(), y(k) + 1); }); })();
    const std::vector<int32_t> got = sq.to_vector<int32_t>();
    int64_t want = 0;
    for (int k = 0; k < n; ++k) {
      ASSERT_EQ(got[static_cast<size_t>(k)], k * k + round) << k;
      want += k + 1;
    }
    // Cells 0, 3, ..., 2997 touch blocks 0..187 of 16 cells; the other
    // cells of those blocks hold 0 and count 1 each.
    const int64_t active_cells = ((3 * (n - 1)) / 16 + 1) * 16;
    EXPECT_EQ(total.to_vector<int32_t>()[0], want + (active_cells - n));
  }
  // Both Programs are gone; the device is the application's and still works.
  EXPECT_EQ(vkDeviceWaitIdle(app.device), VK_SUCCESS);
}

TEST_F(ApplicationDevice, AnotherBackendWithItIsRefused) {
  try {
    Program prog(config(Arch::Interp));
    FAIL() << "a Program on the interpreter took an application's Vulkan device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Config::vulkan_external"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("interp"), std::string::npos) << e.what();
  }
}

TEST_F(ApplicationDevice, AFeatureTheApplicationLeftOffIsNotUsed) {
  // The application enabled no 64-bit integers (lavapipe has them): Grove
  // compiles without them, and a kernel that needs them is refused with a
  // message naming the feature, not a driver crash.
  Config c = config(Arch::Vulkan);
  c.vulkan_external->shader_int64 = false;
  Program prog(c);
  Field a = prog.field(i32, "a", {8});
  prog.kernel("fill", [&] { for_range(0, 8, [&](Expr k) { a(k) = k + 1; }); })();
  EXPECT_EQ(a.to_vector<int32_t>()[7], 8);
  Field w = prog.field(i64, "w", {8});
  try {
    prog.kernel("wide", [&] { for_range(0, 8, [&](Expr k) { w(k) = cast(i64, k); }); })();
    FAIL() << "a kernel used 64-bit integers the application did not enable";
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "kernel 'wide' uses i64 values, which this Vulkan device does not support (shaderInt64)");
  }
}

}  // namespace
