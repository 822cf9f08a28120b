// src/ir/passes/type_check.h — assigns types and inserts implicit casts.
#pragma once

#include "ir/ir.h"

namespace grove::ir {

// Frontend -> typed: every operand is cast to the type its statement computes
// in (docs/ir.md, "Implicit promotion"); stores cast to the field's or
// variable's type; conditions become u1. A type error (a bit op on floats, a
// non-scalar condition...) raises grove::Error naming the kernel, the
// statement and what to change. Sets kernel.stage = Stage::typed.
void type_check(Kernel& kernel);

}  // namespace grove::ir
