// src/program/registry.cpp — the list of backends compiled in (registry.h),
// Arch's names, and the public functions that read the list.
#include "program/registry.h"

#include <array>
#include <utility>

#include "grove/error.h"
#include "grove/program.h"

namespace grove {

namespace {

// Every Arch, built in or not (a Config may name one this Grove lacks).
constexpr std::array<std::pair<Arch, std::string_view>, 5> kArchNames = {{
    {Arch::Auto, "auto"},
    {Arch::Interp, "interp"},
    {Arch::Cpu, "cpu"},
    {Arch::Vulkan, "vulkan"},
    {Arch::Cuda, "cuda"},
}};

// In the order compiled_backends() reports them.
constexpr const detail::BackendEntry* kBuiltIn[] = {
#ifdef GROVE_WITH_VULKAN
    &detail::kVulkanBackend,
#endif
    &detail::kInterpBackend,
#ifdef GROVE_WITH_LLVM
    &detail::kCpuBackend,
#endif
#ifdef GROVE_WITH_CUDA
    &detail::kCudaBackend,
#endif
};

}  // namespace

std::string_view arch_name(Arch a) {
  for (const auto& [arch, name] : kArchNames)
    if (arch == a) return name;
  return "?";
}

bool parse_arch(std::string_view s, Arch* out) {
  for (const auto& [arch, name] : kArchNames) {
    if (name == s) {
      *out = arch;
      return true;
    }
  }
  return false;
}

std::string_view auto_order() {
  // The ranks the entries give (kVulkanBackend's depends on the devices).
  return "a Vulkan GPU, then cuda (an NVIDIA driver and GPU), then cpu (LLVM), then a CPU Vulkan driver "
         "(lavapipe), then interp";
}

std::vector<Arch> known_backends() {
  std::vector<Arch> out;
  for (const auto& [arch, name] : kArchNames)
    if (arch != Arch::Auto) out.push_back(arch);
  return out;
}

std::vector<Arch> compiled_backends() {
  std::vector<Arch> out;
  for (const detail::BackendEntry* b : kBuiltIn) out.push_back(b->arch);
  return out;
}

namespace detail {

std::span<const BackendEntry* const> backends() { return kBuiltIn; }

const BackendEntry* find_backend(Arch arch) {
  for (const BackendEntry* b : kBuiltIn)
    if (b->arch == arch) return b;
  return nullptr;
}

}  // namespace detail
}  // namespace grove
