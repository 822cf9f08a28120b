// src/ir/passes/demote_atomics.h — Taichi's rule for `x[i] += v` at a
// parallel loop's own index: no other iteration touches that element, so the
// update needs no atomic instruction.
#pragma once

#include "ir/ir.h"

namespace grove::ir {

// In every top-level parallel loop (range_for, struct_for) of a frontend
// kernel: a field_atomic add, sub, min or max at the loop's own element (a
// struct_for's indices, in order; for a range_for, indices the iteration can
// be told from: its index, shifted by a value the loop does not compute, or
// split into quotient and remainder by a constant, as for_range over a shape
// writes; docs/ir.md), on a field that every access inside the loop reaches
// through those same indices, becomes a field_load, the operation and a
// field_store; what used the atomic's old value uses the load. Each
// iteration then updates an element no other iteration reads or writes.
// Returns whether anything changed.
bool demote_atomics(Kernel& kernel);

}  // namespace grove::ir
