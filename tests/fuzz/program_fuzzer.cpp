// tests/fuzz/program_fuzzer.cpp — the random-program differential fuzzer
// (tests/support/random_program.h) for a bounded time: seed after seed, each
// program runs on the interpreter, the CPU backend and Vulkan (where a
// device opens), and every disagreement is printed with its seed. A seed
// that disagrees belongs in tests/api/random_program_test.cpp's
// kRegressions once its cause is fixed.
//
//   grove_program_fuzzer [--seconds N] [--seed FIRST]
//
// Exits 1 when a seed disagreed, 0 otherwise. `make fuzz` runs it for
// FUZZ_SECONDS.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../support/random_program.h"

using namespace grove;

int main(int argc, char** argv) {
  double seconds = 60;
  uint64_t seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) % 1000000007u;
  for (int a = 1; a + 1 < argc; a += 2) {
    if (std::strcmp(argv[a], "--seconds") == 0) seconds = std::atof(argv[a + 1]);
    else if (std::strcmp(argv[a], "--seed") == 0) seed = std::strtoull(argv[a + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: %s [--seconds N] [--seed FIRST]\n", argv[0]);
      return 2;
    }
  }
  setenv("GROVE_VALIDATE_SPIRV", "1", 1);
  std::vector<Config> targets;
  for (Arch arch : compiled_backends()) {
    if (arch == Arch::Interp) continue;
    Config c;
    c.arch = arch;
    c.verify_ir = true;
    try {
      Program probe(c);
      targets.push_back(c);
    } catch (const Error& e) {
      std::printf("%s: not compared (%s)\n", std::string(arch_name(arch)).c_str(), e.what());
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int programs = 0, disagreements = 0;
  const uint64_t first = seed;
  do {  // one seed at least: --seconds 0 --seed S reruns seed S (with GROVE_DUMP_DIR, its kernels)
    for (const Config& c : targets) {
      try {
        for (const std::string& p : grove::testing::random_program_disagreements(seed, c)) {
          std::printf("DISAGREES: %s\n", p.c_str());
          ++disagreements;
        }
      } catch (const std::exception& e) {
        std::printf("DISAGREES: seed %llu, %s: raised %s\n", static_cast<unsigned long long>(seed),
                    std::string(arch_name(c.arch)).c_str(), e.what());
        ++disagreements;
      }
    }
    ++programs;
    ++seed;
  } while (std::chrono::steady_clock::now() < deadline);
  std::printf("random programs: seeds %llu..%llu (%d), %d disagreement%s\n", static_cast<unsigned long long>(first),
              static_cast<unsigned long long>(seed - 1), programs, disagreements, disagreements == 1 ? "" : "s");
  return disagreements == 0 ? 0 : 1;
}
