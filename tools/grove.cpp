// grove — the command-line tool: version, backends compiled in, devices found.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include <grove/grove.h>

namespace {

constexpr grove::Arch kAllBackends[] = {grove::Arch::Interp, grove::Arch::Cpu,
                                        grove::Arch::Vulkan, grove::Arch::Cuda};

void print_usage(std::FILE* to) {
  std::fprintf(to,
               "usage: grove <command>\n"
               "\n"
               "commands:\n"
               "  info      version, backends compiled in, and the devices found\n"
               "  version   the version only\n"
               "  help      this message (also: grove --help)\n");
}

bool compiled_in(grove::Arch arch) {
  for (grove::Arch a : grove::compiled_backends()) {
    if (a == arch) return true;
  }
  return false;
}

// What a working backend runs on, in a user's words.
std::string_view describe(grove::Arch arch) {
  switch (arch) {
    case grove::Arch::Interp: return "reference interpreter on the host CPU";
    case grove::Arch::Cpu: return "LLVM JIT on the host CPU";
    case grove::Arch::Vulkan: return "Vulkan compute device";
    case grove::Arch::Cuda: return "CUDA device";
    case grove::Arch::Auto: break;
  }
  return "?";
}

int cmd_info() {
  std::printf("grove %s\n", grove::kVersion);

  std::string built;
  for (grove::Arch a : grove::compiled_backends()) {
    if (!built.empty()) built += ", ";
    built += grove::arch_name(a);
  }
  std::printf("backends compiled in: %s\n", built.empty() ? "(none)" : built.c_str());

  // A backend shows as found only if a Program can actually be made on it.
  std::printf("devices:\n");
  int found = 0;
  for (grove::Arch a : kAllBackends) {
    const std::string name(grove::arch_name(a));
    if (!compiled_in(a)) {
      std::printf("  %-7s not built\n", (name + ":").c_str());
      continue;
    }
    try {
      grove::Program prog({.arch = a});
      std::printf("  %-7s %s\n", (name + ":").c_str(), std::string(describe(a)).c_str());
      ++found;
    } catch (const grove::Error& e) {
      std::printf("  %-7s unavailable: %s\n", (name + ":").c_str(), e.what());
    }
  }
  if (found == 0) {
    std::fprintf(stderr, "grove: no backend could be started\n");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stdout);
    return 0;
  }
  const std::string_view command = argv[1];
  try {
    if (command == "help" || command == "--help" || command == "-h") {
      print_usage(stdout);
      return 0;
    }
    if (command == "version" || command == "--version") {
      std::printf("grove %s\n", grove::kVersion);
      return 0;
    }
    if (command == "info") return cmd_info();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "grove: unknown command '%s'\n\n", argv[1]);
  print_usage(stderr);
  return 2;
}
