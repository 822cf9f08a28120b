// src/spirv/codegen_internal.h — the emitter of one task's module, shared by
// codegen.cpp (statements, control flow, memory, messages) and
// codegen_arith.cpp (types, constants, arithmetic and conversions).
#pragma once

#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "spirv/codegen.h"
#include "spirv/module.h"

namespace grove::spirv::detail {

// Iterations per invocation of a task that accumulates reductions in registers.
inline constexpr uint32_t kReductionIterations = 16;

class TaskEmitter {
 public:
  TaskEmitter(const ir::Kernel& kernel, const ir::SNodeForest& forest, const CodegenOptions& options,
              KernelModules& out);
  // Emits the module of `task` (the index-th task of the kernel).
  TaskModule emit(const ir::Stmt* task, size_t index);

 private:
  // ---- types and constants (codegen_arith.cpp) ----
  // The SPIR-V type holding values of `t`: bool for u1, u32 for every integer
  // of 32 bits or fewer (narrow ones canonical: signed sign-extended,
  // unsigned zero-extended), u64 for i64/u64, f32, f64.
  Id type_of(DataType t);
  Id u32_type() { return m_.type_uint(32); }
  Id u32c(uint32_t v) { return m_.constant_u32(v); }
  // A constant of `t` from an IR bit pattern (truncated to t's width).
  Id constant(DataType t, uint64_t bits);
  Id zero(DataType t) { return constant(t, 0); }
  Id one(DataType t);  // the value 1 (1.0 for floats)

  // ---- arithmetic (codegen_arith.cpp); operands are in the types named ----
  Id cast(Id v, DataType from, DataType to);
  Id wrap(Id v, DataType t);  // a 32-bit result back to t's canonical form
  Id unary(ir::UnaryOp op, DataType t, Id x);           // bool for logic_not, else t
  Id bit_count(ir::UnaryOp op, DataType t, Id x);       // popcnt, clz, ctz of an integer
  Id binary(ir::BinaryOp op, DataType t, Id a, Id b);   // binary_result_type(op, t, t)
  Id compare(ir::BinaryOp op, DataType t, Id a, Id b);  // bool
  Id opaque_zero(Id v, DataType t);
  void begin_task_function(Id fn, const std::string& name);  // with what every function starts with
  // GLSL.std.450's f32 math: what legalize left to the device (sqrt, pow of
  // a positive base, sin, cos and tan of |x| > 8192).
  Id float_math(GLSLstd450 op, DataType t, std::vector<Id> args);
  // Float arithmetic decorated NoContraction (never fused into an FMA).
  Id float_op(spv::Op op, Id a, Id b);
  Id op2(spv::Op op, Id a, Id b) { return m_.binary(op, a, b); }
  Id logical_not(Id b) { return m_.unary(spv::Op::OpLogicalNot, b); }
  // 64-bit values <-> their two words (low first).
  Id join_words(Id lo, Id hi, DataType t);
  std::pair<Id, Id> split_words(Id v);

  // ---- statements (codegen.cpp) ----
  void emit_block(const ir::Block* block);
  void emit_stmt(const ir::Stmt* s);
  void emit_if(const ir::Stmt* s);
  void emit_while(const ir::Stmt* s);
  void emit_serial_range_for(const ir::Stmt* s);
  void emit_parallel_loop(const ir::Stmt* s);
  // Grid loops (codegen.h): the axes of the nest, outermost (the parallel
  // loop) first, each with its group size and whether a dispatch's base
  // along it is added (it may need more than 65535 groups).
  struct GridLoop {
    const ir::Stmt* loop;
    uint32_t local_size;
    bool based;
  };
  std::vector<GridLoop> grid_;
  void find_grid(TaskModule& tm);
  void emit_grid_axis(size_t a);
  void emit_point(const ir::Block* body);
  void emit_assert_check();  // debug mode: return at once if an assertion already failed
  Id emit_arg(const ir::Stmt* s);
  Id emit_tree_load(const ir::Stmt* s);
  void emit_tree_store(const ir::Stmt* s);
  Id emit_tree_atomic(const ir::Stmt* s);
  // The atomic read-modify-write itself (native, or a compare-and-swap loop).
  Id atomic_value(ir::AtomicOp op, DataType t, const TreeKey& tree, Id address, Id v);
  // An atomic add of the subgroup's sum of `v`, by one elected invocation.
  void add_once_per_subgroup(DataType t, const TreeKey& tree, Id address, Id v);
  // Whether sums of `t` go through add_once_per_subgroup: with subgroup
  // arithmetic, for 32-bit types (64-bit subgroup operations are optional
  // in Vulkan; those sums take one atomic per invocation).
  bool subgroup_sum(DataType t) const { return options_.features.subgroup_arithmetic && bit_width(t) == 32; }
  Id emit_tree_cas(const ir::Stmt* s);
  Id emit_subgroup(const ir::Stmt* s);
  // The back-edge of a loop: a branch to `header`, or with a loop limit
  // (CodegenOptions::max_loop_iterations) a do-while style test that leaves
  // for `merge` once the invocation's back-edges reach it. after_loop() (at
  // the start of the merge block) then reports it; the invocation goes on.
  void loop_back_edge(Id header, Id merge);
  void after_loop();
  // A task with a stop (a failed assertion's, legalize) runs inside a
  // one-pass loop: the stop breaks out of the loops around it, one at a
  // time (stop_after_loop() after each loop it was in), instead of
  // returning (see begin_stoppable_body; end_once closes it).
  void begin_stoppable_body();
  // A loop that runs its body once, to leave with a break (its merge); with
  // `continue_leaves`, a `continue` in it leaves it too.
  void begin_once(bool continue_leaves);
  void end_once();
  void stop_after_loop();
  Id stopped_ = 0;  // Function bool variable: a stop ran (0 in a task without one)
  uint32_t loop_limit_message();  // the kernel's message index for it (made on first use)
  void report_loop_limit();       // where the task ends: the report, if the count reached the limit
  void claim_error_record(uint32_t message);
  // Push-constant word k (declaring the block on first use).
  Id push_word(uint32_t k);
  // The id a record of message `number` carries: the launch's message base
  // (the push-constant word after the arguments) plus the number (the
  // loop-limit record, which the emitter writes itself).
  Id message_id(uint32_t number);
  // A compare-and-swap loop on a word (32-bit) or a u64 (64-bit) applying
  // `op` to the float value there; yields the old value as t.
  Id float_atomic_loop(ir::AtomicOp op, DataType t, Id pointer, Id value);

  Id value(const ir::Stmt* s);
  Id value_as(const ir::Stmt* s, DataType t);

  // ---- resources (codegen.cpp) ----
  struct TreeBinding {
    uint32_t binding = 0;
    Id words = 0;     // u32 array
    Id floats = 0;    // f32 array (OpAtomicFAddEXT)
    Id doubles = 0;   // u64 array (64-bit atomics)
  };
  Id buffer_variable(Id element, uint32_t stride, uint32_t binding, const std::string& name);
  Id word_pointer(const TreeKey& tree, Id address);   // u32 word `address` of a tree
  Id float_pointer(const TreeKey& tree, Id address);  // the same word as an f32
  Id u64_pointer(const TreeKey& tree, Id address);    // the 64-bit value at even word `address`
  std::string buffer_name(const TreeKey& key) const;
  Id context_pointer(Id word);               // a word of the context buffer
  Id context_at(uint32_t word) { return context_pointer(u32c(word)); }
  Id global_invocation(uint32_t axis);
  Id global_invocation_x();
  Id num_workgroups_x();
  Id num_workgroups(uint32_t axis);

  const ir::Kernel& kernel_;
  const ir::SNodeForest& forest_;
  const CodegenOptions& options_;
  KernelModules& out_;
  Module m_;
  std::string what_;  // "task N ('label') of kernel 'k'", for internal errors
  std::map<TreeKey, TreeBinding> trees_;
  Id context_ = 0;
  Id args_ = 0;
  std::unordered_map<const ir::Stmt*, Id> values_;
  std::unordered_map<const ir::Stmt*, Id> variables_;  // allocas
  std::unordered_map<const ir::Stmt*, Id> loop_index_;
  struct LoopTarget {
    Id merge;
    Id continue_target;
    // A one-pass loop's (begin_once): its header and its continue block,
    // which nothing reaches.
    Id header = 0;
    Id unreached = 0;
  };
  std::vector<LoopTarget> loops_;
  const ir::Stmt* parallel_loop_ = nullptr;
  int64_t static_iterations_ = -1;  // the parallel loop's constant count, or -1
  // Reductions of a parallel task (tree_atomics marked
  // Reduction::accumulate by ir::mark_reductions): each invocation sums into
  // a Function variable, and adds the sum once after its loop.
  struct Accumulator {
    TreeKey tree;
    uint32_t address;
    DataType type;
    Id var;
  };
  std::vector<Accumulator> accumulators_;
  std::unordered_map<const ir::Stmt*, size_t> reductions_;  // atomic -> accumulator
  void find_reductions(const ir::Stmt* loop);
  // Whether a parallel task's count is found on the device by a count entry
  // point (see TaskModule::count_entry_point), and that entry point.
  bool counts_on_device(const ir::Stmt* task);
  Id iteration_count(Id begin, Id end);
  void emit_count_entry(const ir::Stmt* task, TaskModule& tm);
  void declare_float_controls(Id entry, TaskModule& tm);  // sets tm's float-control flags
  static bool has_continue(const ir::Stmt* loop);
  bool count_on_device_ = false;
  bool flat_grid_ = false;  // count on the device, one iteration per invocation
  bool subgroup_operations_ = false;  // add_once_per_subgroup or emit_subgroup was used
  void flush_accumulators();
  Id back_edges_ = 0;  // Function variable counting loop back-edges (with a loop limit)
  // The context's zero word, loaded once at each function's entry where
  // CodegenOptions::opaque_float_zero asks for it (else 0).
  Id zero_word_ = 0;
  int64_t loop_limit_message_ = -1;
  bool counted_loops_ = false;  // the task has a loop whose passes back_edges_ counts
  size_t task_index_ = 0;
  std::string task_label_;
};

}  // namespace grove::spirv::detail
