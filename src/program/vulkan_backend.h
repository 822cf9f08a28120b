// src/program/vulkan_backend.h — what the Vulkan backend tells the SPIR-V
// code generator about a device (shared with the compile-latency benchmark).
#pragma once

#include "runtime/vulkan/device.h"
#include "runtime/vulkan/target.h"
#include "spirv/codegen.h"

namespace grove::detail {

// The code generator's options for `info` (features, workgroup size, the
// loop limit of drivers that have one); the caller sets message ids, debug
// and validation.
spirv::CodegenOptions codegen_options_for(const vk::DeviceInfo& info);
// The same for a target description (runtime/vulkan/target.h), which needs
// no device.
spirv::CodegenOptions codegen_options_for(const vk::Target& target);

}  // namespace grove::detail
