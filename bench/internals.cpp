// internals.cpp — see internals.h.
#include "internals.h"

#include "program/program_impl.h"

namespace grove_bench {

const grove::ir::Kernel& lowered_ir(const grove::Program& program, const grove::Kernel& kernel) {
  kernel.ir();  // compiles it, if it was not yet
  for (const auto& record : program.impl()->kernels) {
    if (record->name == kernel.name() && record->ir) return *record->ir;
  }
  throw grove::Error("kernel '" + kernel.name() + "' has no compiled IR in this program");
}

const grove::ir::SNodeForest& snode_forest(const grove::Program& program) { return program.impl()->forest(); }

}  // namespace grove_bench
