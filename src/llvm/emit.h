// src/llvm/emit.h — the one LLVM code generator's internal interface, for
// the targets that drive it: the CPU's Jit (src/llvm_cpu/jit.cpp) and the
// CUDA backend's PTX compiler (src/cuda/ptx.cpp). Only their translation
// units include it; it names LLVM types by declaration only.
//
// A target says, through its TargetHooks, only what it must decide:
//   - the CPU's task functions take the task ABI of src/llvm_cpu/jit.h
//     (buffers and arguments through arrays, iterations [lo, hi) of a
//     parallel loop, a count function per parallel task);
//   - an NVPTX task is a `kernel` entry point taking (context, trees...,
//     arguments...) as parameters (trees in TaskCode::trees order, each
//     argument as the 64-bit pattern of its compute type) whose parallel
//     loop is grid-stride over the whole count, with thread and block
//     indices from NVVM's special registers; math functions are
//     libdevice's (__nv_*), linked in before optimisation.
// Everything else — arithmetic, tree memory and its atomics (`monotonic`:
// relaxed), the sparse runtime (which arrives as IR), print and assert
// records in the context buffer, debug-mode early returns — is the same
// code (Halide's CodeGen_LLVM and its targets are the model).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "llvm/codegen.h"

namespace llvm {
class Function;
class FunctionType;
class IRBuilderBase;
class LLVMContext;
class Module;
class TargetMachine;
class Value;
}  // namespace llvm

namespace grove::llvm_backend {

// Where a task function finds its buffers and arguments, as a target's
// hooks bind them when the function begins. A buffer the hooks leave unset
// is loaded from `buffers` (buffers[0] the context, buffers[i] the tree of
// buffer index i) in the entry block when first used.
struct Bindings {
  llvm::Value* buffers = nullptr;  // the CPU's array of buffers
  llvm::Value* args = nullptr;     // the CPU's array of argument bit patterns
  llvm::Value* context = nullptr;  // the context buffer's first word
  std::map<TreeKey, llvm::Value*> trees;
};

// A parallel loop's iterations in this function: k from `first` while
// k < `last`, by `stride`; `strided` (a grid-stride loop) counts k in 64
// bits and makes the index begin + trunc(k).
struct ParallelBounds {
  llvm::Value* first = nullptr;
  llvm::Value* last = nullptr;
  llvm::Value* stride = nullptr;
  bool strided = false;
};

class TargetHooks {
 public:
  virtual ~TargetHooks() = default;
  // The task function's symbol for task `index` of `kernel`.
  virtual std::string entry_name(const std::string& kernel, size_t index, ir::TaskKind kind) const = 0;
  // The task function's type, for a task with `trees` tree buffers and a
  // kernel of `args` arguments.
  virtual llvm::FunctionType* task_type(llvm::LLVMContext& c, size_t trees, size_t args) const = 0;
  // The function `f` was made for a task (NVPTX: marks it a kernel entry).
  virtual void task_made(llvm::Module& m, llvm::Function& f) const = 0;
  // Binds `f`'s parameters; `buffer_index` maps a tree to its buffer index
  // (1, 2, ...).
  virtual void bind(llvm::Function& f, const std::map<TreeKey, uint32_t>& buffer_index, Bindings& out) const = 0;
  // Argument `index`'s 64-bit pattern, in `f`'s entry block or where `b` is.
  virtual llvm::Value* arg_bits(llvm::IRBuilderBase& b, llvm::Function& f, const Bindings& bound, size_t trees,
                                int index) const = 0;
  // Whether a parallel task also gets a count function ("<entry>.count",
  // the statements before its loop, then max(end - begin, 0)).
  virtual bool count_functions() const = 0;
  // The parallel loop's iterations in a task function; `count` emits
  // max(end - begin, 0) where it is called. `axis`: the launch axis the
  // loop runs along (0: x; 1 and 2, y and z, for a loop of a grid nest).
  virtual ParallelBounds parallel_bounds(llvm::IRBuilderBase& b, llvm::Function& f,
                                         const std::function<llvm::Value*()>& count, unsigned axis) const = 0;
  // Threads of a block of a task spread over a 2-D or 3-D launch
  // (ir::grid_nest: the parallel loop and its grid loops, each along an
  // axis of its own, the innermost on x; TaskCode::grid); 0 where grid loops
  // run in order, as any range_for (the CPU).
  virtual uint32_t grid_threads() const { return 0; }
  // A parallel loop's running sums (Reduction::accumulate), each added to
  // its cell with one atomic after the loop: `sum_across_threads` combines
  // `v` (an i32, i64, f32 or f64 sum; integers of either signedness) over
  // the threads that run side by side, and says which of them adds the
  // result ({v, nullptr}: every thread adds its own, as on the CPU, whose
  // threads each run a chunk). `iterated` (an i1, or nullptr for always)
  // says whether this thread took an iteration: one that took none has
  // nothing to add. `iterations_per_sum` is how many iterations
  // a thread of such a loop takes on average: a GPU launch is capped so
  // (rt::TaskPlan::iterations_per_invocation), a thread summing several.
  struct ThreadsSum {
    llvm::Value* sum = nullptr;
    llvm::Value* adds = nullptr;  // i1, or nullptr for every thread
  };
  virtual ThreadsSum sum_across_threads(llvm::IRBuilderBase&, llvm::Function&, llvm::Value* v,
                                        llvm::Value* iterated) const {
    return {v, iterated};
  }
  virtual uint32_t iterations_per_sum() const { return 1; }
  // An add of the same 32-bit value to the same word wherever it runs
  // (ir::is_uniform_counter_add): `add(amount)` emits one atomic add of
  // `amount` and returns the word's old value. Returns this thread's old
  // value (any value where `old_used` is false), threads that run side by
  // side adding with one atomic; nullptr where each thread adds its own
  // (the CPU).
  virtual llvm::Value* counter_add(llvm::IRBuilderBase&, llvm::Function&, llvm::Value* /*v*/, bool /*old_used*/,
                                   const std::function<llvm::Value*(llvm::Value* amount)>& /*add*/) const {
    return nullptr;
  }
  // Whether the sparse runtime's tasks are named by their content (and made
  // once for every kernel that has them: the CPU's Jit keeps their objects).
  virtual bool shares_runtime_tasks() const { return false; }
  // The symbol of C math function `name` ("sinf", "pow", ...).
  virtual std::string math_function(const std::string& name) const = 0;
  // Whether LLVM's frem computes C's fmod exactly here (else fmod is called).
  virtual bool exact_frem() const = 0;
  // How many adjacent 32-bit words one compare-and-swap may cover natively
  // (1, 2 or 4): adjacent f32 atomic adds (a vector's components, a cell's
  // fields) then become one compare-and-swap loop over the group where it
  // is aligned to its size.
  virtual unsigned cas_words() const = 0;
};

struct Emitted {
  std::vector<TaskCode> tasks;
  std::vector<rt::MessagePlan> messages;  // ids 0, 1, ...
};

// Emits `kernel` (stage lowered) into `module`, whose triple and data
// layout are set, and verifies it; raises InternalError for a statement the
// generator does not handle.
Emitted emit_kernel(const ir::Kernel& kernel, const CodegenOptions& options, const TargetHooks& target,
                    llvm::Module& module);

// LLVM's -O3 pipeline for `machine`'s target (the CPU's vector width, or
// NVPTX with NVVM's reflection and address-space inference). With
// `one_thread`, atomics first become plain loads and stores (LLVM's
// LowerAtomic): code that only one thread ever runs (Jit's one_thread).
// `quick`: LLVM's -O0 pipeline instead (CodegenOptions::quick), which
// still lowers the atomics and instruments for ThreadSanitizer.
void optimize(llvm::Module& module, llvm::TargetMachine& machine, bool one_thread = false, bool quick = false);

// The module as LLVM IR text.
std::string to_text(const llvm::Module& module);

}  // namespace grove::llvm_backend
