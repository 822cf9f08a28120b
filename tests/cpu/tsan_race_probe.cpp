// tests/cpu/tsan_race_probe.cpp — a kernel with a data race on purpose, for
// ThreadSanitizer builds (make tsan): every iteration of a parallel loop
// reads and writes the same cell without an atomic. The test passes when
// ThreadSanitizer reports the race inside the kernel's task function,
// which shows that the CPU backend's generated code is instrumented (were
// it not, the tsan job would check only Grove's own C++). With the argument
// "quick", the loop is short enough that the kernel's first code is the
// quick tier's (Config::cpu_tiers), which must be instrumented too.
#include <cstdio>
#include <cstring>

#include <grove/grove.h>

#include "program/test_hooks.h"

int main(int argc, char** argv) {
  using namespace grove;
  const bool quick = argc > 1 && std::strcmp(argv[1], "quick") == 0;
  // (Two pieces of the loop at least, so that both threads run it.)
  const int iterations = quick ? 1 << 13 : 1 << 16;
  try {
    Config c;
    c.arch = Arch::Cpu;
    c.cpu_threads = 2;
    c.cache_dir = "off";
    Program prog(c);
    Field x = prog.field(i32, "x", {1});
    Kernel racy = prog.kernel("racy_increment", [&] {
      for_range(0, iterations, [&](Expr) { x(0) = x(0).load() + 1; });  // not atomic
    });
    racy();
    if (quick && !detail::kernel_runs_quick_code(prog, "racy_increment")) {
      std::fprintf(stderr, "tsan_race_probe: the kernel did not run the quick tier's code\n");
      return 1;
    }
    std::printf("x = %d\n", x.read<int32_t>({0}));
  } catch (const Error& e) {
    std::fprintf(stderr, "tsan_race_probe: %s\n", e.what());
    return 1;
  }
  return 0;
}
