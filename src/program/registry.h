// src/program/registry.h — the one list of the backends built into this
// Grove. Program (which backend Config::arch and Arch::Auto start), the AOT
// writer (which backends modules are made for, and whether a Program on
// another arch can make their code) and the `grove` tool read it; nothing
// else names an Arch or compares backend names. A backend is its own file
// (src/program/<name>_backend.cpp, over its code generator in src/<target>
// and its device in runtime/<target>) that defines one BackendEntry, and
// one line in registry.cpp (docs/layers.md, "Adding a backend").
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "program/backend.h"

namespace grove::detail {

struct BackendEntry {
  Arch arch = Arch::Interp;
  // Opens its device and makes the backend; raises grove::Error saying
  // what is missing (no loader, no driver, no device).
  BackendAndDevice (*make)(const BackendOptions&) = nullptr;
  // Where Arch::Auto tries it: the lowest first; a backend that does not
  // start is passed over. Null: Auto never picks it.
  int (*auto_rank)(const BackendOptions&) = nullptr;
  // Checks the Config fields that belong to it, whatever Config::arch is
  // (so that Auto, passing over it, does not hide a bad value). May be null.
  void (*check_options)(const BackendOptions&) = nullptr;
  // AOT modules: what their code is ("SPIR-V", "PTX"), empty where no
  // module is made for this backend.
  std::string_view module_code;
  // Makes its code generator with no device, for a module written from a
  // Program on another arch (raising grove::Error when the options lack
  // what it needs: Vulkan's Config::vulkan_target). Null: its code depends
  // on the device it runs on, so the Program must run on it.
  std::unique_ptr<Backend> (*make_compiler)(const BackendOptions&) = nullptr;
};

// The backends compiled in, in Arch order.
std::span<const BackendEntry* const> backends();
// Its entry, or null when it is not built into this Grove (or is Auto).
const BackendEntry* find_backend(Arch arch);

// Backend selection for a Program: Config's backend fields as
// BackendOptions (`print` receives kernels' print output), each backend's
// check of them, then the backend started: Config::arch's, or for
// Arch::Auto the application's Vulkan device when Config::vulkan_external
// is set, else the first of the ranked backends that starts. Raises
// grove::Error naming the Config field that is wrong or what is missing.
struct StartedBackend {
  BackendOptions options;
  BackendAndDevice made;
};
StartedBackend start_backend(const Config& config, rt::PrintSink print);

// Each backend's entry, defined in its own file (registry.cpp lists the
// ones compiled in).
extern const BackendEntry kInterpBackend;
extern const BackendEntry kCpuBackend;
extern const BackendEntry kVulkanBackend;
extern const BackendEntry kCudaBackend;

}  // namespace grove::detail
