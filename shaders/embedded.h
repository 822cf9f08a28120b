// shaders/embedded.h — SPIR-V of the GLSL compute shaders in shaders/,
// compiled by glslangValidator at build time (target Vulkan 1.1, SPIR-V 1.3).
// Each shader's entry point is "main"; its bindings and push constants are
// documented at the top of its .comp file.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace grove::shaders {

// One variable per shader, named after its file: grove::shaders::fill_u32
// holds the words of fill_u32.comp. The list is generated from
// GROVE_EMBEDDED_SHADERS in shaders/CMakeLists.txt.
#define GROVE_EMBEDDED_SHADER(name) extern const std::span<const std::uint32_t> name;
#include "grove_embedded_shaders.inc"
#undef GROVE_EMBEDDED_SHADER

struct EmbeddedShader {
  std::string_view name;  // file name without ".comp"
  std::span<const std::uint32_t> spirv;
};

// Every embedded shader, in the order of GROVE_EMBEDDED_SHADERS.
std::span<const EmbeddedShader> all();

// The shader called `name`, or an empty span if there is none.
std::span<const std::uint32_t> find(std::string_view name);

}  // namespace grove::shaders
