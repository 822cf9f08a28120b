// internals.h — internal hooks the compile benchmarks use (not Grove's
// public API; they read src/program/program_impl.h).
#pragma once

#include <grove/grove.h>

#include "ir/ir.h"
#include "ir/snode.h"
#include "life.h"

namespace grove_bench {

// The lowered IR that `kernel`'s Program handed to its backend
// (ir::Stage::lowered, what a code generator translates), compiling the
// kernel first if needed, and the program's SNode forest.
const grove::ir::Kernel& lowered_ir(const grove::Program& program, const grove::Kernel& kernel);
const grove::ir::SNodeForest& snode_forest(const grove::Program& program);

// examples/sparse_life's fields and kernels (examples/sparse_life/life.h)
// on the example's default 16384^2 domain, found by name.
struct LifeKernels : sparse_life::Life {
  static constexpr int kN = 16384;
  explicit LifeKernels(grove::Program& prog) : sparse_life::Life(prog, kN) {}
  grove::Kernel by_name(std::string_view name) const {
    for (const grove::Kernel& k : {seed, count, update, prune, snapshot})
      if (k.name() == name) return k;
    throw grove::Error("no sparse_life kernel named '" + std::string(name) + "'");
  }
};

}  // namespace grove_bench
