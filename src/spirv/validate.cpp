// src/spirv/validate.cpp — validate_spirv, disassemble and optimize_spirv over SPIRV-Tools.
#include "spirv/validate.h"

#include <cstdio>

#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/optimizer.hpp>

#include "ir/assert.h"

namespace grove::spirv {
namespace {

spv_target_env target_env(std::span<const uint32_t> words) {
  const uint32_t version = words.size() > 1 ? words[1] : 0;
  if (version >= 0x00010600) return SPV_ENV_VULKAN_1_3;
  if (version >= 0x00010500) return SPV_ENV_VULKAN_1_2;
  if (version >= 0x00010400) return SPV_ENV_VULKAN_1_1_SPIRV_1_4;
  return SPV_ENV_VULKAN_1_1;
}

const char* level_name(spv_message_level_t level) {
  switch (level) {
    case SPV_MSG_FATAL: return "fatal";
    case SPV_MSG_INTERNAL_ERROR: return "internal error";
    case SPV_MSG_ERROR: return "error";
    case SPV_MSG_WARNING: return "warning";
    case SPV_MSG_INFO: return "info";
    case SPV_MSG_DEBUG: return "debug";
  }
  return "message";
}

// A consumer that appends each message to `out`. For validator messages the
// position's index is the 1-based number of the offending instruction (the
// message then quotes that instruction too).
spvtools::MessageConsumer collect_into(std::string& out) {
  return [&out](spv_message_level_t level, const char* /*source*/, const spv_position_t& position,
                const char* message) {
    out += level_name(level);
    out += " (instruction ";
    out += std::to_string(position.index);
    out += "): ";
    out += message;
    out += '\n';
  };
}

std::string hex_dump(std::span<const uint32_t> words) {
  std::string out;
  char buf[16];
  for (size_t i = 0; i < words.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%08x%c", words[i], (i % 8 == 7) ? '\n' : ' ');
    out += buf;
  }
  return out;
}

}  // namespace

std::string disassemble(std::span<const uint32_t> words) {
  spvtools::SpirvTools tools(target_env(words));
  std::string messages;
  tools.SetMessageConsumer(collect_into(messages));
  std::string text;
  if (tools.Disassemble(words.data(), words.size(), &text,
                        SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT)) {
    return text;
  }
  return "(the binary could not be disassembled)\n" + messages + hex_dump(words);
}

void validate_spirv(std::span<const uint32_t> words, std::string_view what) {
  spvtools::SpirvTools tools(target_env(words));
  std::string messages;
  tools.SetMessageConsumer(collect_into(messages));
  if (tools.Validate(words.data(), words.size())) return;
  throw InternalError("SPIR-V validation failed for " + std::string(what) + ":\n" + messages +
                      "--- disassembly ---\n" + disassemble(words));
}

std::vector<uint32_t> optimize_spirv(std::span<const uint32_t> words) {
  spvtools::Optimizer optimizer(target_env(words));
  std::string messages;
  optimizer.SetMessageConsumer(collect_into(messages));
  optimizer.RegisterPerformancePasses();
  std::vector<uint32_t> out;
  if (!optimizer.Run(words.data(), words.size(), &out)) {
    throw InternalError("SPIR-V optimizer failed:\n" + messages + "--- disassembly ---\n" +
                        disassemble(words));
  }
  return out;
}

}  // namespace grove::spirv
