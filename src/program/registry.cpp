// src/program/registry.cpp — the list of backends compiled in (registry.h),
// Arch's names, the public functions that read the list, and the choice of
// a Program's backend.
#include "program/registry.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

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

namespace {

// Config's backend fields, checked by each backend whatever the arch (Auto
// would pass over one without saying why).
BackendOptions options_of(const Config& config, rt::PrintSink print) {
  if (const std::vector<Arch> known = known_backends();
      config.arch != Arch::Auto && std::find(known.begin(), known.end(), config.arch) == known.end()) {
    std::string names;
    for (Arch a : known) names += ", " + std::string(arch_name(a));
    throw Error("Config::arch is " + std::to_string(static_cast<int>(config.arch)) + ", which is no Arch; use auto" +
                names);
  }
  if (config.vulkan_external && config.arch != Arch::Auto && config.arch != Arch::Vulkan)
    throw Error("Config::vulkan_external hands Grove a Vulkan device, but Config::arch is " +
                std::string(arch_name(config.arch)) + "; use Arch::Vulkan (or Arch::Auto), or leave vulkan_external unset");
  BackendOptions bo;
  bo.debug = config.debug;
  bo.print = std::move(print);
  bo.device = config.vulkan_device;
  bo.validation = config.vulkan_validation;
  bo.vulkan_target = config.vulkan_target;
  bo.vulkan_external = config.vulkan_external;
  bo.cpu_threads = config.cpu_threads;
  bo.cpu_target = config.cpu_target;
  bo.cpu_tiers = config.cpu_tiers;
  bo.cache_dir = config.cache_dir;
  bo.cuda_device = config.cuda_device;
  bo.cuda_sm = config.cuda_sm;
  for (const BackendEntry* b : kBuiltIn)
    if (b->check_options) b->check_options(bo);
  return bo;
}

// Arch::Auto: in the order of the backends' ranks (auto_order() says it in
// words). A backend that does not start (no driver, no device) is passed
// over; the interpreter always starts.
BackendAndDevice start_first(const BackendOptions& bo) {
  std::vector<std::pair<int, const BackendEntry*>> order;
  for (const BackendEntry* b : kBuiltIn)
    if (b->auto_rank) order.emplace_back(b->auto_rank(bo), b);
  std::stable_sort(order.begin(), order.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [rank, b] : order) {
    try {
      return b->make(bo);
    } catch (const Error&) {
      // no loader, no device: the next one
    }
  }
  return {};
}

}  // namespace

StartedBackend start_backend(const Config& config, rt::PrintSink print) {
  StartedBackend out;
  out.options = options_of(config, std::move(print));
  const BackendOptions& bo = out.options;
  if (config.arch == Arch::Auto && config.vulkan_external) {
    // The application's device: Vulkan or nothing, never a silent move to
    // another backend.
    const BackendEntry* b = find_backend(Arch::Vulkan);
    if (b == nullptr)
      throw Error("Config::vulkan_external hands Grove a Vulkan device, and this Grove is built without the Vulkan "
                  "backend (GROVE_WITH_VULKAN=OFF)");
    out.made = b->make(bo);
  } else if (config.arch == Arch::Auto) {
    out.made = start_first(bo);
  } else if (const BackendEntry* b = find_backend(config.arch)) {
    out.made = b->make(bo);
  }
  if (!out.made.backend) {
    std::string built;
    for (const BackendEntry* b : kBuiltIn) built += (built.empty() ? "" : ", ") + std::string(arch_name(b->arch));
    throw Error("backend '" + std::string(arch_name(config.arch)) +
                "' is not built into this Grove (built: " + built + "); use one of those or "
                "Arch::Auto (--arch auto)");
  }
  return out;
}

}  // namespace detail
}  // namespace grove
