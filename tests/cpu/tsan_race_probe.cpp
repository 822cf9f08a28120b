// tests/cpu/tsan_race_probe.cpp — a kernel with a data race on purpose, for
// ThreadSanitizer builds (make tsan): every iteration of a parallel loop
// reads and writes the same cell without an atomic. The test passes when
// ThreadSanitizer reports the race inside the kernel's task function,
// which shows that the CPU backend's generated code is instrumented (were
// it not, the tsan job would check only Grove's own C++).
#include <cstdio>

#include <grove/grove.h>

int main() {
  using namespace grove;
  try {
    Config c;
    c.arch = Arch::Cpu;
    c.cpu_threads = 2;
    c.cache_dir = "off";
    Program prog(c);
    Field x = prog.field(i32, "x", {1});
    Kernel racy = prog.kernel("racy_increment", [&] {
      for_range(0, 1 << 16, [&](Expr) { x(0) = x(0).load() + 1; });  // not atomic
    });
    racy();
    std::printf("x = %d\n", x.read<int32_t>({0}));
  } catch (const Error& e) {
    std::fprintf(stderr, "tsan_race_probe: %s\n", e.what());
    return 1;
  }
  return 0;
}
