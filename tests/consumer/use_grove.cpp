// use_grove.cpp — a kernel compiled and run through an installed Grove, on
// every backend it was built with; exits non-zero on a wrong value.
#include <cstdio>
#include <vector>

#include <grove/grove.h>

int main() {
  using namespace grove;
  int failures = 0;
  for (Arch arch : compiled_backends()) {
    try {
      Config config;
      config.arch = arch;
      Program prog(config);
      Field x = prog.field(i32, "x", {16});
      Kernel squares = prog.kernel("squares", [&] { for_range(0, 16, [&](Expr n) { x(n) = n * n; }); });
      squares();
      const std::vector<int> got = x.to_vector<int>();
      for (int n = 0; n < 16; ++n) failures += got[static_cast<size_t>(n)] != n * n;
      std::printf("%s: x[15] = %d\n", std::string(arch_name(arch)).c_str(), got[15]);
    } catch (const Error& e) {
      // A backend whose device is missing here (no Vulkan driver) is not a
      // failure of the package.
      std::printf("%s: not run: %s\n", std::string(arch_name(arch)).c_str(), e.what());
    }
  }
  return failures == 0 ? 0 : 1;
}
