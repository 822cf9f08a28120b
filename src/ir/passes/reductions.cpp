// src/ir/passes/reductions.cpp — Taichi's `total[None] += x` in a parallel
// loop: every iteration adds to one cell and nobody reads the old value, so
// the adds may be summed first (in registers, across a subgroup) and the
// cell changed by one atomic per group. What may be combined is decided
// here, once for every code generator; how is theirs.
#include "ir/passes/reductions.h"

#include <map>
#include <tuple>
#include <unordered_set>

#include "ir/snode.h"

namespace grove::ir {

namespace {

// A cell of one instance: (tree, tree parameter, word address).
using CellKey = std::tuple<int, int, uint64_t>;

CellKey key_of(const Stmt* s) { return {s->tree(), s->tree_param(), s->address()->bits()}; }

bool is_candidate(const Stmt* s, const std::unordered_set<const Stmt*>& used, const SNodeForest* forest) {
  if (s->kind() != StmtKind::TreeAtomic || s->atomic_op() != AtomicOp::add || used.count(s) != 0) return false;
  if (!s->address()->is_const()) return false;
  const int tree = s->tree();
  const uint64_t data_start =
      forest != nullptr && tree >= 0 && tree < forest->num_trees() ? static_cast<uint64_t>(forest->tree(tree).root_offset)
                                                                   : 0;
  return s->address()->bits() >= data_start;
}

bool mark_task(Stmt* task, const SNodeForest* forest) {
  std::unordered_set<const Stmt*> used;
  walk(task->body(), [&](Stmt* s) {
    for (Stmt* op : s->operands()) used.insert(op);
  });
  std::unordered_set<const Stmt*> candidates;
  std::map<CellKey, int> others;  // constant cells touched in another way
  walk(task->body(), [&](Stmt* s) {
    if (!is_tree_access(s->kind()) || !s->address()->is_const()) return;
    if (is_candidate(s, used, forest)) {
      candidates.insert(s);
    } else {
      ++others[key_of(s)];
    }
  });
  bool changed = false;
  walk(task->body(), [&](Stmt* s) {
    if (s->kind() != StmtKind::TreeAtomic) return;
    Reduction r = Reduction::none;
    if (candidates.count(s)) r = others.count(key_of(s)) ? Reduction::one_cell : Reduction::accumulate;
    changed |= s->reduction() != r;
    s->set_reduction(r);
  });
  return changed;
}

}  // namespace

bool mark_reductions(Kernel& kernel) {
  bool changed = false;
  for (size_t n = 0; n < kernel.body()->size(); ++n) {
    Stmt* task = kernel.body()->at(n);
    if (task->kind() != StmtKind::Task) continue;
    const TaskKind k = task->task_kind();
    if (k != TaskKind::range_for && k != TaskKind::struct_for) continue;
    changed |= mark_task(task, kernel.forest);
  }
  return changed;
}

AccumulatedCells accumulated_cells(const Stmt* loop) {
  AccumulatedCells out;
  walk(loop->body(), [&](Stmt* s) {
    if (s->kind() != StmtKind::TreeAtomic || s->reduction() != Reduction::accumulate) return;
    const auto address = static_cast<uint32_t>(s->address()->bits());
    size_t n = 0;
    while (n < out.cells.size() && !(out.cells[n].tree == s->tree() && out.cells[n].tree_param == s->tree_param() &&
                                     out.cells[n].address == address && out.cells[n].type == s->type()))
      ++n;
    if (n == out.cells.size()) out.cells.push_back({s->tree(), s->tree_param(), address, s->type()});
    out.cell_of[s] = n;
  });
  return out;
}

bool is_uniform_counter_add(const Stmt* atomic) {
  if (atomic->kind() != StmtKind::TreeAtomic || atomic->atomic_op() != AtomicOp::add ||
      atomic->reduction() != Reduction::none)
    return false;
  const DataType t = atomic->type();
  return (t == DataType::i32 || t == DataType::u32) && atomic->address()->is_const() && atomic->value()->is_const();
}

}  // namespace grove::ir
