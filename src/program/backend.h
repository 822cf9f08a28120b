// src/program/backend.h — the compile side of a backend: lowered IR in, a
// kernel the runtime can launch out (its plan, with the code the backend
// made, loaded on the device). The run side is an rt::Device inside the
// Program's rt::Context (runtime/core/context.h), which knows no IR.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "grove/program.h"
#include "ir/ir.h"
#include "ir/passes/legalize.h"
#include "ir/passes/lower_access.h"
#include "ir/snode.h"
#include "runtime/core/device.h"
#include "runtime/core/plan.h"

namespace grove::detail {

struct BackendOptions {
  bool debug = false;
  rt::PrintSink print;  // where `print` output goes
  // Vulkan: the device (index or name substring; "" = GROVE_VULKAN_DEVICE,
  // else the best one) and whether to enable the Khronos validation layer.
  std::string device;
  bool validation = false;
  std::string vulkan_target;  // Config::vulkan_target
  std::optional<runtime::VulkanHandles> vulkan_external;  // Config::vulkan_external
  // CPU: threads for parallel tasks (0: every core). CPU and CUDA: the
  // disk cache's directory (Config::cache_dir).
  int cpu_threads = 0;
  std::string cache_dir;
  std::string cpu_target;  // CPU: Config::cpu_target
  bool cpu_tiers = true;   // CPU: Config::cpu_tiers
  // CUDA: the device (index or name substring; "" = GROVE_CUDA_DEVICE, else 0),
  // and the target (Config::cuda_sm; 0: the device's).
  std::string cuda_device;
  int cuda_sm = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Arch arch() const = 0;
  // Cells of a container one iteration of a struct-for or listgen takes
  // (ir::SparseRuntime::set_cells_per_iteration): 1 where every cell is a
  // thread of its own (GPUs).
  virtual uint32_t cells_per_iteration() const { return 1; }
  // 0, or the least iterations a list loop should keep at launch: its runs
  // of cells then shorten (to one cell) when the list is short
  // (ir::SparseRuntime::set_least_iterations).
  virtual uint32_t least_list_iterations() const { return 0; }
  // Whether a statement group's activations share one copy of the
  // activation code (ir::LowerAccessOptions::group_activations): where the
  // code generator copies each site's code for the driver to compile.
  virtual bool groups_activations() const { return false; }
  // How a struct-for's reads near its own cell skip slot reads
  // (ir::LowerAccessOptions::near_reads).
  virtual ir::LowerAccessOptions::NearReads near_reads() const { return ir::LowerAccessOptions::NearReads::off; }
  // Whether reads at offsets take each block under a condition of its own
  // (ir::LowerAccessOptions::masked_near_reads).
  virtual bool masks_near_reads() const { return false; }
  // Whether a subgroup's invocations that find one slot empty activate it
  // once (ir::LowerAccessOptions::subgroup_activations).
  virtual bool subgroup_activations() const { return false; }
  // Points of a row (the last axis) one iteration of a multi-dimensional
  // for_range takes at the top level of a kernel: a vectorisable piece on
  // a CPU (also a Vulkan device that is one), 1 where every point is a
  // thread of its own (GPUs, whose consecutive threads then take
  // consecutive points).
  virtual uint32_t range_piece() const { return 1; }
  // Axes of a for_range over a shape that the backend's launch spreads over
  // a 2-D or 3-D grid of invocations (the innermost on the grid's x, each
  // axis a loop of its own, marked ir::Stmt::grid): 2 or 3 where points are
  // threads (GPUs), so that an invocation finds its point with no division;
  // 1 where the shape runs as one parallel loop (with range_piece()).
  virtual uint32_t grid_axes() const { return 1; }
  // What its code generator computes natively (ir::legalize writes the
  // rest in primitives, last in the pipeline); null for the interpreter,
  // which computes everything and runs lowered kernels as they are.
  virtual const ir::TargetOps* target_ops() const { return nullptr; }
  // `kernel` (at Stage::lowered) outlives the result; `text` is its text
  // form (ir::print_module of it alone), as the pipeline's last stage
  // printed it; `plan` is its backend-neutral plan (ir::plan_kernel), which
  // the backend completes.
  virtual std::unique_ptr<rt::LoadedKernel> compile(const ir::Kernel& kernel, std::string_view text,
                                                    const ir::SNodeForest& forest, rt::KernelPlan plan) = 0;
  // Whether the backend has a quick tier of code besides its full one
  // (the CPU's, Config::cpu_tiers: much quicker to make, slower to run):
  // the Program then makes a kernel's first code with compile_first.
  virtual bool tiers() const { return false; }
  // A kernel's first code where tiers() holds: `recorded` is the kernel as
  // recorded (stage frontend), by whose work (ir::work_bound) the backend
  // chooses. Sets `quick` when it made quick code, which the Program
  // replaces with compile()'s once the kernel's launches have run for
  // `tier_up_seconds` (set with it). By default the full tier's code.
  virtual std::unique_ptr<rt::LoadedKernel> compile_first(const ir::Kernel& kernel, std::string_view text,
                                                          const ir::SNodeForest& forest, rt::KernelPlan plan,
                                                          const ir::Kernel& recorded, bool& quick,
                                                          double& tier_up_seconds) {
    (void)recorded;
    (void)tier_up_seconds;
    quick = false;
    return compile(kernel, text, forest, std::move(plan));
  }
  // The full tier's code of a kernel that compile_first made quick, as a
  // job the Program runs on a thread of its own (BackgroundCompiles) while
  // it goes on launching and compiling: the job holds all it reads (a copy
  // of `kernel`, `text` and `plan`) and may run beside the backend's other
  // calls. It returns `plan` completed, loaded nowhere (the Program loads
  // it on its device, on its own thread). Backends without tiers raise.
  virtual std::function<rt::KernelPlan()> full_tier(const ir::Kernel& kernel, std::string_view text,
                                                    rt::KernelPlan plan);
  // The same plan with this backend's code in it, loaded nowhere: what an
  // AOT module for this arch holds when the Program runs on another
  // (ProgramImpl::plan_for). Only backends whose code does not depend on a
  // device they hold make it; the others raise grove::Error saying so.
  virtual rt::KernelPlan generate(const ir::Kernel& kernel, std::string_view text, const ir::SNodeForest& forest,
                                  rt::KernelPlan plan);
};

// GROVE_DUMP_DIR, created, or "" when it is unset: where each kernel's IR
// stages, plan and code go, in files named `dump_name(kernel) + suffix`.
std::string dump_dir();
std::string dump_name(std::string_view kernel);

// A backend and the device it compiles for.
struct BackendAndDevice {
  std::unique_ptr<rt::Device> device;
  std::unique_ptr<Backend> backend;
};

// Made by the backends' entries (registry.h).
#ifdef GROVE_WITH_LLVM
// The LLVM backends' disk cache directory (Config::cache_dir resolved; ""
// for none).
std::string cache_dir_of(const BackendOptions& options);
#endif

}  // namespace grove::detail
