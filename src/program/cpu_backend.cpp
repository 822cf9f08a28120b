// src/program/cpu_backend.cpp — the LLVM CPU backend: lowered IR to native
// code through the shared LLVM code generator (src/llvm/codegen.h: one
// function per task, JIT-loaded for this CPU), and a device whose buffers
// are host memory, whose serial tasks run on the calling thread and whose
// parallel tasks oneTBB spreads over the cores (Config::cpu_threads of
// them). Launches finish before they return.
//
// Not yet (issue 12): print and assert (so debug-mode bounds checks), the
// disk cache, and plans that carry CPU code: a kernel runs in the process
// that compiled it.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <thread>
#include <memory>
#include <string>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/plan_builder.h"
#include "llvm/codegen.h"
#include "program/backend.h"
#include "program/host_device.h"

namespace grove::detail {

namespace {

// The plan and the JIT-compiled functions (kept alive with their JIT).
class CpuKernel : public rt::LoadedKernel {
 public:
  std::shared_ptr<llvm_backend::Jit> jit;
  llvm_backend::JitKernel code;
};

// Words of the context buffer each launch passes as buffers[0] (the task
// ABI's; the CPU code does not use it yet).
constexpr size_t kContextWords = 64;

class CpuDevice : public HostDevice {
 public:
  CpuDevice(std::string target, int threads)
      : HostDevice("CPU backend"), target_(std::move(target)), threads_(threads), arena_(threads),
        context_(kContextWords, 0u) {}
  std::string name() const override {
    return "LLVM CPU backend (" + target_ + ", " + std::to_string(threads_) + " threads)";
  }
  bool synchronous() const override { return true; }

  std::unique_ptr<rt::LoadedKernel> load(rt::KernelPlan plan) override {
    throw Error("kernel '" + plan.name + "': the CPU backend runs kernels it compiled in this process; a plan "
                "does not carry CPU code yet, so load plans on Vulkan");
  }

  void launch(rt::LoadedKernel& loaded, std::span<const uint64_t> args, const std::vector<bool>& run,
              std::span<const int> slot_buffers) override {
    auto& k = static_cast<CpuKernel&>(loaded);
    const uint64_t* a = args.data();
    std::vector<uint32_t*> pointers;
    for (size_t i = 0; i < k.plan.tasks.size(); ++i) {
      if (i < run.size() && !run[i]) continue;
      const rt::TaskPlan& task = k.plan.tasks[i];
      pointers.assign(1, context_.data());
      for (int slot : task.slots)
        pointers.push_back(buffers_.at(static_cast<size_t>(slot_buffers[static_cast<size_t>(slot)])).data());
      uint32_t* const* p = pointers.data();
      const llvm_backend::TaskFn fn = k.code.functions[i];
      if (!task.parallel) {
        fn(p, a, 0, 1);
        continue;
      }
      const int32_t count = k.code.counts[i](p, a);
      if (count <= 0) continue;
      // About eight chunks per thread: enough to balance uneven iterations
      // (a struct-for's cells differ in cost), few enough that a chunk's
      // call is noise.
      const int32_t grain = std::max<int32_t>(1, count / (8 * threads_));
      arena_.execute([&] {
        tbb::parallel_for(tbb::blocked_range<int32_t>(0, count, grain),
                          [&](const tbb::blocked_range<int32_t>& r) { fn(p, a, r.begin(), r.end()); });
      });
    }
  }
  void sync() override {}

 private:
  std::string target_;
  int threads_;
  tbb::task_arena arena_;
  std::vector<uint32_t> context_;
};

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(std::shared_ptr<llvm_backend::Jit> jit) : jit_(std::move(jit)) {}
  Arch arch() const override { return Arch::Cpu; }
  std::unique_ptr<rt::LoadedKernel> compile(const ir::Kernel& kernel, const ir::SNodeForest&,
                                            rt::KernelPlan plan) override {
    auto k = std::make_unique<CpuKernel>();
    k->jit = jit_;
    k->code = jit_->add(kernel);
    GROVE_ASSERT(k->code.tasks.size() == plan.tasks.size(), "the LLVM code generator made a function per task");
    plan.backend = "cpu";
    for (size_t i = 0; i < plan.tasks.size(); ++i) {
      const llvm_backend::CpuTask& c = k->code.tasks[i];
      rt::TaskPlan& t = plan.tasks[i];
      t.entry_point = c.entry;
      t.count_entry_point = c.count_entry;
      for (const llvm_backend::TreeKey& key : c.trees) t.slots.push_back(ir::slot_of(plan, key.first, key.second));
    }
    k->plan = std::move(plan);
    return k;
  }

 private:
  std::shared_ptr<llvm_backend::Jit> jit_;
};

}  // namespace

BackendAndDevice make_cpu_backend(const BackendOptions& options) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (options.cpu_threads < 0)
    throw Error("Config::cpu_threads is " + std::to_string(options.cpu_threads) +
                "; give the number of threads (0: every core, " + std::to_string(cores) + " here)");
  const int threads = options.cpu_threads == 0 ? cores : options.cpu_threads;
  auto jit = std::make_shared<llvm_backend::Jit>();
  return {std::make_unique<CpuDevice>(jit->target(), threads), std::make_unique<CpuBackend>(jit)};
}

}  // namespace grove::detail
