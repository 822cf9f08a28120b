// src/ir/passes/cse.h — common-subexpression elimination over the block tree.
#pragma once

#include "ir/ir.h"

namespace grove::ir {

// A pure statement (const, arg, unary, cast, binary, select, loop_index)
// identical to one that dominates it (earlier in the same block or in an
// enclosing block) is replaced by it. Loads are never merged. Returns
// whether anything changed.
bool eliminate_common_subexpressions(Kernel& kernel);

}  // namespace grove::ir
