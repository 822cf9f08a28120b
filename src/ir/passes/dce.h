// src/ir/passes/dce.h — dead-code elimination.
#pragma once

#include "ir/ir.h"

namespace grove::ir {

// Removes statements without side effects whose results are unused,
// allocas that are never loaded (with their stores), statements after a
// break/continue in the same block, and empty ifs. Returns whether anything
// changed.
bool eliminate_dead_code(Kernel& kernel);

}  // namespace grove::ir
