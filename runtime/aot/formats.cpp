// runtime/aot/formats.cpp — the module formats of grove_runtime (formats.h).
#include "runtime/aot/formats.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "grove/error.h"
#include "runtime/aot/module.h"
#ifdef GROVE_RUNTIME_VULKAN
#include "runtime/vulkan/vulkan_device.h"
#endif
#ifdef GROVE_RUNTIME_CUDA
#include "runtime/cuda/device.h"
#endif

namespace grove::rt::aot {

namespace {

// ---- Vulkan: SPIR-V per task, for the target its plan names ----

void vulkan_check(const KernelPlan& p, ByteReader& r) {
  // deserialize_plan has checked a module per task, none empty.
  if (!std::holds_alternative<SpirvCode>(p.code)) r.fail(std::string("its code is ") + code_kind_name(p.code) + ", not SPIR-V");
}

std::string vulkan_device(const ModuleData& m) {
  std::ostringstream o;
  o << "device features:";
  bool any = false;
  auto feature = [&](bool on, const char* name) {
    if (on) o << " " << name;
    any |= on;
  };
#define GROVE_FEATURE(field, device_name) feature(m.features.field, #field);
#include "runtime/core/features.def"
  o << (any ? "\n" : " none beyond Vulkan 1.1 compute\n");
  if (!m.kernels.empty() && !m.kernels.front().spirv().target.empty())
    o << "target: " << m.kernels.front().spirv().target << "\n";
  return o.str();
}

std::string vulkan_code(const KernelPlan& k) {
  size_t words = 0;
  for (const std::vector<uint32_t>& m : k.spirv().modules) words += m.size();
  return std::to_string(words * 4) + " bytes of SPIR-V";
}

std::unique_ptr<Device> vulkan_open(const grove::runtime::Options& options, const std::string& source) {
#ifdef GROVE_RUNTIME_VULKAN
  (void)source;  // the device's own errors name what is missing
  vk::RuntimeOptions ro;
  ro.debug = options.debug;
  ro.device.select = options.vulkan_device;
  ro.device.validation = options.validation;
  ro.device.profile.no_int64 = options.without_int64;
  ro.device.profile.no_float64 = options.without_float64;
  ro.device.profile.no_float_atomics = options.without_float_atomics;
  ro.external = options.external;
  return vk::make_vulkan_device(ro);
#else
  (void)options;
  throw Error(source + " is a Vulkan module, and this grove_runtime was built without Vulkan");
#endif
}

// ---- CUDA: one PTX module per kernel, for the sm its target names ----

void cuda_check(const KernelPlan& p, ByteReader& r) {
  for (size_t i = 0; i < p.tasks.size(); ++i)
    if (p.tasks[i].entry_point.empty()) r.fail("task " + std::to_string(i) + " has no entry point");
  const PtxCode* c = std::get_if<PtxCode>(&p.code);
  if (c == nullptr) r.fail(std::string("its code is ") + code_kind_name(p.code) + ", not PTX");
  if (c->ptx.empty()) r.fail("it has no PTX");
  if (c->target.rfind(kCudaTargetPrefix, 0) != 0)
    r.fail("its target is '" + c->target + "', not '" + std::string(kCudaTargetPrefix) + "NN'");
}

std::string cuda_device(const ModuleData& m) {
  int newest = -1;  // the newest target a kernel was compiled for
  for (const KernelPlan& k : m.kernels)
    if (const std::string& target = k.ptx().target; target.rfind(kCudaTargetPrefix, 0) == 0)
      newest = std::max(newest, std::atoi(target.c_str() + kCudaTargetPrefix.size()));
  return "device: " + (newest < 0 ? std::string("any CUDA GPU") : "a CUDA GPU of sm_" + std::to_string(newest) + " or newer") +
         " (the driver compiles the PTX for it)\n";
}

std::string cuda_code(const KernelPlan& k) {
  const PtxCode& c = k.ptx();
  return std::to_string(c.ptx.size()) + " bytes of PTX for " +
         c.target.substr(std::min(c.target.size(), kCudaTargetPrefix.size() - 3));
}

std::unique_ptr<Device> cuda_open(const grove::runtime::Options& options, const std::string& source) {
  if (options.external)
    throw Error(source + " is a CUDA module; Options::external hands Grove a Vulkan device, which runs Vulkan modules");
#ifdef GROVE_RUNTIME_CUDA
  return cuda::make_device(options.cuda_device, options.debug, nullptr, "runtime::Options::cuda_device");
#else
  throw Error(source + " is a CUDA module, and this grove_runtime was built without CUDA");
#endif
}

constexpr ModuleFormat kFormats[] = {
    {"vulkan", "Vulkan", vulkan_check, vulkan_device, vulkan_code, vulkan_open},
    {"cuda", "CUDA", cuda_check, cuda_device, cuda_code, cuda_open},
};

}  // namespace

std::span<const ModuleFormat> module_formats() { return kFormats; }

const ModuleFormat* module_format(std::string_view backend) {
  for (const ModuleFormat& f : kFormats)
    if (f.backend == backend) return &f;
  return nullptr;
}

}  // namespace grove::rt::aot
