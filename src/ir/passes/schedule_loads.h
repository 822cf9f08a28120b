// src/ir/passes/schedule_loads.h — a kernel's loads of tree memory in the
// order their values are used, each next to its address.
#pragma once

#include "ir/ir.h"

namespace grove::ir {

// In every block, plain `tree_load`s move down, past value statements,
// local variables' accesses and other plain loads only: a store, an atomic
// or atomic load, an effect, a break or a statement with blocks stops them.
// The loads waiting above a statement that uses one of them, or stops
// them, go out together before it, in the order of their first uses (of
// `a + b`, a's first), each after its address chain: the value statements
// of the block whose one use is the load or another statement of its chain
// move with it. Nothing is written between a load's old and new place, and
// values are pure, so the meaning is unchanged, only the order.
//
// Why: a C++ kernel records its loads in the order the compiler evaluates
// operands (GCC: `a * x(i) + y(i)` loads y first, and a sum of four
// neighbours the last first), and a SPIR-V consumer may keep that order.
// On lavapipe, saxpy with y loaded first ran about 8% slower than with the
// order glslang writes (x first); a stencil whose addresses were all
// computed before its four loads, 5% slower than with each address next
// to its load. LLVM (CPU, CUDA) and GPU drivers' compilers schedule loads
// themselves.
void schedule_loads(Kernel& kernel);

}  // namespace grove::ir
