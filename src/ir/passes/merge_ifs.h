// src/ir/passes/merge_ifs.h — adjacent ifs on one condition become one.
#pragma once

#include "ir/ir.h"

namespace grove::ir {

// In every block: `if c {A} else {B}`, then only value statements (const,
// arg, unary, cast, bitcast, binary, select), then `if c {C} else {D}` on
// the same condition statement, become the value statements followed by
// `if c {A; C} else {B; D}`. The values read no memory and have no effects,
// so running them before A or B changes nothing. Returns whether anything
// changed. (Lowered sparse accesses guard each access by its cell's slot:
// the four components of a vector's update then share one branch, and the
// code generators see them side by side.)
bool merge_adjacent_ifs(Kernel& kernel);

}  // namespace grove::ir
