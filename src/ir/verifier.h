// src/ir/verifier.h — structural and type checks of a kernel at its stage.
#pragma once

#include <string_view>

#include "ir/ir.h"

namespace grove::ir {

// Checks operand counts, that every operand is defined before its use in an
// enclosing block (dominance), loop_index/break/continue placement, field ids,
// what each stage allows (docs/ir.md), and from Stage::typed on that operand
// types match. Raises grove::InternalError
// whose message names `after_pass`, the kernel and the offending statement
// (printed).
void verify(const Kernel& kernel, std::string_view after_pass);

}  // namespace grove::ir
