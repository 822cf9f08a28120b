// src/ir/work_bound.h — how much a kernel's launch can run, known before it
// runs: what a backend with more than one tier of code (the LLVM CPU
// backend's quick and full code, src/llvm_cpu/jit.h) decides the first
// tier by.
#pragma once

#include <cstdint>

#include "ir/ir.h"

namespace grove::ir {

// The most statements one launch of `kernel` (recorded, or at any stage
// before offload) runs: each statement counts 1, a range_for its body times
// its iterations where its bounds are constants (computed from constants by
// unary, binary and cast statements), a struct_for its body times the cells
// its field's or node's loop can reach (the node's cells in the whole
// tree), an if both branches. -1 where no bound is known: a range_for whose
// bounds are not constants, a while_ loop. Counts past 2^62 are 2^62.
// `forest` is the kernel's (laid out or not).
int64_t work_bound(const Kernel& kernel, const SNodeForest& forest);

}  // namespace grove::ir
