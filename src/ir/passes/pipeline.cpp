// src/ir/passes/pipeline.cpp — the flat pass list, verified after each step.
#include "ir/passes/pipeline.h"

#include "ir/passes/lower_access.h"
#include "ir/passes/offload.h"
#include "ir/passes/demote_atomics.h"
#include "ir/passes/reductions.h"
#include "ir/passes/schedule_loads.h"
#include "ir/passes/simplify.h"
#include "ir/passes/type_check.h"
#include "ir/verifier.h"

namespace grove::ir {

namespace {

struct Pass {
  std::string name;
  void (*run)(Kernel&, const PipelineOptions&);
  bool needs_forest;  // runs only when the kernel knows its SNode trees
  bool needs_target = false;  // runs only for a code generator's target
};

// Serial tasks left empty (their values were recomputed where used) cost a
// launch each; they go, together with their scheduler entries.
void drop_empty_tasks(Kernel& k, OffloadResult* result) {
  Block* body = k.body();
  for (size_t n = body->size(); n-- > 0;) {
    Stmt* t = body->at(n);
    if (t->task_kind() != TaskKind::serial || !t->body()->empty()) continue;
    body->take(n);
    if (result && n < result->tasks.size())
      result->tasks.erase(result->tasks.begin() + static_cast<std::ptrdiff_t>(n));
  }
}

void run_simplify(Kernel& k, const PipelineOptions& o) {
  SimplifyOptions so;
  so.verify = o.verify;
  simplify(k, so);
}

const std::vector<Pass>& passes() {
  static const std::vector<Pass> kPasses = {
      {"type_check", [](Kernel& k, const PipelineOptions&) { type_check(k); }, false},
      {"simplify", run_simplify, false},
      {"demote_atomics", [](Kernel& k, const PipelineOptions&) { demote_atomics(k); }, false},
      {"offload",
       [](Kernel& k, const PipelineOptions& o) {
         OffloadResult r = offload(k, o.offload);
         if (o.offload_result) *o.offload_result = std::move(r);
       },
       true},
      {"lower_access", [](Kernel& k, const PipelineOptions& o) { lower_access(k, o.lower); }, true},
      {"simplify_lowered",
       [](Kernel& k, const PipelineOptions& o) {
         run_simplify(k, o);
         drop_empty_tasks(k, o.offload_result);
       },
       true},
      {"mark_reductions", [](Kernel& k, const PipelineOptions&) { mark_reductions(k); }, true},
      {"legalize", [](Kernel& k, const PipelineOptions& o) { legalize(k, *o.target); }, true, true},
      {"schedule_loads", [](Kernel& k, const PipelineOptions&) { schedule_loads(k); }, true, true},
  };
  return kPasses;
}

}  // namespace

const std::vector<std::string>& pipeline_pass_names() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const Pass& p : passes()) names.push_back(p.name);
    return names;
  }();
  return kNames;
}

// Each step is shown (on_stage) before it is verified, so that a dump taken
// through on_stage also shows the IR a verifier failure complains about.
void run_pipeline(Kernel& kernel, const PipelineOptions& options) {
  if (options.on_stage) options.on_stage("frontend", kernel);
  if (options.verify) verify(kernel, "frontend");
  for (const Pass& p : passes()) {
    if (p.needs_forest && kernel.forest == nullptr) continue;
    if (p.needs_target && options.on_lowered) options.on_lowered(kernel);
    if (p.needs_target && options.target == nullptr) continue;
    p.run(kernel, options);
    if (options.on_stage) options.on_stage(p.name, kernel);
    if (options.verify) verify(kernel, p.name);
  }
}

}  // namespace grove::ir
