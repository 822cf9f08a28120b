// src/spirv/validate.h — check, print and optimise SPIR-V words with SPIRV-Tools.
// Includes no SPIR-V or SPIRV-Tools header: any library may include it.
//
// The target environment follows the module's version word: SPIR-V 1.0-1.3
// is checked as Vulkan 1.1, 1.4 as Vulkan 1.1 with SPIR-V 1.4, 1.5 as Vulkan
// 1.2 and 1.6 as Vulkan 1.3.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace grove::spirv {

// Runs the SPIRV-Tools validator (default options). On failure throws
// grove::InternalError naming `what`, with the validator's messages and the
// module's full disassembly.
void validate_spirv(std::span<const uint32_t> words, std::string_view what);

// The module as SPIR-V assembly (friendly names, indented). A binary that
// cannot be parsed gives the parser's messages and a hex dump instead.
std::string disassemble(std::span<const uint32_t> words);

// spvtools::Optimizer with its performance passes (the release path). The
// input is validated first; a failure throws grove::InternalError.
std::vector<uint32_t> optimize_spirv(std::span<const uint32_t> words);

}  // namespace grove::spirv
