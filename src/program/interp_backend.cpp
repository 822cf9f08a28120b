// src/program/interp_backend.cpp — the reference interpreter as a backend:
// a device whose buffers are host vectors and whose kernels are their
// lowered IR, run statement by statement.
#include <iostream>
#include <map>
#include <string>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/interpreter.h"
#include "program/backend.h"
#include "program/registry.h"
#include "runtime/core/host_device.h"

namespace grove::detail {

namespace {

// The plan, and the IR it was made from (the interpreter's code).
class InterpKernel : public rt::LoadedKernel {
 public:
  InterpKernel(const ir::Kernel& k, const ir::SNodeForest& f) : interpreter(k), forest(f) {}
  ir::Interpreter interpreter;
  const ir::SNodeForest& forest;
};

class InterpDevice : public rt::HostDevice {
 public:
  explicit InterpDevice(const BackendOptions& o) : HostDevice("interpreter"), options_(o) {}
  std::string name() const override { return "reference interpreter on the host CPU"; }
  bool synchronous() const override { return true; }

  std::unique_ptr<rt::LoadedKernel> load(rt::KernelPlan plan) override {
    throw Error("kernel '" + plan.name + "': the interpreter runs kernels from their IR, which a plan does not "
                "hold; load plans on a backend whose plans carry code (Vulkan, the CPU)");
  }
  void launch(rt::LoadedKernel& loaded, std::span<const uint64_t> args, const std::vector<bool>& run,
              std::span<const int> slot_buffers) override {
    auto& k = static_cast<InterpKernel&>(loaded);
    // The IR names a buffer by its tree and tree parameter: the plan's slot
    // of that pair is bound to one of this device's buffers.
    std::map<std::pair<int, int>, int> bound;
    for (size_t s = 0; s < k.plan.slots.size(); ++s)
      bound[{k.plan.slots[s].tree_type, k.plan.slots[s].param}] = slot_buffers[s];
    ir::InterpreterEnv env;
    env.snodes = &k.forest;
    env.buffer = [&](int tree, int param) -> std::span<uint32_t> {
      auto it = bound.find({tree, param});
      if (it == bound.end())
        throw InternalError("interpreter: kernel '" + k.plan.name + "' names tree " + std::to_string(tree) +
                            " (tree parameter " + std::to_string(param) + "), which its plan binds to no buffer");
      return buffers_.at(static_cast<size_t>(it->second));
    };
    env.debug = options_.debug;
    env.print = options_.print ? options_.print : [](std::string_view s) { std::cout << s << std::flush; };
    env.run_task = [&](size_t i) { return i < run.size() ? bool(run[i]) : true; };
    if (profiling_) env.task_time = [&](size_t i, double seconds) { add_task_time(k.plan, i, seconds); };
    k.interpreter.run(args, env);
  }
  void sync() override {}

 private:
  BackendOptions options_;
};

class InterpBackend : public Backend {
 public:
  Arch arch() const override { return Arch::Interp; }
  std::unique_ptr<rt::LoadedKernel> compile(const ir::Kernel& kernel, std::string_view, const ir::SNodeForest& forest,
                                            rt::KernelPlan plan) override {
    auto k = std::make_unique<InterpKernel>(kernel, forest);
    // No code in the plan (its backend: "interp"): the interpreter keeps the lowered IR.
    k->plan = std::move(plan);
    return k;
  }
};

BackendAndDevice make_interp_backend(const BackendOptions& options) {
  return {std::make_unique<InterpDevice>(options), std::make_unique<InterpBackend>()};
}

}  // namespace

const BackendEntry kInterpBackend = {
    .arch = Arch::Interp,
    .make = make_interp_backend,
    .auto_rank = [](const BackendOptions&) { return 4; },  // always starts: the last resort
};

}  // namespace grove::detail
