// src/ir/passes/constant_fold.h — evaluates statements whose operands are constants.
#pragma once

#include "ir/ir.h"

namespace grove::ir {

// Replaces unary/binary/cast/select statements of constant operands by
// constants (using the interpreter's arithmetic, docs/ir.md semantics), plus
// algebraic identities that hold exactly (x+0, x*1, x*0 for integers,
// select on a constant condition, `if` on a constant). Returns whether
// anything changed. Needs a typed kernel (any stage after frontend).
bool constant_fold(Kernel& kernel);

}  // namespace grove::ir
