// src/ir/passes/pipeline.h — the flat list of passes every kernel goes through.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "ir/passes/legalize.h"
#include "ir/passes/lower_access.h"
#include "ir/passes/offload.h"

namespace grove::ir {

struct PipelineOptions {
  bool verify = true;  // verifier between passes, failures name the pass
  // Called with the stage name ("frontend", "type_check", "simplify", ...)
  // and the kernel after each step: print_ir and GROVE_DUMP_DIR hook in here.
  std::function<void(std::string_view stage, const Kernel&)> on_stage;
  OffloadOptions offload;
  OffloadResult* offload_result = nullptr;  // where offload's task list goes
  LowerAccessOptions lower;
  // The code generator's target: legalize writes what it lacks in
  // primitives, last. Null (the interpreter): the kernel stays lowered.
  const TargetOps* target = nullptr;
  // Called with the kernel in its last form that no target decided (after
  // mark_reductions, before legalize): what a kernel plan is built from, so
  // that its host-side counts and activity analysis read the operations
  // themselves rather than their guards.
  std::function<void(const Kernel&)> on_lowered;
};

// The pass names, in order (printable, see `grove help`).
const std::vector<std::string>& pipeline_pass_names();

// frontend -> type_check -> simplify -> offload -> lower_access ->
// simplify_lowered -> mark_reductions -> legalize. The last five run only
// when kernel.forest is set (the passes' own tests stop at the typed
// stage), legalize only for a target.
void run_pipeline(Kernel& kernel, const PipelineOptions& options = {});

}  // namespace grove::ir
