// grove — the command-line tool: version, backends compiled in, devices found.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <grove/grove.h>

#ifdef GROVE_WITH_VULKAN
#include "runtime/vulkan/device.h"
#endif

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

#ifdef GROVE_WITH_VULKAN
// Every Vulkan device the loader reports, what Grove may use on it, and
// which one a Program picks by default (GROVE_VULKAN_DEVICE or the best).
void list_vulkan_devices() {
  std::vector<grove::vk::DeviceInfo> devices;
  try {
    devices = grove::vk::enumerate_devices();
  } catch (const grove::Error& e) {
    std::printf("vulkan devices: none (%s)\n", e.what());
    return;
  }
  int picked = -1;
  try {
    picked = static_cast<int>(grove::vk::Device::create()->info().index);
  } catch (const grove::Error&) {
  }
  std::printf("vulkan devices:%s\n", devices.empty() ? " none (the loader found no driver)" : "");
  for (const grove::vk::DeviceInfo& d : devices) {
    std::string features;
    auto add = [&](bool on, const char* name) {
      if (on) features += std::string(features.empty() ? "" : " ") + name;
    };
    add(d.shader_int64, "int64");
    add(d.shader_float64, "float64");
    add(d.atomic_int64, "atomic-int64");
    add(d.atomic_float32_add, "atomic-f32-add");
    std::printf("  %u: %s (%s, Vulkan %s)%s\n", d.index, d.name.c_str(), grove::vk::to_string(d.type),
                grove::vk::version_string(d.api_version).c_str(),
                static_cast<int>(d.index) == picked ? "  <- used by default" : "");
    if (!d.unsupported_reason.empty()) {
      std::printf("     unusable: %s\n", d.unsupported_reason.c_str());
      continue;
    }
    std::printf("     %s; largest buffer %llu MiB\n", features.empty() ? "32-bit only" : features.c_str(),
                static_cast<unsigned long long>(d.max_storage_buffer_range >> 20));
  }
}
#endif

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
      std::printf("  %-7s %s\n", (name + ":").c_str(), prog.device_name().c_str());
      ++found;
    } catch (const grove::Error& e) {
      std::printf("  %-7s unavailable: %s\n", (name + ":").c_str(), e.what());
    }
  }
#ifdef GROVE_WITH_VULKAN
  list_vulkan_devices();
#endif
  std::printf("auto order: %s\n", std::string(grove::auto_order()).c_str());
  try {
    grove::Program prog;
    std::printf("auto:     %s (%s)\n", std::string(grove::arch_name(prog.arch())).c_str(), prog.device_name().c_str());
  } catch (const grove::Error& e) {
    std::printf("auto:     unavailable: %s\n", e.what());
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
