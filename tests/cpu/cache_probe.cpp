// tests/cpu/cache_probe.cpp — one process of the disk-cache test
// (cache_test.cpp): runs three kernels on the CPU backend with
// Config::cache_dir = argv[1] (a sparse activation, a struct-for sum that
// prints, a debug-mode check that fails) and reports how many kernels LLVM
// compiled in this process, then what the kernels computed.
#include <cstdio>
#include <string>

#include <grove/grove.h>

#include "llvm_cpu/jit.h"

int main(int argc, char** argv) {
  using namespace grove;
  if (argc != 2) {
    std::fprintf(stderr, "usage: grove_cache_probe <cache dir>\n");
    return 2;
  }
  try {
    Config c;
    c.arch = Arch::Cpu;
    c.cache_dir = argv[1];
    c.debug = true;
    Program prog(c);
    Field x = prog.field(i32, "x");
    SNode& blocks = prog.root().pointer(ij, {16, 16});
    blocks.dense(ij, {8, 8}).place(x);
    Field total = prog.field(i64, "total", {});
    // A ring of radius 40 around (64, 64), one cell wide.
    Kernel fill = prog.kernel("fill", [&] {
      for_range(0, 128, [&](Expr i) {
        for_range(0, 128, [&](Expr j) {
          Expr d = (i - 64) * (i - 64) + (j - 64) * (j - 64);
          if_(d >= 39 * 39 && d < 40 * 40, [&] { x(i, j) = i + j; });
        });
      });
    });
    Kernel sum = prog.kernel("sum", [&] {
      for_each(x, [&](Expr i, Expr j) { atomic_add(total(), cast(i64, x(i, j))); });
      print("summed ", total());
    });
    Kernel outside = prog.kernel("outside", {arg(i32, "n")}, [&](Args a) { x(a[0], 0) = 1; });
    prog.set_print_sink([](std::string_view text) { std::printf("printed: %.*s", static_cast<int>(text.size()), text.data()); });
    fill();
    sum();
    std::string error = "none";
    try {
      outside(500);
    } catch (const Error& e) {
      error = e.what();
    }
    std::printf("compilations %lld\n", static_cast<long long>(llvm_backend::Jit::compilations()));
    std::printf("total %lld\n", static_cast<long long>(total.read<int64_t>()));
    std::printf("error %s\n", error.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grove_cache_probe: %s\n", e.what());
    return 1;
  }
}
