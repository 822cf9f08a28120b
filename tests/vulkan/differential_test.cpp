// tests/vulkan/differential_test.cpp — what only the Vulkan backend has to
// compare with the interpreter: float atomics on a device without float
// atomic support (compare-and-swap loops). Every backend's differential
// suite is tests/api/differential_test.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "../support/differential.h"
#include "grove/grove.h"
#include "program/test_hooks.h"

namespace grove {
namespace {

bool vulkan_available() {
  static const bool ok = [] {
    bool built = false;
    for (Arch a : compiled_backends()) built |= a == Arch::Vulkan;
    if (!built) return false;
    try {
      Config c;
      c.arch = Arch::Vulkan;
      Program probe(c);
      return true;
    } catch (const Error&) {
      return false;
    }
  }();
  return ok;
}

class VulkanDifferential : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!vulkan_available()) GTEST_SKIP() << "no Vulkan device";
    setenv("GROVE_VALIDATE_SPIRV", "1", 1);
  }
};

TEST_F(VulkanDifferential, FloatAtomicsWithoutFloatAtomicSupport) {
  detail::VulkanTestProfile p;
  p.no_float_atomics = true;
  detail::set_vulkan_test_profile(p);
  testing::Build build = [&](Program& prog) {
    Field s = prog.field(f32, "s", {}), d = prog.field(f32, "d", {}), lo = prog.field(f32, "lo", {}),
          hi = prog.field(f32, "hi", {}), x = prog.field(f32, "x", {});
    Kernel kern = prog.kernel("fatomics", [&] {
      for_range(0, 4096, [&](Expr i) {
        Expr v = cast(f32, i % 64) * 0.25f;
        atomic_add(s(), v);
        atomic_sub(d(), v);
        atomic_min(lo(), v - 3.0f);
        atomic_max(hi(), v);
      });
      x() = 1.5f;
    });
    kern();
    return std::vector<Field>{s, d, lo, hi, x};
  };
  Config c;
  c.arch = Arch::Vulkan;
  testing::compare_with_interpreter(c, build, {"add", "sub", "min", "max", "x"}, std::vector<DataType>(5, f32));
  detail::set_vulkan_test_profile({});
}

}  // namespace
}  // namespace grove
