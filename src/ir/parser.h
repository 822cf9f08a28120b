// src/ir/parser.h — reads the textual form back (docs/ir.md).
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "ir/ir.h"

namespace grove::ir {

struct ParsedModule {
  std::unique_ptr<FieldTable> fields;  // the module's `field` declarations
  std::vector<std::unique_ptr<Kernel>> kernels;
};

// Parses a module. A syntax error raises grove::Error naming `source_name`,
// the line and column, and what was expected.
ParsedModule parse_module(std::string_view text, std::string_view source_name = "<ir>");

}  // namespace grove::ir
