// src/ir/passes/reductions.h — finds the sums into one cell that a code
// generator may combine across iterations and invocations.
#pragma once

#include "ir/ir.h"

namespace grove::ir {

// Marks, in every parallel task of a lowered kernel, each tree_atomic that
// is an add of i32, u32 or f32 to a constant address of field data (at or
// past its tree's root region: the sparse runtime's counters in the header
// stay plain atomics) whose old value nothing reads: Reduction::accumulate
// when the task's loop touches that cell of that instance in no other way,
// else Reduction::one_cell (docs/ir.md, "Reductions"). Without a forest
// (kernels read from text) every constant address counts as field data.
// Returns whether any mark changed.
bool mark_reductions(Kernel& kernel);

}  // namespace grove::ir
