// src/ir/passes/offload.h — splits a typed kernel into tasks and schedules list generation and gc.
#pragma once

#include <vector>

#include "ir/ir.h"

namespace grove::ir {

// An SNode of one tree instance: of the kernel's tree parameter
// `tree_param`, or of its tree's own instance (-1).
struct BoundSNode {
  int snode = -1;
  int tree_param = -1;
  auto operator<=>(const BoundSNode&) const = default;
};

// What the launcher needs to know of each task (the scheduler's input).
struct TaskInfo {
  TaskKind kind = TaskKind::serial;
  int snode = -1;             // listgen/clear_list: the list's SNode; gc/gc_finish: the pool's; struct_for: its
  int tree_param = -1;        // the instance `snode` is of (the Task statement's tree_param)
  std::vector<BoundSNode> modifies;  // SNodes whose activity the task may change
};

struct OffloadOptions {
  // Where values that live across tasks are kept (a scratch buffer that is
  // not an SNode tree): tree id, first free word and most words the kernel
  // may use (a grove::Error past that).
  int scratch_tree = -1;
  int64_t scratch_base = 0;
  int64_t scratch_words = 0;
  // Cells of a container one iteration of a listgen takes (the target's
  // choice; SparseRuntime::set_cells_per_iteration).
  uint32_t cells_per_iteration = 1;
  // SparseRuntime::set_least_iterations (0: runs of cells_per_iteration).
  uint32_t least_iterations = 0;
};

struct OffloadResult {
  std::vector<TaskInfo> tasks;  // one per task, in order
  int64_t scratch_words_used = 0;
};

// Typed -> offloaded. Top-level range_for and struct_for become parallel
// tasks, the statements between them serial tasks; each struct_for over an
// SNode is preceded by clear_list + listgen for every level of its path, and
// a kernel that deactivates sparse cells ends with gc and gc_finish tasks for
// the pools of the trees it deactivates cells of. Values used across
// tasks are recomputed when pure, kept in the scratch buffer otherwise.
// Needs kernel.forest.
OffloadResult offload(Kernel& kernel, const OffloadOptions& options);

// Whether a field access inside `struct_for` touches exactly the cell the loop
// visits (a field placed in the loop's SNode, indexed by the loop's indices in
// order, with the same offset; not for dynamic SNodes): such a cell is active, so the access neither
// activates nor needs a lookup (lower_access uses the address the loop has).
bool is_own_cell_access(const SNodeForest& forest, const FieldTable& fields, const Stmt* access,
                        const Stmt* struct_for);
// Whether a field access inside `struct_for` at the loop's own indices (as
// above) reaches a cell that is active whenever the loop's cell is: a field
// of the same index space whose path leaves the loop's path only below its
// last sparse node that both share, through dense nodes alone (a field
// placed in a dense block beside the loop's, under the same pointer). A
// write there activates nothing, so the lists stay as they are.
bool is_within_own_cells(const SNodeForest& forest, const FieldTable& fields, const Stmt* access,
                         const Stmt* struct_for);

}  // namespace grove::ir
