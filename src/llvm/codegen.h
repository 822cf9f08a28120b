// src/llvm/codegen.h — lowered IR to LLVM IR: the code generator the CPU
// backend (src/llvm_cpu/jit.h, the task ABI and the Jit) and, retargeted to
// NVPTX, the CUDA backend (src/cuda/ptx.h) share. Each target describes
// itself through the hooks of emit.h; nothing else of the generator depends
// on it. No LLVM type appears here: LLVM's headers stay inside the
// translation units that need them.
//
// Messages: legalize writes print and assert as records (docs/ir.md, "Print
// and assert records"); its `message_base` is the context's word
// context::kMessageBase, which the device sets before each launch (so the
// code holds no device's ids and can be cached), and its `stop` returns.
//
// Memory order (docs/memory.md): tree atomics, compare-and-swaps and atomic
// loads are LLVM `monotonic` (relaxed); ordinary loads and stores are plain.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "ir/passes/legalize.h"
#include "runtime/core/plan.h"
#include "runtime/core/sanitizers.h"

namespace grove::llvm_backend {

// (tree, tree parameter) as in the IR's `@t<tree>` or `@t<tree>.p<param>`.
using TreeKey = std::pair<int, int>;

// One task as the generator emitted it, for either target (emit.h).
struct TaskCode {
  ir::TaskKind kind = ir::TaskKind::serial;
  std::string label;
  bool parallel = false;
  std::vector<TreeKey> trees;  // buffers[1], buffers[2], ... (NVPTX: the parameters after the context)
  std::string entry;           // the task function's symbol (NVPTX: the kernel entry's name)
  std::string count_entry;     // parallel tasks on the CPU: the count function's symbol
  // A task spread over a 2-D or 3-D launch (TargetHooks::grid_threads): its
  // inner axes (rt::TaskPlan::grid) and the block's size along its own loop.
  std::vector<rt::GridAxis> grid;
  uint32_t local_size = 0;
  // A GPU thread's iterations on average (TargetHooks::iterations_per_sum).
  uint32_t iterations_per_invocation = 1;
  // One of the sparse runtime's tasks (clear_list, listgen, gc, gc_finish)
  // whose code a target keeps for every kernel that has the same task
  // (TargetHooks::shares_runtime_tasks): `shape` fingerprints it (with
  // debug mode), and its functions are named by it.
  bool shared = false;
  ir::Fingerprint shape;
};

// Completes a kernel's plan (ir::plan_kernel's) from the tasks the
// generator made, as both targets' ABI has it: each argument in
// a 64-bit slot of its own (words 2n and 2n + 1), each task's entry points
// and tree slots, and the messages (which the device numbers at load).
void complete_plan(rt::KernelPlan& plan, const std::vector<TaskCode>& tasks,
                   std::vector<rt::MessagePlan> messages);

// What LLVM computes as docs/ir.md defines it, on the CPU and on NVPTX
// alike (libm's and libdevice's math, llvm.round, half conversions); the
// rest (ir/passes/legalize.h) arrives written in primitives.
const ir::TargetOps& target_ops();

struct CodegenOptions {
  // Debug mode: each task function returns at once when an assertion
  // failed before it (later tasks, later chunks of a parallel task).
  bool debug = false;
  // Compile (never read a cache) and keep the texts JitKernel can hold.
  bool keep_text = false;
  // The disk cache's directory; "" for none.
  std::string cache_dir;
  // What else decides the code and is not in the IR text (the plan).
  std::string key_extra;
  // The kernel's text form (ir::print_module of it alone) when the caller
  // has printed it already (the pass pipeline's last stage): the disk key
  // holds it, and printing a large kernel again costs tens of
  // microseconds. Empty: the Jit prints it.
  std::string_view text;
  // The quick tier (the CPU's): the module is not optimised, and its code
  // is generated at LLVM's lowest level (its fast instruction selection
  // and register allocation): about a tenth of the full tier's compile
  // time for a one-loop kernel, its loops neither vectorised nor unrolled.
  // A Jit that holds the full tier's code for the kernel (in memory or on
  // disk) returns that instead (CpuCode::quick says which).
  bool quick = false;
  // The most threads the compile runs on (the CPU's Jit, which deals a
  // kernel's tasks into groups compiled side by side); 0: the Jit's own
  // count (the cores, at most 8).
  int threads = 0;
};

}  // namespace grove::llvm_backend
