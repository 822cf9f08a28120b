// src/ir/passes/simplify.h — constant folding, CSE and DCE run to a fixed point.
#pragma once

#include "ir/ir.h"

namespace grove::ir {

struct SimplifyOptions {
  int max_rounds = 16;    // stop after this many rounds even if not converged
  bool verify = true;     // run the verifier after each pass
};

void simplify(Kernel& kernel, const SimplifyOptions& options = {});

}  // namespace grove::ir
