// runtime/aot/formats.h — the one list of the backends whose AOT modules
// grove_runtime reads: for each, how its kernels' code is checked when a
// module is read, how `grove inspect` describes it, and how a device for it
// is opened. The reader (module.cpp) and the loader (runtime_module.cpp)
// go through it; neither names a backend. A backend with modules adds one
// entry in formats.cpp (docs/layers.md, "Adding a backend").
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "grove/runtime.h"
#include "runtime/core/bytes.h"
#include "runtime/core/device.h"
#include "runtime/core/plan.h"

namespace grove::rt::aot {

struct ModuleData;

struct ModuleFormat {
  std::string_view backend;  // ModuleData::backend, KernelPlan::backend: "vulkan"
  std::string_view name;     // in messages: "Vulkan"
  // Fails `r` (ByteReader::fail) at the first thing wrong with the code of
  // `plan`, a kernel of a module of this backend.
  void (*check_code)(const KernelPlan& plan, ByteReader& r) = nullptr;
  // `grove inspect`: the device line(s) of a module, and what a kernel's
  // code is ("1234 bytes of SPIR-V").
  std::string (*describe_device)(const ModuleData& m) = nullptr;
  std::string (*describe_code)(const KernelPlan& plan) = nullptr;
  // Opens the device a module runs on, as `options` choose it; `source`
  // names the module in errors (a backend this grove_runtime was built
  // without says so).
  std::unique_ptr<Device> (*open)(const grove::runtime::Options& options, const std::string& source) = nullptr;
};

// Every format, built in or not (a module of one this runtime cannot run
// is still read and described).
std::span<const ModuleFormat> module_formats();
// Its format, or null.
const ModuleFormat* module_format(std::string_view backend);

}  // namespace grove::rt::aot
