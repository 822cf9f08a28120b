// src/ir/passes/simplify.cpp — constant folding, CSE, DCE and merging ifs in rounds to a fixed point.
#include "ir/passes/simplify.h"

#include "ir/passes/constant_fold.h"
#include "ir/passes/cse.h"
#include "ir/passes/dce.h"
#include "ir/passes/merge_ifs.h"
#include "ir/verifier.h"

namespace grove::ir {

void simplify(Kernel& kernel, const SimplifyOptions& options) {
  struct Step {
    const char* name;  // what a verifier failure names
    bool (*run)(Kernel&);
  };
  static constexpr Step kSteps[] = {
      {"constant_fold", constant_fold},
      {"eliminate_common_subexpressions", eliminate_common_subexpressions},
      {"eliminate_dead_code", eliminate_dead_code},
      {"merge_adjacent_ifs", merge_adjacent_ifs},
  };
  for (int round = 0; round < options.max_rounds; ++round) {
    bool changed = false;
    for (const Step& step : kSteps) {
      changed |= step.run(kernel);
      if (options.verify) verify(kernel, step.name);
    }
    if (!changed) return;
  }
}

}  // namespace grove::ir
