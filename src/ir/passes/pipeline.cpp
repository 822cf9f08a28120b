// src/ir/passes/pipeline.cpp — frontend -> type_check -> simplify, verified after each step.
#include "ir/passes/pipeline.h"

#include "ir/passes/simplify.h"
#include "ir/passes/type_check.h"
#include "ir/verifier.h"

namespace grove::ir {

namespace {

struct Pass {
  std::string name;
  void (*run)(Kernel&, const PipelineOptions&);
};

const std::vector<Pass>& passes() {
  static const std::vector<Pass> kPasses = {
      {"type_check", [](Kernel& k, const PipelineOptions&) { type_check(k); }},
      {"simplify",
       [](Kernel& k, const PipelineOptions& o) {
         SimplifyOptions so;
         so.verify = o.verify;
         simplify(k, so);
       }},
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
    p.run(kernel, options);
    if (options.on_stage) options.on_stage(p.name, kernel);
    if (options.verify) verify(kernel, p.name);
  }
}

}  // namespace grove::ir
