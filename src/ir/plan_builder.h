// src/ir/plan_builder.h — the backend-neutral part of a kernel's plan, read
// off its lowered IR: per task its kind, SNode, what it may modify, how its
// iteration count is found at launch; the kernel's arguments and tree slots.
// A code generator then adds its code blobs (rt::KernelPlan, runtime/core/plan.h).
#pragma once

#include <vector>

#include "ir/ir.h"
#include "ir/passes/offload.h"
#include "runtime/core/plan.h"

namespace grove::ir {

struct PlanOptions {
  int scratch_tree = -1;       // the tree id of the program's scratch buffer
  int64_t scratch_words = 0;   // what this kernel keeps there
};

// `kernel` is at Stage::lowered; `tasks` is what offload reported for it
// (one per task statement, in order). Tree slots are the tree ids the
// kernel's statements name, in increasing order.
rt::KernelPlan plan_kernel(const Kernel& kernel, const std::vector<TaskInfo>& tasks, const PlanOptions& options);

// A launch-time expression for an integer value made of constants,
// arguments, casts and + - * / min max; unknown (root < 0) for anything
// else (a value read from memory, a float).
rt::CountExpr count_expr(const Stmt* value);

// Whether both bounds of `loop` are known on the host at launch
// (count_expr), so that its iteration count needs no code of the task's.
bool counted_on_host(const Stmt* loop);

// The loops a parallel task's launch may spread over a grid of invocations:
// its parallel loop, then each grid loop (Stmt::grid) standing last in the
// one before, at most `most` in all, as long as every count is known on the
// host (count_expr). A single loop: the task has no grid.
std::vector<const Stmt*> grid_nest(const Stmt* parallel_loop, size_t most = 3);

// A range_for's iteration count when both its bounds are constants, else -1.
int64_t constant_iterations(const Stmt* loop);

// How a parallel task's launch spreads over a grid in groups of
// `invocations`: the loops (grid_nest, outermost first), their constant
// counts (-1: known at launch), the group size along each
// (rt::grid_group_sizes), and the inner axes as rt::TaskPlan::grid holds
// them. A nest of one loop: no grid.
struct GridLayout {
  std::vector<const Stmt*> nest;
  std::vector<int64_t> counts;
  std::vector<uint32_t> sizes;
  std::vector<rt::GridAxis> axes;
};
GridLayout grid_layout(const Stmt* parallel_loop, uint32_t invocations);

// The slot of tree `tree` through tree parameter `tree_param` (-1: the
// tree's own instance) in `plan`, which must have one.
int slot_of(const rt::KernelPlan& plan, int tree, int tree_param);

}  // namespace grove::ir
